"""A multi-item batch answer in which one item names an unknown label: that item, and only it, is asked
again alone, and the re-ask's answer is what is scored (issue #16, item 4). Real HTTP, the scripted server."""

from __future__ import annotations

import json

import pytest
from _engine_support import oracle_answers, read_jsonl

from rescue.data.loading import load_samples
from rescue.engine.runner import RunConfig, run
from rescue.tasks import get_task
from rescue.tasks.base import RenderOptions
from rescue.testing.openai_server import Reply, request_key, serve
from rescue.testing.oracle import run_batches

# ITP answers one label, SSP a ranking: both closed sets, both batched by the authors.
CASES = {"itp": ("should_speak", "maybe later"), "ssp": ("strategy_top3", ["banana_strategy", "track", "join"])}


@pytest.mark.parametrize("name", list(CASES))
def test_an_unknown_label_in_one_item_of_a_batch_is_reasked_alone(tmp_path, name):
    task = get_task(name)
    instances = task.build(load_samples(None))
    size = 4
    answers = oracle_answers(name, instances, batch_size=size)
    batches = run_batches(task, instances, size, RenderOptions())
    multi = [b for b in batches if len(b) > 1]
    assert multi, "the demo data must give multi-item batches"
    singles = {request_key({"messages": task.render([i], RenderOptions())}): i.instance_id for i in instances}
    spoiled = {b[-1].instance_id for b in multi}  # the last item of every multi-item batch gets a bad label
    key, bad = CASES[name]

    def script(body):
        answer = json.loads(answers[request_key(body)])
        if len(answer["predictions"]) > 1:
            answer["predictions"][-1][key] = bad
        return Reply.json(answer)

    with serve(script) as server:
        run(RunConfig(out=str(tmp_path / "run"), models=["test-model"], tasks=[name], base_url=server.base_url,
                      batch_size=str(size), quiet=True, bertscore=False, max_retries=1, timeout=30.0))
        keys = [request_key(b) for b in server.bodies]
    # Every batch once, then exactly the spoiled items alone, each once.
    assert len(keys) == len(batches) + len(multi)
    reasked = [singles[k] for k in keys if k in singles and len(next(b for b in batches if any(
        i.instance_id == singles[k] for i in b))) > 1]
    assert sorted(reasked) == sorted(spoiled)
    records = {r["instance_id"]: r for r in read_jsonl(tmp_path / "run" / "predictions.jsonl")}
    assert all(r["status"] == "ok" for r in records.values())
    results = json.loads((tmp_path / "run" / "results.json").read_text())["models"]["test-model"][name]["all"]
    accuracy = results.get("accuracy", results.get("recall_at_1"))
    assert accuracy == 1.0 and results["failures"] == 0
