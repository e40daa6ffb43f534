"""What a run directory promises: complete means complete, one writer, one configuration, files that match.

Every test talks to the real scripted HTTP server on 127.0.0.1 or to real files; nothing of ours is mocked.
"""

from __future__ import annotations

import json
import os
import socket

import pytest
from _cli import invoke_main
from _engine_support import held_script, itp_instances, oracle_answers, oracle_script, start_slow_run

from rescue.engine.config import RunError
from rescue.runs.folder import RunDirError, read_run
from rescue.engine.runner import RunConfig, run
from rescue.files import DirectoryLock
from rescue.testing.openai_server import Reply, serve


def _config(tmp_path, base_url, **overrides) -> RunConfig:
    # A request timeout no loaded machine reaches: the tests count requests exactly, and a timeout adds one.
    options = dict(out=str(tmp_path / "run"), models=["test-model"], tasks=["itp"], base_url=base_url,
                   quiet=True, bertscore=False, max_retries=1, timeout=30.0, limit_samples=1)
    options.update(overrides)
    return RunConfig(**options)


def _dead_url() -> str:
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _cli(*args: str, env: dict[str, str | None] | None = None):
    return invoke_main(list(args), env={"OPENAI_API_KEY": "test", **(env or {})})


# --- complete means complete (#10.3, #10.5) ---------------------------------------------------------------


def test_request_errors_are_asked_again_and_the_run_is_complete_only_without_them(tmp_path):
    instances = itp_instances(1)
    with serve(Reply.server_error(500)) as server:
        first = run(_config(tmp_path, server.base_url, max_failures=None))
        assert not first.complete and first.results["run"]["request_errors"] == len(instances)
        asked = server.request_count
        server.script = oracle_script(oracle_answers("itp", instances))
        second = run(_config(tmp_path, server.base_url))  # the plain rerun the advice names
        assert server.request_count == asked + len(instances)  # every failed instance asked again
    assert second.complete and second.results["run"]["request_errors"] == 0
    assert second.results["models"]["test-model"]["itp"]["all"]["accuracy"] == 1.0


def test_a_stop_for_401_reruns_into_the_same_stop_not_a_complete_run(tmp_path):
    with serve(Reply.json({}), api_key="right") as server:
        env = {"OPENAI_API_KEY": "wrong"}
        args = ["run", "--out", str(tmp_path / "run"), "--model", "m", "--base-url", server.base_url,
                "--tasks", "itp", "--limit-samples", "1", "--quiet", "--no-bertscore"]
        assert _cli(*args, env=env).exit_code == 3
        again = _cli(*args, env=env)
    assert again.exit_code == 3
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["run"]["complete"] is False


def test_every_request_failing_is_incomplete_and_names_the_endpoint_at_once(tmp_path):
    url = _dead_url()
    result = _cli("run", "--out", str(tmp_path / "run"), "--model", "m", "--base-url", url, "--tasks", "itp",
                  "--limit-samples", "1", "--quiet", "--no-bertscore", "--max-retries", "1", "--max-failures", "0")
    assert result.exit_code == 3, result.output
    assert "every request failed" in result.output and url in result.output and "connection" in result.output
    # The warning comes while the run works, before the final line.
    assert result.output.index("warning:") < result.output.index("incomplete:")


def test_a_judge_that_fails_every_grade_makes_the_run_incomplete(tmp_path):
    url = _dead_url()
    result = _cli("run", "--out", str(tmp_path / "run"), "--model", "baseline/majority", "--tasks", "er",
                  "--limit-samples", "2", "--quiet", "--no-bertscore", "--judge", "judge-x", "--judge-base-url", url,
                  "--max-retries", "0")
    assert result.exit_code == 3, result.output
    assert "judge judge-x: every grade failed" in result.output and url in result.output


# --- one writer, one configuration (#10.6) ------------------------------------------------------------------


def test_a_locked_run_directory_is_refused_at_once(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    with DirectoryLock(out), pytest.raises(RunError, match="is writing this run directory"):
        run(RunConfig(out=str(out), tasks=["itp"], quiet=True, bertscore=False, limit_samples=1))
    assert not (out / "results.json").exists()


def test_another_configuration_is_refused_unless_overwrite(tmp_path):
    out = str(tmp_path / "run")
    first = run(RunConfig(out=out, tasks=["itp"], quiet=True, bertscore=False, limit_samples=2))
    before = (tmp_path / "run" / "results.json").read_text()
    # Another task grows the run (tests/engine/test_run_growth.py); another rendering is another configuration.
    with pytest.raises(RunError, match=r"another configuration \(context_size: None → 2"):
        run(RunConfig(out=out, tasks=["rpp"], quiet=True, bertscore=False, limit_samples=2, context_size=2))
    assert (tmp_path / "run" / "results.json").read_text() == before  # the finished run is untouched
    # The same configuration resumes, operational options (concurrency, quiet ...) may differ.
    again = run(RunConfig(out=out, tasks=["ITP"], quiet=True, bertscore=False, limit_samples=2, concurrency=3))
    assert again.results["models"] == first.results["models"]
    replaced = run(RunConfig(out=out, tasks=["rpp"], quiet=True, bertscore=False, limit_samples=2, overwrite=True))
    assert set(replaced.results["models"]["baseline/majority"]) >= {"rpp"}
    assert "itp" not in replaced.results["models"]["baseline/majority"]


def test_other_data_is_another_configuration(tmp_path, real_data_path):
    out = str(tmp_path / "run")
    run(RunConfig(out=out, tasks=["itp"], quiet=True, limit_samples=1, data=str(real_data_path)))
    with pytest.raises(RunError, match="data: sha256"):  # the classic: forgetting --data on the rerun
        run(RunConfig(out=out, tasks=["itp"], quiet=True, limit_samples=1))


# --- files that match (#10.7) -------------------------------------------------------------------------------


def test_results_name_their_predictions_and_a_mismatch_is_refused(tmp_path):
    out = tmp_path / "run"
    run(RunConfig(out=str(out), tasks=["itp"], quiet=True, bertscore=False, limit_samples=1))
    results, records = read_run(out)
    assert results.schema_version >= 2 and results.predictions.records == len(records) > 0
    lines = (out / "predictions.jsonl").read_text().splitlines(keepends=True)
    (out / "predictions.jsonl").write_text("".join(lines[:-1]))  # as if another command had written it
    with pytest.raises(RunDirError, match="come from different commands"):
        read_run(out)
    result = _cli("report", str(out), "--out", str(tmp_path / "report"))
    assert result.exit_code == 2 and "different commands" in result.output


def test_stale_temporary_files_are_removed_and_live_ones_kept(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    dead = out / ".predictions.jsonl.999999999.tmp"
    live = out / f".report.html.{os.getppid()}.tmp"  # its writer (our parent) still runs
    dead.write_text("half")
    live.write_text("in progress")
    run(RunConfig(out=str(out), tasks=["itp"], quiet=True, bertscore=False, limit_samples=1))
    assert not dead.exists() and live.exists()
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp") and p != live]


# --- clear errors before any work ---------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    (["--tasks", ""], "--tasks: no task given"),
    (["--tasks", " , "], "--tasks: no task given"),
    (["--judge-scale", "nine"], "--judge-scale 'nine'"),
    (["--model", "local/nope"], "unknown local model"),
    (["--tasks", "er", "--judge", "openai/gpt-4o-mini"], "--judge 'openai/gpt-4o-mini': no API key"),
    (["--sample-choice", "random", "--limit-samples", "1"], "--sample-choice 'random'"),
    # Every retry of a spent budget became an OverflowError (issue #33 item 3).
    (["--budget-retry", "inf"], "--budget-retry inf: a factor above 1 and at most 100"),
    (["--budget-retry", "1e308"], "--budget-retry 1e+308: a factor above 1 and at most 100"),
    (["--budget-retry", "nan"], "--budget-retry nan: a factor above 1"),
    (["--budget-retry", "-1"], "--budget-retry -1.0: a factor above 1"),
])
def test_bad_options_fail_before_any_work(tmp_path, args, message):
    out = tmp_path / "run"
    result = _cli("run", "--out", str(out), "--quiet", "--no-bertscore", *args, env={"OPENAI_API_KEY": ""})
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not out.exists()


def test_judge_key_error_names_the_judge_key_option(tmp_path):
    result = _cli("run", "--out", str(tmp_path / "r"), "--tasks", "er", "--judge", "openai/gpt-4o-mini", "--quiet",
                  env={"OPENAI_API_KEY": ""})
    assert "--judge-api-key-env" in result.output and "--model" not in result.output


@pytest.mark.parametrize("command", ["run", "report"])
def test_out_naming_an_existing_file_is_a_clear_error(tmp_path, command):
    file = tmp_path / "taken"
    file.write_text("mine")
    args = ["run", "--out", str(file), "--quiet", "--no-bertscore"] if command == "run" else \
        ["report", str(tmp_path), "--out", str(file)]
    if command == "report":
        run(RunConfig(out=str(tmp_path), tasks=["itp"], quiet=True, bertscore=False, limit_samples=1))
    result = _cli(*args)
    assert result.exit_code == 2, result.output
    assert "exists and is not a folder" in result.output and file.read_text() == "mine"


def test_version_and_task_names_in_any_case(tmp_path):
    from rescue import __version__

    assert _cli("--version").output.strip() == f"rescue {__version__}"
    result = _cli("run", "--out", str(tmp_path / "r"), "--tasks", "ITP,Rpp", "--quiet", "--no-bertscore",
                  "--limit-samples", "1")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "r" / "results.json").read_text())["config"]["tasks"] == ["itp", "rpp"]


def test_a_resumed_run_says_how_many_answers_came_from_the_cache(tmp_path):
    instances = itp_instances(1)
    with serve(oracle_script(oracle_answers("itp", instances))) as server:
        args = ["run", "--out", str(tmp_path / "run"), "--model", "m", "--base-url", server.base_url, "--tasks",
                "itp", "--limit-samples", "1", "--quiet", "--no-bertscore"]
        assert _cli(*args).exit_code == 0
        again = _cli(*args)
    assert again.exit_code == 0
    assert f"{len(instances)} answer(s) came from the cache, 0 new request(s)" in again.output


@pytest.mark.slow
def test_a_missing_extra_is_named_before_any_work(tmp_path):
    from rescue.testing.without import run_without

    out = tmp_path / "run"
    # As on a machine installed without the 'bertscore' extra: torch cannot be found.
    done = run_without(("torch", "bert_score"), "run", "--out", str(out), "--tasks", "er", "--quiet", timeout=120)
    assert done.returncode == 2, done.stderr
    assert "'bertscore' extra" in done.stderr and "rescue-bench[bertscore]" in done.stderr
    assert "--no-bertscore" in done.stderr and not out.exists()


@pytest.mark.slow
def test_ctrl_c_says_what_is_saved_and_the_rerun_resumes_from_the_cache(tmp_path):
    import signal
    import sqlite3
    import subprocess
    import sys
    import time

    import threading

    instances = itp_instances()
    out = tmp_path / "run"
    release = threading.Event()
    # Four answers, then every request waits until the Ctrl-C has been sent: the run is mid-way when it is
    # interrupted however loaded the machine is (it once finished first and exited 0).
    with serve(held_script(oracle_script(oracle_answers("itp", instances)), release, after=4)) as server:
        args = ["run", "--model", "m", "--base-url", server.base_url, "--tasks", "itp", "--out", str(out),
                "--quiet", "--no-bertscore", "--concurrency", "2"]
        process = subprocess.Popen([sys.executable, "-m", "rescue", *args], env={**os.environ, "OPENAI_API_KEY": "k"},
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        saved = 0
        while saved < 4:
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.1)
            try:
                with sqlite3.connect(f"file:{out / 'cache.sqlite'}?mode=ro", uri=True, timeout=5) as db:
                    saved = db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
            except sqlite3.OperationalError:
                saved = 0
        process.send_signal(signal.SIGINT)
        release.set()  # mid-way when signalled; the requests it still holds may now end as the run stops
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 130, stderr
        assert "interrupted:" in stderr and "answer(s) of this run are saved" in stderr
        assert "rerun the same command to resume" in stderr and "Traceback" not in stderr
        again = _cli(*args)
    assert again.exit_code == 0, again.output
    assert "answer(s) came from the cache" in again.output


def test_stratified_sample_choice_takes_every_scenario_and_says_which(tmp_path):
    from rescue.data.loading import choose_samples, load_samples

    samples = load_samples(None)
    first = choose_samples(samples, 2, "first")
    stratified = choose_samples(samples, 2, "stratified")
    assert {s.scenario for s in stratified} == {"couple", "family"}
    assert [s.sample_id for s in first] == [s.sample_id for s in samples[:2]]
    outcome = run(RunConfig(out=str(tmp_path / "r"), tasks=["itp"], quiet=True, limit_samples=2,
                            sample_choice="stratified"))
    assert outcome.results["data"]["sample_ids"] == [s.sample_id for s in stratified]
    assert outcome.results["data"]["sample_choice"] == "stratified"


def test_rescore_help_says_the_data_default_is_the_runs_own():
    import re

    result = _cli("rescore", "--help", env={"COLUMNS": "200"})
    words = " ".join(re.sub("[│╭╮╰╯─]", " ", result.output).split())  # the help as one line of words
    data_help = words.split("--data", 1)[1][:160]
    assert "the data the run used" in data_help and "demo" not in data_help


@pytest.mark.slow
def test_a_second_process_into_the_same_run_directory_fails_at_once(tmp_path):
    import threading

    instances = itp_instances(1)
    out = tmp_path / "run"
    release = threading.Event()
    # The first run's requests wait until the second has been turned away.
    with serve(held_script(oracle_script(oracle_answers("itp", instances)), release)) as server:
        first = start_slow_run(server, out)
        try:
            second = _cli("run", "--tasks", "rpp", "--limit-samples", "1", "--out", str(out), "--quiet",
                          "--no-bertscore")
            # At once, not after the first finishes: the first cannot finish before it is released. Not timed
            # (a time bound failed under load while the behaviour was right).
            assert first.poll() is None
            assert second.exit_code == 2 and f"process {first.pid} is writing this run directory" in second.output
        finally:
            release.set()
        first.communicate(timeout=120)
    assert first.returncode == 0
    assert json.loads((out / "results.json").read_text())["config"]["tasks"] == ["itp"]  # the first run's, intact
