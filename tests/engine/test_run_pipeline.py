"""``rescue run`` end to end against the scripted server: metrics from real answers, resume, rescore, faults."""

from __future__ import annotations

import json
import threading

import pytest
from _engine_support import itp_instances, oracle_answers, oracle_script, read_jsonl

from rescue.engine.runner import RunConfig, rescore, run
from rescue.tasks import get_task
from rescue.tasks.base import RenderOptions
from rescue.testing.oracle import run_batches
from rescue.testing.openai_server import Reply, request_key, serve

PREDICTION_KEYS = {"model", "task", "instance_id", "sample_id", "scenario", "gold", "prediction", "raw", "status"}


def _config(tmp_path, server, **overrides) -> RunConfig:
    # A request timeout no loaded machine reaches: the tests count requests exactly, and a timeout adds one.
    options = dict(out=str(tmp_path / "run"), models=["test-model"], tasks=["itp"], base_url=server.base_url,
                   quiet=True, bertscore=False, max_retries=3, timeout=30.0)
    options.update(overrides)
    return RunConfig(**options)


def test_oracle_answers_score_perfectly_and_results_have_the_documented_shape(tmp_path):
    instances = itp_instances()
    with serve(oracle_script(oracle_answers("itp", instances))) as server:
        outcome = run(_config(tmp_path, server))
        assert server.request_count == len(instances)
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    scores = results["models"]["test-model"]["itp"]
    assert scores["all"]["f1"] == 1.0 and scores["all"]["accuracy"] == 1.0
    assert scores["all"]["instances"] == len(instances) and scores["all"]["failures"] == 0
    assert set(scores) >= {"all", "samples"} and any(s in scores for s in ("couple", "family"))
    assert set(scores["samples"]) == {i.sample_id for i in instances}
    assert results["config"]["models"] == ["test-model"] and results["config"]["tasks"] == ["itp"]
    usage = results["models"]["test-model"]["usage"]["itp"]
    assert usage["requests"] == len(instances) and usage["input_tokens"] > 0
    assert results["models"]["test-model"]["cost"]["total"] is None  # no price for a test model: unknown
    records = read_jsonl(tmp_path / "run" / "predictions.jsonl")
    assert len(records) == len(instances)
    assert all(PREDICTION_KEYS <= set(r) for r in records)
    assert {r["instance_id"] for r in records} == {i.instance_id for i in instances}
    assert outcome.complete
    # asyncio.run formats the outcome when it restores the SIGINT handler: never every record in it.
    assert repr(outcome) == f"RunOutcome(out={str(tmp_path / 'run')!r}, complete=True, stopped=None, " \
                            f"records={len(instances)})"


def test_rerun_resumes_and_rescore_asks_nothing(tmp_path):
    instances = itp_instances()
    with serve(oracle_script(oracle_answers("itp", instances))) as server:
        run(_config(tmp_path, server))
        first = json.loads((tmp_path / "run" / "results.json").read_text())
        run(_config(tmp_path, server))
        assert server.request_count == len(instances)  # the rerun answered everything from the cache
    second = json.loads((tmp_path / "run" / "results.json").read_text())
    assert second["models"]["test-model"]["itp"] == first["models"]["test-model"]["itp"]
    assert second["models"]["test-model"]["usage"]["itp"]["cache_hits"] == len(instances)
    # The server is gone: rescore must work from the cache alone.
    outcome = rescore(tmp_path / "run")
    assert outcome.results["models"]["test-model"]["itp"] == first["models"]["test-model"]["itp"]
    assert outcome.results["run"]["rescored"] is True


def test_batches_reask_missing_instances_singly(tmp_path):
    instances = itp_instances()
    answers = oracle_answers("itp", instances, batch_size=4)

    def script(body):
        answer = json.loads(answers[request_key(body)])
        if len(answer["predictions"]) > 1:
            answer["predictions"] = answer["predictions"][1:]  # leave the first instance out
        return Reply.json(answer)

    singles = set(oracle_answers("itp", instances, batch_size=1))
    with serve(script) as server:
        run(_config(tmp_path, server, batch_size="4"))
        keys = [request_key(b) for b in server.bodies]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["models"]["test-model"]["itp"]["all"]["f1"] == 1.0
    assert results["models"]["test-model"]["itp"]["all"]["failures"] == 0
    batches = run_batches(get_task("itp"), instances, 4, RenderOptions())
    multi = [b for b in batches if len(b) > 1]
    assert multi
    # Each batch once, plus one single re-ask of the left-out instance per multi-instance batch; nothing twice.
    assert len(keys) == len(batches) + len(multi) and len(set(keys)) == len(keys)
    assert sum(k in singles for k in keys) == len(batches) - len(multi) + len(multi)


@pytest.mark.parametrize("fault", ["malformed", "truncated", "refused"])
def test_unusable_answers_are_failures_that_count(tmp_path, fault):
    instances = itp_instances(limit_samples=1)
    answers = oracle_answers("itp", instances)
    bad = instances[0]
    bad_key = next(k for k, v in answers.items() if '"after_row%d"' % bad.row_index in v and v.count('"id"') == 1)

    def script(body):
        key = request_key(body)
        if key == bad_key:
            return {"malformed": Reply.malformed(), "truncated": Reply.truncated(answers[key], 0.4),
                    "refused": Reply.content_filter()}[fault]
        return Reply.text(answers[key])

    with serve(script) as server:
        run(_config(tmp_path, server, limit_samples=1))
    records = {r["instance_id"]: r for r in read_jsonl(tmp_path / "run" / "predictions.jsonl")}
    assert len(records) == len(instances)
    # A truncated answer (finish_reason=length) that cannot be parsed ran out of budget (issue #23).
    expected = {"malformed": "parse_error", "truncated": "budget_exhausted", "refused": "refused"}[fault]
    assert records[bad.instance_id]["status"] == expected
    assert records[bad.instance_id]["prediction"] is None
    if fault == "truncated":
        assert "max_tokens" in records[bad.instance_id]["error"]
    scores = json.loads((tmp_path / "run" / "results.json").read_text())["models"]["test-model"]["itp"]["all"]
    assert scores["failures"] == 1 and scores["instances"] == len(instances)
    assert scores["accuracy"] == pytest.approx((len(instances) - 1) / len(instances))


def test_transient_faults_lose_nothing(tmp_path):
    """429 with Retry-After, 500s, timeouts and cut-off bodies on half the requests: every instance still gets
    its answer, each asked until it succeeds."""
    instances = itp_instances(limit_samples=2)
    answers = oracle_answers("itp", instances)
    seen: dict[str, int] = {}
    lock = threading.Lock()
    faults = [Reply.rate_limited(0.2), Reply.server_error(500), Reply.hang(),
              Reply.raw_body(200, '{"choices": [{"message": {"content": "{\\"pre', content_type="application/json")]

    def script(body):
        key = request_key(body)
        with lock:
            seen[key] = seen.get(key, 0) + 1
            attempt = seen[key]
        index = sorted(answers).index(key)
        if attempt == 1 and index % 2 == 0:
            return faults[index // 2 % len(faults)]
        return Reply.text(answers[key])

    with serve(script) as server:
        # The timeout bounds whole requests: generous enough that a loaded machine does not add timeouts.
        outcome = run(_config(tmp_path, server, limit_samples=2, timeout=4.0, concurrency=8))
    scores = outcome.results["models"]["test-model"]["itp"]["all"]
    assert scores["failures"] == 0 and scores["f1"] == 1.0
    assert outcome.results["models"]["test-model"]["usage"]["itp"]["retries"] == sum(1 for n in seen.values() if n > 1)
    assert sum(seen.values()) == len(answers) + (len(answers) + 1) // 2
    log = [json.loads(line) for line in (tmp_path / "run" / "run.log").read_text().splitlines()]
    classes = {e["error_class"] for e in log if e["event"] == "retry"}
    assert classes == {"rate_limit", "server_error", "timeout", "bad_response"}
    assert all(e["instances"] for e in log if e["event"] == "retry")


def test_max_cost_stops_cleanly_and_resumes(tmp_path):
    instances = itp_instances()
    prices = tmp_path / "prices.toml"
    prices.write_text('["test-model"]\ninput = 1000000\noutput = 0\n')  # a dollar per input token
    with serve(oracle_script(oracle_answers("itp", instances))) as server:
        first = run(_config(tmp_path, server, prices=str(prices), max_cost=1.0, concurrency=1))
        asked = server.request_count
        assert not first.complete and "--max-cost" in first.stopped
        assert 1 <= asked < len(instances)
        records = read_jsonl(tmp_path / "run" / "predictions.jsonl")
        assert len(records) == len(instances)  # unasked instances are recorded, not dropped
        assert sum(r["status"] == "ok" for r in records) == asked
        second = run(_config(tmp_path, server, prices=str(prices), max_cost=None))
        assert server.request_count == len(instances)  # only what was never asked
    assert second.complete
    assert second.results["models"]["test-model"]["itp"]["all"]["f1"] == 1.0


def test_fail_fast_after_too_many_failures(tmp_path):
    instances = itp_instances()
    with serve(Reply.error(400, "bad request", type="invalid_request_error")) as server:
        outcome = run(_config(tmp_path, server, max_failures=3, concurrency=1))
        assert server.request_count == 4
    assert not outcome.complete and "--max-failures" in outcome.stopped
    assert outcome.results["models"]["test-model"]["itp"]["all"]["failures"] == len(instances)


def test_er_judge_hook_scores_through_the_cached_judge(tmp_path):
    with serve(Reply.json({"emotion_score": 4, "notes": "close"})) as server:
        config = RunConfig(out=str(tmp_path / "run"), models=["baseline/majority"], tasks=["er"], judges=["judge-model"],
                           judge_base_url=server.base_url, quiet=True, bertscore=False)
        outcome = run(config)
        asked = server.request_count
        assert asked > 0
        run(config)
        assert server.request_count == asked  # judge answers come from the cache on the rerun
    er = outcome.results["models"]["baseline/majority"]["er"]["all"]
    assert er["judged"] == er["instances"] - er["failures"] > 0
    judge_usage = outcome.results["models"]["baseline/majority"]["usage"]["judge"]["er"]
    assert judge_usage[0]["judge"] == "judge-model" and judge_usage[0]["input_tokens"] > 0
    records = read_jsonl(tmp_path / "run" / "predictions.jsonl")
    assert len(records) == er["instances"] and all(r["status"] == "ok" for r in records)
    assert all(r["scores"].get("judge_emotion") == 4.0 for r in records)
    # S_ER = (S_emo + S_int) / 2 per instance, S_int = max(1, 5 - |predicted - gold intensity|), averaged.
    s_int = [max(1, 5 - abs(r["prediction"]["intensity"] - r["gold"]["intensity"])) for r in records]
    assert len(set(s_int)) > 1  # the intensities vary, so a wrong combination cannot hit the value by chance
    assert er["judge_emotion"] == 4.0
    assert er["intensity"] == pytest.approx(sum(s_int) / len(s_int))
    assert er["s_er"] == pytest.approx(sum((4.0 + s) / 2 for s in s_int) / len(s_int))
    assert all(r["scores"]["s_er"] == pytest.approx((4.0 + s) / 2) for r, s in zip(records, s_int, strict=True))


@pytest.mark.slow
def test_bertscore_hook_fills_scores_and_records_the_backbone(tmp_path):
    outcome = run(RunConfig(out=str(tmp_path / "run"), models=["baseline/majority"], tasks=["er"], quiet=True,
                            limit_samples=2))
    assert outcome.results["config"]["bertscore"]["model"]
    assert outcome.results["models"]["baseline/majority"]["er"]["all"]["bertscore_f1"] is not None


def test_per_model_settings_merge_over_the_run_settings():
    config = RunConfig(out="x", models=["a", "b"], temperature=0.0, extra_body={"enable_thinking": False},
                       model_settings={"b": {"temperature": 0.7, "max_tokens": 300, "extra_body": {"top_k": 5}}})
    assert config.settings_for("a").temperature == 0.0
    b = config.settings_for("b")
    assert (b.temperature, b.max_tokens) == (0.7, 300)
    assert b.extra_body == {"enable_thinking": False, "top_k": 5}
    with pytest.raises(Exception, match="temprature"):
        RunConfig(out="x", model_settings={"a": {"temprature": 1}}).settings_for("a")


def test_unknown_task_and_bad_batch_size_are_clear_errors():
    with pytest.raises(Exception, match="xyz"):
        RunConfig(out="x", tasks=["xyz"])
    with pytest.raises(Exception, match="--batch-size"):
        RunConfig(out="x", batch_size="zero")
