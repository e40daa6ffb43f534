"""The oracle script answers every request the engine can send with the gold, in each task's own schema."""

from __future__ import annotations

import pytest

from rescue.tasks import TASKS
from rescue.tasks.base import RenderOptions
from rescue.testing.oracle import OracleScript, gold_value, run_batches


@pytest.mark.parametrize("name", list(TASKS))
def test_oracle_answers_parse_back_to_gold(name, demo_samples):
    task = TASKS[name]
    options = RenderOptions(mode="audiovisual")
    script = OracleScript(demo_samples, [task], options, batch_size=3)
    instances = task.build(demo_samples)
    assert instances, f"the demo data builds no {name} instance"
    # Batches of 3 and single instances (the engine's retry shape) are both known.
    for batch in [*run_batches(task, instances, 3, options)[:5], [instances[-1]]]:
        reply = script({"messages": task.render(batch, options)})
        predictions = task.parse(reply.content, batch)
        for instance in batch:
            prediction = predictions[instance.instance_id]
            assert prediction.status == "ok", prediction.error
        # What was parsed is the gold as far as the answer schema carries it (VP gold has extra fields).
        parsed = {i.instance_id: predictions[i.instance_id].value for i in batch}
        assert task.format_answer(batch, parsed) == reply.content
        if name != "vp":
            assert all(parsed[i.instance_id] == gold_value(task, i) for i in batch)
    assert script.misses == 0 and script.hits > 0


def test_unknown_requests_get_an_empty_answer_and_are_counted(demo_samples):
    script = OracleScript(demo_samples, [TASKS["itp"]])
    reply = script({"messages": [{"role": "user", "content": "something else"}]})
    assert reply.content == '{"predictions": []}'
    assert script.misses == 1 and script.hits == 0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_rescue_run_against_the_oracle_server_scores_perfectly(demo_samples, tmp_path):
    """The whole HTTP path — render, request, parse, score — on the closed tasks: every answer is gold."""
    import json
    import os
    import subprocess
    import sys

    from rescue.testing import serve

    tasks = ["itp", "rpp", "stp", "ssp"]
    script = OracleScript(demo_samples, [TASKS[name] for name in tasks], batch_size=None)
    with serve(script) as server:
        done = subprocess.run(
            [sys.executable, "-m", "rescue", "run", "--model", "oracle", "--base-url", server.base_url,
             "--tasks", ",".join(tasks), "--batch-size", "authors", "--no-bertscore", "--quiet", "--out", str(tmp_path)],
            check=False, capture_output=True, text=True, timeout=110, env={**os.environ, "OPENAI_API_KEY": "test"},
        )
        assert done.returncode == 0, done.stderr[-3000:]
        requests = server.request_count
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["models"]["oracle"]
    assert script.misses == 0 and script.hits == requests > 0
    assert results["itp"]["all"]["f1"] == 1.0 and results["itp"]["all"]["failures"] == 0
    assert results["rpp"]["all"]["accuracy"] == 1.0
    for name in ("stp", "ssp"):
        assert results[name]["all"]["mrr"] == 1.0 and results[name]["all"]["failures"] == 0
