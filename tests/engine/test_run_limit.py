"""``--limit N`` (#46 item 2): N instances of each task, each scenario in its share, drawn with a fixed seed and
recorded in results.json, beside ``--limit-samples`` (whole sessions). Through the real CLI, against the scripted
OpenAI-compatible server."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from _cli import invoke_main
from _engine_support import read_jsonl

from rescue.data.loading import load_samples
from rescue.engine.plan import LIMIT_SEED, limit_instances
from rescue.tasks import get_task
from rescue.testing.openai_server import serve
from rescue.testing.oracle import OracleScript

ENV = {"OPENAI_API_KEY": "test"}


@pytest.fixture(scope="module")
def demo():
    return load_samples(None)


def _run(server, out, *args: str):
    return invoke_main(["run", "--out", str(out), "--model", "m", "--base-url", server.base_url, "--no-bertscore",
                        "--quiet", "--timeout", "30", *args], env=ENV)


def test_limit_takes_n_instances_per_task_by_scenario_and_records_them(tmp_path, demo):
    out = tmp_path / "run"
    tasks = ("itp", "rpp")
    built = {t: get_task(t).build(demo) for t in tasks}
    with serve(OracleScript(demo, [get_task(t) for t in tasks], batch_size=1)) as server:
        result = _run(server, out, "--tasks", ",".join(tasks), "--limit", "6")
        assert result.exit_code == 0, result.output
        assert server.request_count == 12  # six of each task, every one asked once
        again = _run(server, out, "--tasks", ",".join(tasks), "--limit", "6")
        assert again.exit_code == 0 and server.request_count == 12  # the same draw: all from the cache
    results = json.loads((out / "results.json").read_text())
    data = results["data"]
    assert (data["limit"], data["limit_seed"]) == (6, LIMIT_SEED)
    records = read_jsonl(out / "predictions.jsonl")
    for task in tasks:
        taken = [r for r in records if r["task"] == task]
        assert len(taken) == 6 == results["models"]["m"][task]["all"]["instances"]
        assert data["instance_ids"][task] == [r["instance_id"] for r in taken]
        # Each scenario in its share of the task's instances (largest remainder), in build order.
        everything = Counter(i.scenario for i in built[task])
        shares = {s: 6 * n / len(built[task]) for s, n in everything.items()}
        got = Counter(r["scenario"] for r in taken)
        assert set(got) == set(everything) and all(abs(got[s] - shares[s]) < 1 for s in shares), (got, shares)
        order = [i.instance_id for i in built[task]]
        assert data["instance_ids"][task] == sorted(data["instance_ids"][task], key=order.index)
        assert results["models"]["m"][task]["all"]["accuracy"] == 1.0  # real answers, scored
    # The draw is the one limit_instances makes: a fixed seed, not the order of the file.
    assert data["instance_ids"]["itp"] == [i.instance_id for i in limit_instances(6, "itp", built["itp"])]
    assert data["instance_ids"]["itp"] != [i.instance_id for i in built["itp"][:6]]


def test_limit_beside_limit_samples_and_above_the_instances(tmp_path, demo):
    out = tmp_path / "run"
    with serve(OracleScript(demo, [get_task("itp")], batch_size=1)) as server:
        result = _run(server, out, "--tasks", "itp", "--limit-samples", "1", "--limit", "100000")
        assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())["data"]
    (sample,) = data["sample_ids"]
    assert all(i.startswith(sample + "#") for i in data["instance_ids"]["itp"])
    assert len(data["instance_ids"]["itp"]) == server.request_count  # fewer instances than N: all of them


@pytest.mark.parametrize("value", ["0", "-3"])
def test_a_limit_below_one_is_refused_before_any_work(tmp_path, value):
    result = invoke_main(["run", "--out", str(tmp_path / "run"), "--limit", value, "--tasks", "itp", "--quiet"])
    assert result.exit_code == 2 and "--limit" in result.stderr and "at least 1" in result.stderr, result.output
    assert not (tmp_path / "run").exists()


def test_a_dry_run_counts_the_limited_instances(tmp_path):
    result = invoke_main(["run", "--dry-run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--tasks",
                          "itp,rpp", "--limit", "4"], env=ENV)
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.stdout.splitlines() if " itp " in f" {line} " or " rpp " in f" {line} "]
    assert rows and all("4" in row for row in rows), result.stdout


def test_the_report_says_a_run_is_limited(tmp_path, demo):
    out = tmp_path / "run"
    with serve(OracleScript(demo, [get_task("itp")], batch_size=1)) as server:
        assert _run(server, out, "--tasks", "itp", "--limit", "5").exit_code == 0
        assert _run(server, tmp_path / "samples", "--tasks", "itp", "--limit-samples", "2").exit_code == 0
        assert _run(server, tmp_path / "full", "--tasks", "itp").exit_code == 0
    for folder, said in ((out, "at most 5 instance(s) per task (--limit, drawn with seed 0)"),
                         (tmp_path / "samples", "2 sample(s) (stratified, --limit-samples)")):
        report = invoke_main(["report", str(folder), "--out", str(folder / "report"), "--bootstrap", "0",
                              "--no-figures", "--quiet"])
        assert report.exit_code == 0, report.output
        assert f"{folder} is a limited run: {said}" in " ".join(report.stdout.split()), report.stdout
        assert "is a limited run" in (folder / "report" / "report.html").read_text()
    full = invoke_main(["report", str(tmp_path / "full"), "--out", str(tmp_path / "full" / "report"), "--bootstrap",
                        "0", "--no-figures", "--quiet"])
    assert full.exit_code == 0 and "limited run" not in full.output
