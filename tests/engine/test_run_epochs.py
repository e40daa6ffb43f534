"""``--epochs K`` (#46 item 3): each instance asked K times, each epoch with a seed of its own (recorded), scores
the mean over the epochs with their spread, the cache keyed so that epoch k's answer is its own; paired tests in
the report pair epoch with epoch. Through the real CLI, against the scripted OpenAI-compatible server, whose
answers depend on the seed a request sends."""

from __future__ import annotations

import json
import statistics

import pytest
from _cli import invoke_main
from _engine_support import read_jsonl

from rescue.data.loading import choose_samples, load_samples
from rescue.tasks import get_task
from rescue.testing.openai_server import Reply, request_key, serve
from rescue.testing.oracle import OracleScript

ENV = {"OPENAI_API_KEY": "test"}


@pytest.fixture(scope="module")
def oracle():
    return OracleScript(choose_samples(load_samples(None), 1, "stratified"), [get_task("itp")], batch_size=1)


def _by_seed(oracle: OracleScript, wrong_seeds: set[int]):
    """Right answers, but every answer flipped for a request whose seed is in ``wrong_seeds``."""
    def script(body):
        answer = json.loads(oracle.answers[request_key(body)])
        if body.get("seed") in wrong_seeds:
            for item in answer["predictions"]:
                item["should_speak"] = "no" if item["should_speak"] == "yes" else "yes"
        return Reply.json(answer)

    return script


def _run(server, out, *args: str):
    return invoke_main(["run", "--out", str(out), "--model", "m", "--base-url", server.base_url, "--tasks", "itp",
                        "--limit-samples", "1", "--no-bertscore", "--quiet", "--timeout", "30", *args], env=ENV)


def test_epochs_ask_each_instance_with_its_own_seed_and_score_the_mean_with_the_spread(tmp_path, oracle):
    out = tmp_path / "run"
    instances = len(oracle)  # at batch size 1 a batch is its instance alone: one request each
    with serve(_by_seed(oracle, {1})) as server:
        done = _run(server, out, "--epochs", "3")
        assert done.exit_code == 0, done.output
        assert server.request_count == 3 * instances
        assert sorted(b["seed"] for b in server.bodies) == sorted([0, 1, 2] * instances)
        again = _run(server, out, "--epochs", "3")  # each epoch's answer is cached as its own
        assert again.exit_code == 0 and server.request_count == 3 * instances
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["epochs"] == 3
    itp = results["models"]["m"]["itp"]
    # Epochs 0 and 2 answer right, epoch 1 wrong: the mean, each epoch's value and their spread.
    assert itp["epochs"]["count"] == 3 and itp["epochs"]["seeds"] == [0, 1, 2]
    assert itp["epochs"]["per_epoch"]["all"]["accuracy"] == [1.0, 0.0, 1.0]
    assert itp["all"]["accuracy"] == pytest.approx(2 / 3)
    assert itp["epochs"]["spread"]["all"]["accuracy"] == pytest.approx(statistics.stdev([1.0, 0.0, 1.0]))
    assert itp["all"]["instances"] == instances  # per epoch
    records = read_jsonl(out / "predictions.jsonl")
    assert len(records) == 3 * instances
    assert sorted((r["epoch"], r["seed"]) for r in records) == sorted([(e, e) for e in range(3)] * instances)


def test_one_epoch_writes_what_it_did_before_and_sends_the_default_seed(tmp_path, oracle):
    out = tmp_path / "run"
    with serve(_by_seed(oracle, set())) as server:
        assert _run(server, out).exit_code == 0
        assert {b.get("seed") for b in server.bodies} == {0}  # a seed by default, where the provider takes one
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["seed"] == 0 and results["config"]["used"]["seeds"] == {"m": 0}
    assert "epochs" not in results["config"] and "epochs" not in results["models"]["m"]["itp"]
    assert all("epoch" not in r and "seed" not in r for r in read_jsonl(out / "predictions.jsonl"))


def test_a_run_made_before_the_default_seed_keeps_sending_none(tmp_path, oracle):
    out = tmp_path / "run"
    with serve(_by_seed(oracle, set())) as server:
        assert _run(server, out).exit_code == 0
        # What a run made before #46 recorded: no seed (its requests carried none).
        path = out / "results.json"
        results = json.loads(path.read_text())
        results["config"]["seed"] = None
        del results["config"]["used"]["seeds"]
        path.write_text(json.dumps(results))
        asked = server.request_count
        again = _run(server, out)
        assert again.exit_code == 0, again.output  # the same configuration: resumed, not refused
        assert all("seed" not in b for b in server.bodies[asked:])
        assert json.loads(path.read_text())["config"]["seed"] is None


def test_a_provider_without_seeds_is_sent_none_and_its_epochs_stay_apart(tmp_path, oracle):
    out = tmp_path / "run"
    instances = len(oracle)
    with serve(_by_seed(oracle, set())) as server:
        done = invoke_main(["run", "--out", str(out), "--model", "deepseek/deepseek-chat", "--base-url",
                            server.base_url, "--tasks", "itp", "--limit-samples", "1", "--no-bertscore", "--quiet",
                            "--epochs", "2"], env={"DEEPSEEK_API_KEY": "test"})
        assert done.exit_code == 0, done.output
        assert server.request_count == 2 * instances and all("seed" not in b for b in server.bodies)
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["used"]["seeds"] == {"deepseek/deepseek-chat": None}
    records = read_jsonl(out / "predictions.jsonl")
    assert sorted(r["epoch"] for r in records) == [0] * instances + [1] * instances
    assert all("seed" not in r for r in records)  # none sent, none recorded


def test_seed_is_the_first_epochs_and_a_longer_run_reuses_the_epochs_it_has(tmp_path, oracle):
    out = tmp_path / "run"
    instances = len(oracle)
    with serve(_by_seed(oracle, set())) as server:
        assert _run(server, out, "--epochs", "2", "--seed", "10").exit_code == 0
        assert {b["seed"] for b in server.bodies} == {10, 11}
        # Another number of epochs is another configuration for this folder; elsewhere (same cache) the epochs
        # already asked come from the cache and only the third is asked.
        refused = _run(server, out, "--epochs", "3", "--seed", "10")
        assert refused.exit_code == 2 and "epochs" in refused.stderr
        more = _run(server, tmp_path / "more", "--epochs", "3", "--seed", "10", "--cache-dir", str(out))
        assert more.exit_code == 0, more.output
        assert server.request_count == 3 * instances and {b["seed"] for b in server.bodies} == {10, 11, 12}


def test_epochs_below_one_are_refused_before_any_work(tmp_path):
    result = invoke_main(["run", "--out", str(tmp_path / "run"), "--tasks", "itp", "--quiet", "--epochs", "0"])
    assert result.exit_code == 2 and "--epochs" in result.stderr, result.output
    assert not (tmp_path / "run").exists()


def test_a_dry_run_counts_every_epoch_with_batch_or_without(tmp_path):
    # --batch sends every epoch's request too, each a line of the batch (tests/llm/test_batch_epochs.py).
    counts = {}
    for epochs, batch in (("1", []), ("3", []), ("3", ["--batch"])):
        result = invoke_main(["run", "--dry-run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--tasks",
                              "itp", "--limit-samples", "1", "--epochs", epochs, *batch], env=ENV)
        assert result.exit_code == 0, result.output
        (row,) = [line for line in result.stdout.splitlines() if " itp " in line]
        counts[epochs, *batch] = int(row.replace("│", " ").split()[2])
    assert counts["3",] == counts["3", "--batch"] == 3 * counts["1",]


def test_the_report_pairs_epoch_with_epoch_and_says_what_its_counts_are(tmp_path, oracle):
    from rescue.report.bootstrap import pair_records
    from rescue.report.runs import load_run
    from rescue.report.significance import mcnemar_records

    out = tmp_path / "run"
    instances = len(oracle)

    def script(body):  # model a right in every epoch; b right in epoch 0 only
        return _by_seed(oracle, {1} if body["model"] == "b" else set())(body)

    with serve(script) as server:
        done = invoke_main(["run", "--out", str(out), "--model", "a", "--model", "b", "--base-url", server.base_url,
                            "--tasks", "itp", "--limit-samples", "1", "--no-bertscore", "--quiet", "--epochs", "2"],
                           env=ENV)
        assert done.exit_code == 0, done.output
    a, b = load_run(out)
    left, right = pair_records(a.task_records("itp"), b.task_records("itp"))
    assert len(left) == 2 * instances
    assert [(r.instance_id, r.epoch) for r in left] == [(r.instance_id, r.epoch) for r in right]
    test = mcnemar_records(a.task_records("itp"), b.task_records("itp"))
    # Each instance once in the exact test: b is right in one of its two epochs, not more than half.
    assert (test.instances, test.only_a, test.only_b) == (instances, instances, 0)
    report = invoke_main(["report", str(out), "--out", str(out / "report"), "--bootstrap", "0", "--no-figures",
                          "--quiet"])
    assert report.exit_code == 0, report.output
    assert "asked each instance 2 times (--epochs)" in " ".join(report.stdout.split())
