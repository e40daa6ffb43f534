"""A failed command leaves no plausible output (issue #22.8): ``rescue report`` validates every input before it
makes a file and moves its files into ``--out`` only once the whole report is made, so a report that fails adds
nothing (and marks an earlier report's files as not its own); ``rescue rescore`` and ``rescue report`` on a run
directory a running ``rescue run`` holds say it is locked, not that results.json is missing.
"""

from __future__ import annotations

import json
import threading

import pytest
from _cli import invoke_main
from _engine_support import held_script, itp_instances, oracle_answers, oracle_script, start_slow_run

from rescue.testing.openai_server import serve

REPORT_FILES = ("leaderboard.md", "leaderboard.tex", "leaderboard.csv", "report.html", "groups.csv")


def _demo_lines() -> list[dict]:
    from rescue.data.reading import demo_path

    return [json.loads(line) for line in demo_path().read_text(encoding="utf-8").splitlines() if line.strip()]


def _bad_data(tmp_path, kind: str):
    path = tmp_path / f"{kind}.jsonl"
    if kind == "missing":
        return tmp_path / "nowhere.jsonl"
    if kind == "empty":
        path.write_text("")
    elif kind == "invalid_json":
        path.write_text('{"sample_id": "x", "rows": [\n')
    elif kind == "not_utf8":
        path.write_bytes(b'{"sample_id": "s\xe9ance"}\n')
    else:
        samples = _demo_lines()
        row = samples[0]["rows"][0]
        if kind == "nan_time":
            row["start_time"] = float("nan")
        elif kind == "half_intensity":
            row["internal_emotion"] = [{"person": row["primary_speaker"], "emotion_description": "x", "intensity": 7.5}]
        elif kind == "no_rows":
            del samples[0]["rows"]
        path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    return path


BAD = ["invalid_json", "empty", "missing", "not_utf8", "nan_time", "half_intensity", "no_rows"]


@pytest.mark.parametrize("kind", BAD)
def test_a_report_on_bad_data_writes_nothing(tmp_path, itp_run_dir, kind):
    out = tmp_path / "X"
    result = invoke_main(["report", str(itp_run_dir), "--data", str(_bad_data(tmp_path, kind)), "--out", str(out),
                          "--bootstrap", "20"])
    assert result.exit_code == 2, result.output
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]


@pytest.mark.parametrize("kind", ["invalid_json", "nan_time"])
def test_a_failed_report_over_an_earlier_one_says_its_files_are_not_this_commands(tmp_path, itp_run_dir, kind):
    out = tmp_path / "X"
    good = invoke_main(["report", str(itp_run_dir), "--out", str(out), "--bootstrap", "20", "--no-figures"])
    assert good.exit_code == 0, good.output
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.is_file()}
    bad = invoke_main(["report", str(itp_run_dir), "--data", str(_bad_data(tmp_path, kind)), "--out", str(out),
                       "--bootstrap", "20"])
    assert bad.exit_code == 2
    after = {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.is_file() and p.name != "REPORT-FAILED.txt"}
    assert after == before  # nothing of the failed command, the earlier report untouched ...
    assert "failed and wrote none of its files" in (out / "REPORT-FAILED.txt").read_text()  # ... and marked
    again = invoke_main(["report", str(itp_run_dir), "--out", str(out), "--bootstrap", "20", "--no-figures"])
    assert again.exit_code == 0 and not (out / "REPORT-FAILED.txt").exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".report.")]


def test_a_report_failing_after_it_began_adds_nothing(tmp_path, itp_run_dir):
    out = tmp_path / "X"
    out.mkdir()
    (out / "analyses").write_text("a file where the report wants a folder")
    result = invoke_main(["report", str(itp_run_dir), "--out", str(out), "--bootstrap", "20", "--no-figures"])
    assert result.exit_code == 2 and "analyses" in result.output and "Traceback" not in result.output
    assert not any((out / name).exists() for name in REPORT_FILES)
    assert not [p for p in out.iterdir() if p.name.startswith(".report.")]


@pytest.mark.slow
def test_rescore_and_report_on_a_directory_a_run_is_writing_say_it_is_locked(tmp_path):
    instances = itp_instances(1)
    out = tmp_path / "run"
    release = threading.Event()
    # The run's answers wait until both commands are done: on a loaded machine, starting the report in this
    # process could take longer than the run (0.5 s an answer) took to finish.
    with serve(held_script(oracle_script(oracle_answers("itp", instances)), release)) as server:
        first = start_slow_run(server, out)
        try:
            rescore = invoke_main(["rescore", str(out)])
            report = invoke_main(["report", str(out), "--out", str(tmp_path / "R"), "--bootstrap", "20"])
        finally:
            release.set()
        first.communicate(timeout=120)
    for result in (rescore, report):
        assert result.exit_code == 2, result.output
        assert "locked by a running run" in result.output and f"process {first.pid}" in result.output
        assert "missing" not in result.output
    assert not (tmp_path / "R").exists()
    assert invoke_main(["rescore", str(out)]).exit_code == 0  # once the run is done
