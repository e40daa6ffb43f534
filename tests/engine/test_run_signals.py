"""SIGTERM (``timeout``, a scheduler) ends a run as Ctrl-C does, and both leave results.json behind (issue #33,
item 8): a real ``rescue run`` child process against the scripted server, whose answers are held once a few
are in, is signalled; the run writes results.json marked incomplete naming the signal, keeps every answer it
received (in the cache and in predictions.jsonl), exits 143 (SIGTERM) or 130 (Ctrl-C), and the rerun resumes.
A second signal stops at once; a signal while the judge grades stops the grading the same way."""

from __future__ import annotations

import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _cli import invoke_main
from _engine_support import held_script, itp_instances, oracle_answers, oracle_script, read_jsonl

from rescue.data.loading import load_samples
from rescue.tasks import get_task
from rescue.testing.openai_server import serve

KEY = {"OPENAI_API_KEY": "test-key-0123456789"}


def _saved_answers(out: Path) -> int:
    try:
        with sqlite3.connect(f"file:{out / 'cache.sqlite'}?mode=ro", uri=True, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "rescue", *args], env={**os.environ, **KEY},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(process: subprocess.Popen[str], ready) -> None:
    deadline = time.monotonic() + 120
    while not ready():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)


def _run_args(server, out: Path, *more: str) -> list[str]:
    return ["run", "--model", "m", "--base-url", server.base_url, "--out", str(out), "--quiet", "--no-bertscore",
            "--concurrency", "2", *more]


def _signalled_run(tmp_path: Path, signals: list[int], check) -> None:
    """An ITP run signalled once 4 answers are saved; ``check(finished process, its folder)``, then the rerun
    against the same server (released) must resume from the cache and finish."""
    instances = itp_instances()
    out = tmp_path / "run"
    release = threading.Event()
    with serve(held_script(oracle_script(oracle_answers("itp", instances)), release, after=4)) as server:
        process = _start(_run_args(server, out, "--tasks", "itp"))
        _wait_for(process, lambda: _saved_answers(out) >= 4 and server.request_count >= 6)
        for signum in signals:  # back to back: the second comes while the run is stopping
            process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=120)
        release.set()
        check(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), out)
        saved, before = _saved_answers(out), server.request_count
        again = invoke_main(_run_args(server, out, "--tasks", "itp"), env=KEY)
        assert again.exit_code == 0, again.output
        assert f"{saved} answer(s) came from the cache" in again.output
        assert server.request_count - before == len(instances) - saved  # nothing asked twice
    assert json.loads((out / "results.json").read_text())["run"]["complete"] is True


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code", "said"), [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                                      (signal.SIGINT, 130, "interrupted")])
def test_a_signal_writes_results_marked_incomplete_and_loses_no_answer(tmp_path, signum, code, said):
    def check(done, out):
        assert done.returncode == code, done.stderr
        assert f"{said}: {_saved_answers(out)} new answer(s) of this run are saved" in done.stderr
        assert "Traceback" not in done.stderr
        assert "is written and marked incomplete" in done.stderr and "rerun the same command to resume" in done.stderr
        results = json.loads((out / "results.json").read_text())
        assert results["run"]["complete"] is False and results["run"]["stopped"].startswith(said)
        records = read_jsonl(out / "predictions.jsonl")
        assert len(records) == len(itp_instances())
        answered = [r for r in records if r["status"] != "request_error"]
        # Every answer received is in the results as in the cache; the rest were not requested: the rerun asks them.
        assert len(answered) == _saved_answers(out) >= 4
        assert all(said in r["error"] for r in records if r["status"] == "request_error")
        log = read_jsonl(out / "run.log")
        assert any(e["event"] == "stopping" for e in log) and log[-1]["event"] == "done"

    _signalled_run(tmp_path, [signum], check)


@pytest.mark.slow
def test_a_second_sigterm_stops_at_once_and_the_rerun_still_resumes(tmp_path):
    def check(done, out):
        assert done.returncode == 143, done.stderr
        assert f"terminated (SIGTERM): {_saved_answers(out)} new answer(s)" in done.stderr
        assert "Traceback" not in done.stderr

    _signalled_run(tmp_path, [signal.SIGTERM, signal.SIGTERM], check)


@pytest.mark.slow
def test_sigterm_while_the_judge_grades_keeps_every_prediction(tmp_path):
    samples = load_samples(None)[:1]
    data = tmp_path / "one.jsonl"
    data.write_text(samples[0].model_dump_json() + "\n", encoding="utf-8")
    instances = get_task("er").build(samples)
    release = threading.Event()
    answer = oracle_script(oracle_answers("er", instances))
    out = tmp_path / "run"
    judged = itertools.count()

    def judge_or_model(body):
        if body["model"] == "j":
            next(judged)
        return answer(body)

    with serve(held_script(judge_or_model, release, after=0, hold=lambda body: body["model"] == "j")) as server:
        process = _start(_run_args(server, out, "--tasks", "er", "--data", str(data), "--judge", "j"))
        _wait_for(process, lambda: _saved_answers(out) >= len(instances) and server.request_count > len(instances))
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
        release.set()
    assert process.returncode == 143, stderr
    assert "terminated (SIGTERM)" in stderr and "Traceback" not in stderr
    results = json.loads((out / "results.json").read_text())
    assert results["run"]["complete"] is False and results["run"]["stopped"].startswith("terminated (SIGTERM)")
    records = read_jsonl(out / "predictions.jsonl")
    assert len(records) == len(instances) and all(r["status"] == "ok" for r in records)
