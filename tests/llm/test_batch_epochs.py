"""``--batch --epochs K``: every epoch's request goes into the batch as a line of its own (its own ``custom_id``,
its own seed), answered into the cache under the key the online pass asks, so a batched run of several epochs
records and scores what the same run online does; a rerun sends nothing, and a run killed mid-batch is finished
by the same command without a second batch. Against the scripted server's /v1/files and /v1/batches, whose
answers depend on the seed a request sends."""

from __future__ import annotations

import json

import pytest
from _engine_support import itp_instances, read_jsonl
from batch_support import cached, er_script, kill_once_batch_is_made, oracle, run_batches, run_config

from rescue.engine.parts import Asking
from rescue.engine.plan import epoch_seeds
from rescue.engine.progress import RunLog
from rescue.engine.runner import run
from rescue.llm._cache import ResponseCache
from rescue.llm._client import GenerationSettings, OpenAIModel
from rescue.llm._providers import Endpoint
from rescue.llm._reliable import ReliableModel
from rescue.tasks import get_task
from rescue.testing.openai_server import Reply, request_key, serve

EPOCHS = 2


def _by_seed(answers: dict[str, str], wrong_seeds: set[int]):
    """The right answers, but each flipped for a request whose seed is in ``wrong_seeds``."""
    def script(body):
        answer = json.loads(answers[request_key(body)])
        if body.get("seed") in wrong_seeds:
            for item in answer["predictions"]:
                item["should_speak"] = "no" if item["should_speak"] == "yes" else "yes"
        return Reply.json(answer)

    return script


def _records(out) -> list[dict]:
    return sorted(read_jsonl(out / "predictions.jsonl"), key=lambda r: (r["instance_id"], r["epoch"]))


def _ledger_keys(out) -> list[str]:
    return [k for e in json.loads((out / "batches.json").read_text())["batches"] for k in e["keys"]]


def test_batch_asks_every_epoch_in_one_batch_and_records_what_the_online_run_does(tmp_path):
    answers, _ = oracle()
    instances = len(answers)  # at batch size 1, one request per instance
    with serve(_by_seed(answers, {1})) as server:
        batched = run(run_config(tmp_path, server, epochs=EPOCHS))
        assert server.request_count == 0  # every epoch came through the batch
        assert len(server.batches) == 1 and len(server.batch_bodies) == EPOCHS * instances
        assert sorted(b["seed"] for b in server.batch_bodies) == sorted(list(range(EPOCHS)) * instances)
        keys = _ledger_keys(tmp_path / "run")  # each line's custom_id is its cache key
        assert len(keys) == len(set(keys)) == EPOCHS * instances
        online = run(run_config(tmp_path, server, out="online", batch=False, epochs=EPOCHS))
        assert server.request_count == EPOCHS * instances
    assert batched.complete and online.complete
    assert _records(tmp_path / "run") == _records(tmp_path / "online")
    b, o = batched.results["models"]["m"], online.results["models"]["m"]
    assert b["itp"]["all"] == o["itp"]["all"] and b["itp"]["epochs"] == o["itp"]["epochs"]
    # Epoch 0 answers right, epoch 1 wrong: each epoch is its own draw, not one answer read twice.
    assert b["itp"]["epochs"]["seeds"] == list(range(EPOCHS))
    assert b["itp"]["epochs"]["per_epoch"]["all"]["accuracy"] == [1.0, 0.0]
    assert batched.results["config"]["epochs"] == EPOCHS
    assert b["usage"]["itp"]["batch_answers"] == EPOCHS * instances


def test_a_rerun_of_batch_epochs_sends_nothing(tmp_path):
    answers, _ = oracle()
    with serve(_by_seed(answers, {1})) as server:
        first = run(run_config(tmp_path, server, epochs=EPOCHS))
        sent = len(server.batch_bodies)
        again = run(run_config(tmp_path, server, epochs=EPOCHS))
        assert len(server.batches) == 1 and len(server.batch_bodies) == sent and server.request_count == 0
    assert first.complete and again.complete
    assert again.results["models"]["m"]["itp"]["epochs"] == first.results["models"]["m"]["itp"]["epochs"]


def test_an_online_run_answers_a_batch_run_of_the_same_epochs_from_the_shared_cache(tmp_path):
    answers, _ = oracle()
    with serve(_by_seed(answers, set())) as server:
        run(run_config(tmp_path, server, out="online", batch=False, epochs=EPOCHS, seed=10))
        sent = server.request_count
        batched = run(run_config(tmp_path, server, epochs=EPOCHS, seed=10, cache_dir=str(tmp_path / "online")))
        assert server.batches == {} and server.request_count == sent  # the keys are the online pass's
    assert batched.complete and batched.results["models"]["m"]["itp"]["epochs"]["seeds"] == [10, 11]


def test_more_epochs_batch_only_the_epochs_the_cache_lacks(tmp_path):
    answers, _ = oracle()
    instances = len(answers)
    with serve(_by_seed(answers, set())) as server:
        run(run_config(tmp_path, server, epochs=2))
        more = run(run_config(tmp_path, server, out="more", epochs=3, cache_dir=str(tmp_path / "run")))
        assert len(server.batches) == 2 and server.request_count == 0
        assert sorted(b["seed"] for b in server.batch_bodies) == sorted([0, 1] * instances + [2] * instances)
    assert more.complete and more.results["models"]["m"]["itp"]["epochs"]["count"] == 3


@pytest.mark.slow
def test_a_batch_epochs_run_killed_mid_batch_is_finished_by_the_same_command_paying_nothing_twice(tmp_path):
    answers, _ = oracle()
    instances = len(answers)
    with serve(_by_seed(answers, {1})) as server:
        server.batch_behaviour.polls = 10**9  # the batch never ends while the first run waits
        kill_once_batch_is_made(tmp_path, server, "--epochs", str(EPOCHS))
        assert len(server.batches) == 1 and len(server.uploads) == 1
        server.batch_behaviour.polls = 1
        resumed = run(run_config(tmp_path, server, epochs=EPOCHS))
        assert len(server.batches) == 1 and len(server.uploads) == 1  # adopted, never made again
        assert len(server.batch_bodies) == EPOCHS * instances and server.request_count == 0
    assert resumed.complete
    m = resumed.results["models"]["m"]
    assert m["usage"]["itp"]["batch_answers"] == EPOCHS * instances
    assert m["itp"]["epochs"]["per_epoch"]["all"]["accuracy"] == [1.0, 0.0]


def test_epochs_of_a_provider_without_seeds_are_distinct_lines_of_the_batch(tmp_path):
    """A provider that takes no seed is sent none, yet its epochs stay distinct requests, as online: the key
    (the custom_id) holds the epoch. The requests are built as the run builds them (:func:`prediction_request`,
    one per epoch of :func:`epoch_seeds`)."""
    from rescue.engine.reask import prediction_request

    [instance, *_] = itp_instances(limit_samples=1)
    with serve(lambda body: Reply.json({"predictions": []})) as server:
        asking = run_config(tmp_path, server, epochs=EPOCHS).part(Asking)
        requests = [prediction_request(get_task("itp"), [instance], asking.render(None), epoch)
                    for epoch in enumerate(epoch_seeds(asking))]
        endpoint = Endpoint("test/unseeded", "test-model", server.base_url, None, seed=False)
        model = ReliableModel(OpenAIModel(endpoint, GenerationSettings(timeout=30.0)),
                              cache=ResponseCache(tmp_path / "cache.sqlite"), log=RunLog(tmp_path / "run.log"))
        outcome = run_batches(model, requests, tmp_path)
        assert outcome.submitted == outcome.answered == EPOCHS and len(server.batch_bodies) == EPOCHS
        assert all("seed" not in b for b in server.batch_bodies)
        # The same body twice, yet two requests: each epoch's answer is stored under its own key.
        assert server.batch_bodies[0] == server.batch_bodies[1]
        assert len({model.key(r) for r in requests}) == EPOCHS
        assert all(cached(model, requests).values())


def test_the_judge_grades_every_epoch_in_batch_too(tmp_path):
    """Each epoch's predictions are graded; the judge's batch holds the requests the online judge would send
    (an answer the same in two epochs is one prompt, graded once), so nothing is asked online."""
    with serve(er_script) as server:
        outcome = run(run_config(tmp_path, server, tasks=["er"], judges=["judge-a"], epochs=EPOCHS))
        assert server.request_count == 0 and len(server.batches) == 2
        asked = [b for b in server.batch_bodies if b["model"] == "m"]
        assert sorted(b["seed"] for b in asked) == sorted(list(range(EPOCHS)) * (len(asked) // EPOCHS))
    er = outcome.results["models"]["m"]["er"]
    assert outcome.complete and er["all"]["judge_emotion"] == 4.0 and er["epochs"]["count"] == EPOCHS
