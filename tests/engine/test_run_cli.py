"""The ``rescue run`` / ``rescue rescore`` commands, the lean start-up, and a kill -9 in the middle of a run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from _engine_support import held_script, itp_instances, oracle_answers, oracle_script, read_jsonl, saved_answers, settled_count
from typer.testing import CliRunner

from rescue.cli import app
from rescue.engine.runner import RunConfig, run
from rescue.tasks import TASKS
from rescue.testing.openai_server import request_key, serve

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_default_command_runs_the_baselines_on_the_demo_data(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--no-bertscore", "--limit-samples", "2",
                                      "--sample-choice", "first"])
    assert result.exit_code == 0, result.output
    assert "baseline/majority" in result.output  # the leaderboard
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["data"] is None  # the bundled demo data
    models = results["models"]
    # The first two demo sessions (both couples): instances per task, and which baseline answers which task.
    instances = {"itp": 28, "rpp": 15, "stp": 15, "ssp": 15, "er": 10, "vp": 10}
    tasks = {"baseline/majority": list(instances), "baseline/uniform": list(instances),
             "baseline/persist": ["rpp"], "baseline/nearest": ["er", "vp"],
             "baseline/supervised": ["itp", "rpp", "stp", "ssp"]}
    assert {m: [t for t in v if t in instances] for m, v in models.items()} == tasks
    assert results["config"]["tasks"] == list(TASKS)  # every registered task, the six pinned here and any other
    records = read_jsonl(out / "predictions.jsonl")
    per_pair = Counter((r["model"], r["task"]) for r in records if r["task"] in instances)
    assert per_pair == {(m, t): instances[t] for m, names in tasks.items() for t in names}
    for model, names in tasks.items():
        for task in names:
            scope = models[model][task]
            assert (scope["all"]["instances"], scope["all"]["failures"]) == (instances[task], 0), (model, task)
            assert scope["couple"] == scope["all"] and "family" not in scope
            assert len(scope["samples"]) == 2
    majority, persist = models["baseline/majority"], models["baseline/persist"]
    # Majority says "yes" everywhere on ITP's balanced instances: half right, recall 1, F1 2/3.
    assert {k: majority["itp"]["all"][k] for k in ("precision", "recall", "accuracy", "balanced_accuracy")} == {
        "precision": 0.5, "recall": 1.0, "accuracy": 0.5, "balanced_accuracy": 0.5}
    assert majority["itp"]["all"]["f1"] == pytest.approx(2 / 3)
    assert majority["rpp"]["all"]["accuracy"] == pytest.approx(8 / 15)
    assert majority["stp"]["all"]["recall_at_1"] == pytest.approx(8 / 15)
    assert majority["ssp"]["all"]["recall_at_1"] == pytest.approx(2 / 15)
    assert majority["er"]["all"]["intensity"] == pytest.approx(4.4)
    assert persist["rpp"]["all"]["accuracy"] == pytest.approx(8 / 15)
    assert persist["rpp"]["all"]["mrr"] == pytest.approx(0.6556, abs=1e-4)
    hits = [r["scores"]["correct"] for r in records if (r["model"], r["task"]) == ("baseline/majority", "itp")]
    assert sum(hits) / len(hits) == majority["itp"]["all"]["accuracy"]  # the records carry the same scores
    assert (out / "run.log").is_file()

    rescored = CliRunner().invoke(app, ["rescore", str(out), "--quiet"])
    assert rescored.exit_code == 0, rescored.output
    again = json.loads((out / "results.json").read_text())
    assert again["models"]["baseline/majority"]["itp"] == results["models"]["baseline/majority"]["itp"]


def test_bad_options_are_clear_errors(tmp_path):
    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path), "--tasks", "itp,xyz", "--quiet"])
    assert result.exit_code != 0
    assert "xyz" in str(result.exception) or "xyz" in result.output


def test_cli_start_up_imports_no_heavy_module():
    code = ("import sys, rescue.cli; heavy = [m for m in ('torch', 'pandas', 'matplotlib', 'transformers', 'openai') "
            "if m in sys.modules]; print(heavy); sys.exit(1 if heavy else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_a_run_against_an_endpoint_imports_no_report_statistics(tmp_path):
    # numpy (the report's bootstrap) took a tenth of a second of every run's end for a summary table that
    # needs none of it; sklearn and scipy belong to the offline baselines only, matplotlib to the report
    # (issue 34 item 5: imported only when used).
    instances = itp_instances(limit_samples=1)
    code = (
        "import json, sys\n"
        "from typer.testing import CliRunner\n"
        "from rescue.cli import app\n"
        "result = CliRunner().invoke(app, sys.argv[1:])\n"
        "print(json.dumps({'code': result.exit_code, 'output': result.output,\n"
        "                  'heavy': [m for m in ('numpy', 'sklearn', 'scipy', 'matplotlib') if m in sys.modules]}))\n"
    )
    with serve(oracle_script(oracle_answers("itp", instances))) as server:
        done = subprocess.run(
            [sys.executable, "-c", code, "run", "--model", "test-model", "--base-url", server.base_url,
             "--tasks", "itp", "--limit-samples", "1", "--out", str(tmp_path / "run"), "--no-bertscore"],
            capture_output=True, text=True, cwd=REPO, env={**os.environ, "OPENAI_API_KEY": "test"})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, report["output"]
    assert "test-model" in report["output"]  # the summary table was printed
    assert report["heavy"] == []


HOLD_AFTER = 40  # the kill lands before this many requests are answered, however late the test looks


@pytest.mark.slow
def test_kill_9_mid_run_loses_only_requests_in_flight(tmp_path):
    instances = itp_instances()
    out = tmp_path / "run"
    concurrency = 4
    release = threading.Event()
    # The run cannot finish before it is killed: on a loaded machine the test could look only after the run had
    # answered everything. Unloaded, the kill lands while answers are still arriving and being stored.
    held = held_script(oracle_script(oracle_answers("itp", instances)), release, after=HOLD_AFTER)
    with serve(held, latency=0.2) as server:
        command = [sys.executable, "-m", "rescue", "run", "--model", "test-model", "--base-url", server.base_url,
                   "--tasks", "itp", "--out", str(out), "--quiet", "--no-bertscore",
                   "--concurrency", str(concurrency)]
        process = subprocess.Popen(command, cwd=tmp_path, env={**os.environ, "OPENAI_API_KEY": "test"},
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while saved_answers(out / "cache.sqlite") < 12:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        release.set()
        # A request the run sent just before it died may reach the server after: it is the first run's.
        killed_after = settled_count(server)
        assert not (out / "results.json").exists()  # nothing half-written
        with sqlite3.connect(out / "cache.sqlite") as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            stored = db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        assert 12 <= stored < len(instances)

        outcome = run(RunConfig(out=str(out), models=["test-model"], tasks=["itp"], base_url=server.base_url,
                                quiet=True, bertscore=False, concurrency=concurrency))
        keys = Counter(request_key(b) for b in server.bodies)
    # Asked twice: only requests that were in flight when the process died.
    repeated = sum(n - 1 for n in keys.values())
    assert repeated <= concurrency
    assert len(keys) == len(instances)
    assert server.request_count - killed_after == len(instances) - stored
    records = read_jsonl(out / "predictions.jsonl")
    assert len(records) == len(instances) == len({r["instance_id"] for r in records})
    assert outcome.results["models"]["test-model"]["itp"]["all"]["f1"] == 1.0


def test_seed_option_reseeds_the_uniform_baseline(tmp_path):
    def predictions(seed: str, name: str) -> list:
        out = tmp_path / name
        args = ["run", "--out", str(out), "--model", "baseline/uniform", "--tasks", "ssp", "--quiet", "--seed", seed]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        assert json.loads((out / "results.json").read_text())["config"]["seed"] == int(seed)
        return [r["prediction"] for r in read_jsonl(out / "predictions.jsonl")]

    first, again, other = predictions("1", "a"), predictions("1", "b"), predictions("2", "c")
    assert first == again
    assert first != other
