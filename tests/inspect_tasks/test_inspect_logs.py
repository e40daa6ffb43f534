"""``rescue report`` and inspect_ai logs where the ``inspect`` extra is missing: run directories report as always
(nothing reaches for inspect_ai), and a ``.eval`` log is refused with the extra named, before any work."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue.cli import app
from rescue.runs.inspect_logs import log_files
from rescue.testing.without import run_without


@pytest.mark.slow
def test_a_eval_log_without_the_extra_names_it(tmp_path: Path):
    log = tmp_path / "2026-01-01_itp.eval"
    log.write_bytes(b"PK\x03\x04 not read without inspect_ai")
    out = tmp_path / "report"
    done = run_without(("inspect_ai",), "report", str(log), "--out", str(out), "--quiet")
    assert done.returncode == 2, done.stderr
    assert f"{log}: an inspect_ai log; reading it needs the 'inspect' extra" in done.stderr
    assert "pip install 'rescue-bench[inspect]'" in done.stderr
    assert not out.exists()


@pytest.mark.slow
def test_run_directories_report_without_inspect_ai(tmp_path: Path):
    run_dir = tmp_path / "run"
    made = CliRunner().invoke(app, ["run", "--out", str(run_dir), "--tasks", "itp", "--limit-samples", "2", "--quiet"])
    assert made.exit_code == 0, made.output
    out = tmp_path / "report"
    done = run_without(("inspect_ai",), "report", str(run_dir), "--out", str(out), "--bootstrap", "0", "--no-html",
                       "--no-figures", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "hidden modules loaded: []" in done.stderr
    assert (out / "leaderboard.csv").is_file()


def test_which_paths_are_inspect_logs(tmp_path: Path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "results.json").write_text("{}", encoding="utf-8")
    (run_dir / "stray.eval").write_bytes(b"")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "b.eval").write_bytes(b"")
    (logs / "a.eval").write_bytes(b"")
    assert log_files(run_dir) == []  # a run directory is read as one, whatever else it holds
    assert log_files(logs) == [logs / "a.eval", logs / "b.eval"]
    assert log_files(logs / "a.eval") == [logs / "a.eval"]
    assert log_files(tmp_path / "missing.eval") == []
