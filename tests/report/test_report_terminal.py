"""What rescue prints in an 80-column terminal: the run's leaderboard and `rescue stats`' Table 3."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from rescue.cli import app
from rescue.data.stats import TABLE3_COLUMNS
from rescue.runs.results import RunResults
from rescue.report.summary import print_run_summary, terminal_units


def _closed_results(models: int = 1) -> RunResults:
    metrics = {"itp": {"all": {"f1": 0.6667, "instances": 58, "failures": 2}}}
    return RunResults.model_validate({"config": {"mode": "dialogue"},
                                      "models": {f"baseline/m{k}": metrics for k in range(models)}})


def _printed(results: RunResults, out: str) -> list[str]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, force_terminal=False, color_system=None)
    print_run_summary(console, results, out)
    return buffer.getvalue().splitlines()


def test_one_column_leaderboard_has_a_one_line_title_and_no_judge_units():
    lines = _printed(_closed_results(), "runs/x")
    assert lines[0] == "RESCUE-Bench, dialogue mode, pooled (%): runs/x"
    assert not any("judge" in line for line in lines)


def test_units_name_only_the_columns_shown():
    results = RunResults.model_validate(
        {"config": {}, "models": {"m": {"er": {"all": {"s_er": 4.1}}, "vp": {"all": {"bertscore_f1": 0.85}}}}})
    assert terminal_units(results) == "ER judge 1-5; BERTScore F1 0-1"


def test_the_next_command_is_never_broken_at_80_columns():
    out = "runs/" + "a_rather_long_run_directory_name_" * 2 + "end"
    lines = _printed(_closed_results(), out)
    command = f"rescue report {out} --out {out}/report"
    assert len(command) > 80
    assert any(line.strip() == command for line in lines)


def test_stats_table3_headers_are_whole_at_80_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(app, ["stats"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    table = result.output.split("couple:", 1)[0]
    assert max(len(line) for line in table.splitlines()) <= 80
    for _, title, _ in TABLE3_COLUMNS:
        assert title in table, title


def test_report_prints_progress(tmp_path: Path):
    run = tmp_path / "run"
    done = CliRunner().invoke(app, ["run", "--out", str(run), "--model", "baseline/majority", "--tasks", "itp",
                                    "--no-bertscore", "--quiet"])
    assert done.exit_code == 0, done.output
    result = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "r"), "--bootstrap", "20",
                                      "--no-html", "--no-figures"])
    assert result.exit_code == 0, result.output
    for step in ("reading 1 run directory", "leaderboard:", "analyses and figures", "done:"):
        assert step in result.output, step
