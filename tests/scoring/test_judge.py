"""The LLM judge for ER and VP, with the scripted OpenAI-compatible server as the judge (real HTTP)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from task_factories import record_for

from rescue.scoring.judge import (
    NO_JUDGE_NOTE,
    JudgeAnswerError,
    JudgeConfigError,
    Turn,
    judge_prompt,
    judge_records,
    parse_grade,
)
from rescue.tasks import er, vp
from rescue.tasks.er import intensity_match, s_er
from rescue.tasks.vp import authors_to_likert
from rescue.tasks.base import Instance, PredictionRecord
from rescue.testing.openai_server import Reply, message_text, serve

# --- formulas and validation (no server) -------------------------------------------------------------


def test_intensity_formula_matches_the_paper():
    assert intensity_match(7, 7) == 5.0
    assert intensity_match(5, 7) == 3.0
    assert intensity_match(9, 2) == 1.0  # never below 1
    assert intensity_match("6.4", 7) == 4.0  # read as the authors do: int(round(float(x)))
    assert intensity_match(None, 7) == 1.0  # no predicted intensity scores the floor
    assert intensity_match(5, None) is None  # nothing to compare against


def test_s_er_is_the_mean_of_the_parts_and_absent_without_a_judge():
    assert s_er(4.0, 3.0) == 3.5
    assert s_er(None, 3.0) is None


def test_authors_scale_maps_linearly_onto_one_to_five():
    assert authors_to_likert(0, 0) == 1.0
    assert authors_to_likert(2, 4) == 5.0
    assert authors_to_likert(1, 2) == 3.0


@pytest.mark.parametrize(
    "raw",
    [
        '{"emotion_score": 6}',  # above the scale
        '{"emotion_score": 0}',  # below the scale
        '{"emotion_score": 4.5}',  # not a whole grade
        '{"emotion_score": true}',
        '{"emotion_score": "four"}',
        '{"verdict": "pass"}',  # no score
        "I would give it a four.",  # no JSON
        "",
    ],
)
def test_invalid_er_grades_are_rejected(raw):
    with pytest.raises(JudgeAnswerError):
        parse_grade(raw, "er", "likert")


def test_valid_grades_are_read_from_what_judges_really_send():
    assert parse_grade('```json\n{"emotion_score": "4", "verdict": null}\n```', "er", "likert").scores() == {
        "judge_emotion": 4.0
    }
    wrapped = '{"graded": [{"checkpoint_id": "row3", "emotion_score": 5.0, "notes": "same"}]}'
    assert parse_grade(wrapped, "er", "likert").scores() == {"judge_emotion": 5.0}


def test_authors_total_is_recomputed_not_trusted():
    grade = parse_grade('{"source_target_score": 2, "viewpoint_score": 1, "viewpoint_total_score": 6}', "vp", "authors")
    assert grade.scores() == {
        "judge": authors_to_likert(2, 1), "judge_source_target": 2.0, "judge_viewpoint": 1.0, "judge_total": 3.0,
    }
    with pytest.raises(JudgeAnswerError, match="viewpoint_score"):
        parse_grade('{"source_target_score": 2, "viewpoint_score": 5}', "vp", "authors")


# --- fixtures: real instances, prediction records, judges over HTTP -----------------------------------


def _records(instances: list[Instance], predictions: dict[str, Any], model: str = "model-under-test") -> list[PredictionRecord]:
    return [record_for(i, predictions.get(i.instance_id), model=model, raw=json.dumps({"reason": "SECRET-REASONING"}))
            for i in instances]


@pytest.fixture()
def er_instances(demo_samples) -> list[Instance]:
    return er.TASK.build(demo_samples)[:4]


@pytest.fixture()
def vp_instances(demo_samples) -> list[Instance]:
    return vp.TASK.build(demo_samples)[:3]


def _instance_data(body: dict[str, Any]) -> dict[str, Any]:
    text = message_text({"messages": body["messages"][:1]})
    return json.loads(text.split("Instance:\n", 1)[1])


def _er_script(body: dict[str, Any]) -> Reply:
    """A judge that grades by meaning the simple way: 5 for the gold phrase, 2 otherwise."""
    data = _instance_data(body)
    score = 5 if data["predicted_emotion"] == data["gold_emotion"] else 2
    return Reply.json({"emotion_score": score, "verdict": "pass", "notes": "scripted"})


def _judge(server, name: str, cache: Path | None = None):
    from rescue.llm._cache import ResponseCache
    from rescue.llm._reliable import ReliableModel
    from rescue.engine.resolve import resolve_model

    inner = resolve_model(name, base_url=server.base_url)
    return ReliableModel(inner, cache=ResponseCache(cache) if cache else None, backoff_base=0.01, max_retries=2)


def _run(judges, coroutine_factory):
    async def main():
        try:
            return await coroutine_factory()
        finally:
            for judge in judges:
                await judge.aclose()

    return asyncio.run(main())


# --- judging through the test server ------------------------------------------------------------------


def test_er_judge_scores_and_s_er(er_instances, tmp_path):
    exact, off = er_instances[0], er_instances[1]
    predictions = {
        exact.instance_id: {"emotion": exact.gold["emotion"], "intensity": exact.gold["intensity"]},
        off.instance_id: {"emotion": "calm and content", "intensity": (off.gold["intensity"] + 2) % 11},
    }
    records = _records(er_instances[:2], predictions)
    pairs = list(zip(er_instances[:2], records))
    with serve(_er_script) as server:
        judge = _judge(server, "judge-a", tmp_path / "judge.sqlite")
        stats = _run([judge], lambda: judge_records(pairs, judges=[judge], task_name="er"))
        assert server.request_count == 2
        prompts = [message_text(body) for body in server.bodies]
    first, second = records
    assert first.scores["judge_emotion"] == 5.0 and first.scores["intensity"] == 5.0 and first.scores["s_er"] == 5.0
    expected_int = intensity_match(predictions[off.instance_id]["intensity"], off.gold["intensity"])
    assert second.scores["judge_emotion"] == 2.0
    assert second.scores["intensity"] == expected_int
    assert second.scores["s_er"] == (2.0 + expected_int) / 2
    assert first.judge.judges["judge-a"].status == "ok"
    assert first.judge.failures == 0
    assert stats["judge-a"].requests == 2 and stats["judge-a"].failures == 0 and stats["judge-a"].input_tokens > 0
    # The judge sees the turn, the prediction and the gold, nothing else.
    shown = [_instance_data({"messages": [{"content": prompt}]}) for prompt in prompts]
    assert sorted(d["turn"]["dialogue"] for d in shown) == sorted(
        i.sample.row(i.row_index).dialogue_cleaned for i in er_instances[:2]
    )
    assert all(set(d) == {"turn", "predicted_emotion", "gold_emotion"} for d in shown)
    assert all(set(d["turn"]) == {"speaker", "dialogue"} for d in shown)
    assert not any("model-under-test" in p or "SECRET-REASONING" in p for p in prompts)


def test_the_judge_has_its_own_cache(er_instances, tmp_path):
    predictions = {i.instance_id: {"emotion": "uneasy", "intensity": 5} for i in er_instances}
    with serve(_er_script) as server:
        for _ in range(2):
            records = _records(er_instances, predictions)
            judge = _judge(server, "judge-a", tmp_path / "judge.sqlite")
            pairs = list(zip(er_instances, records))
            _run([judge], lambda j=judge, p=pairs: judge_records(p, judges=[j], task_name="er"))
            assert all(r.scores["judge_emotion"] == 2.0 for r in records)
        assert server.request_count == len(er_instances)  # the second pass came from the cache
    assert judge.stats_for("judge", "-").cache_hits == len(er_instances)


def test_invalid_answers_are_asked_again_then_counted_as_failures(er_instances, tmp_path):
    bad = er_instances[1]
    predictions = {i.instance_id: {"emotion": "uneasy", "intensity": 5} for i in er_instances[:2]}
    records = _records(er_instances[:2], predictions)
    bad_dialogue = bad.sample.row(bad.row_index).dialogue_cleaned

    def script(body: dict[str, Any]) -> Reply:
        if bad_dialogue in message_text({"messages": body["messages"][:1]}):
            return Reply.json({"emotion_score": 9})  # always out of range
        if len(body["messages"]) == 1:
            return Reply.text("Four out of five.")  # unparseable once, valid when asked again
        return Reply.json({"emotion_score": 4})

    with serve(script) as server:
        judge = _judge(server, "judge-a", tmp_path / "judge.sqlite")
        stats = _run([judge], lambda: judge_records(
            list(zip(er_instances[:2], records)), judges=[judge], task_name="er", max_attempts=3))
        retry_prompt = message_text(server.bodies[-1])
    ok, failed = records
    assert ok.scores["judge_emotion"] == 4.0 and ok.judge.judges["judge-a"].attempts == 2
    assert failed.scores["judge_emotion"] is None and failed.scores["s_er"] is None
    assert failed.scores["intensity"] is not None  # the formula needs no judge
    assert failed.judge.judges["judge-a"].status == "failed"
    assert "less than or equal to 5" in failed.judge.judges["judge-a"].error
    assert stats["judge-a"].failures == 1 and stats["judge-a"].retries == 3 and stats["judge-a"].requests == 5
    assert "could not be used" in retry_prompt
    metrics = er.TASK.aggregate(records)
    assert metrics["judge_failures"] == 1 and metrics["judged"] == 1
    assert metrics["judge_emotion"] == 4.0  # over the graded instance; the failure is counted, not zeroed


def test_request_errors_are_judge_failures(er_instances):
    predictions = {i.instance_id: {"emotion": "uneasy", "intensity": 5} for i in er_instances[:1]}
    records = _records(er_instances[:1], predictions)
    with serve(Reply.content_filter()) as server:
        judge = _judge(server, "judge-a")
        stats = _run([judge], lambda: judge_records(list(zip(er_instances[:1], records)), judges=[judge], task_name="er"))
    assert records[0].scores["judge_emotion"] is None
    assert records[0].judge.judges["judge-a"].status == "failed"
    assert stats["judge-a"].failures == 1


def test_failed_predictions_score_the_minimum_without_a_judge_call(er_instances):
    records = _records(er_instances[:2], {er_instances[0].instance_id: {"emotion": "uneasy", "intensity": 5}})
    with serve(_er_script) as server:
        judge = _judge(server, "judge-a")
        _run([judge], lambda: judge_records(list(zip(er_instances[:2], records)), judges=[judge], task_name="er"))
        assert server.request_count == 1
    failed = records[1]
    assert failed.scores == {"judge_emotion": 1.0, "intensity": 1.0, "s_er": 1.0}
    assert "parse_error" in failed.judge.note


def test_without_a_judge_scores_are_absent_not_zero(er_instances):
    predictions = {i.instance_id: {"emotion": "uneasy", "intensity": 5} for i in er_instances}
    records = _records(er_instances, predictions)
    stats = asyncio.run(judge_records(list(zip(er_instances, records)), judges=[], task_name="er"))
    assert stats == {}
    assert all(r.scores["judge_emotion"] is None and r.scores["s_er"] is None for r in records)
    assert all(r.scores["intensity"] is not None for r in records)
    assert records[0].judge.note == NO_JUDGE_NOTE
    metrics = er.TASK.aggregate(records)
    assert "judge_emotion" not in metrics and "s_er" not in metrics and "intensity" in metrics


def test_two_judges_mean_and_inter_judge_alpha(er_instances):
    predictions = {
        i.instance_id: {"emotion": i.gold["emotion"] if n % 2 else "uneasy", "intensity": 5}
        for n, i in enumerate(er_instances)
    }
    records = _records(er_instances, predictions)

    def script(body: dict[str, Any]) -> Reply:
        base = _er_script(body)
        score = json.loads(base.content)["emotion_score"]
        if body["model"] == "judge-b":
            score = max(1, score - 1)  # a stricter judge
        return Reply.json({"emotion_score": score})

    with serve(script) as server:
        judges = [_judge(server, "judge-a"), _judge(server, "judge-b")]
        stats = _run(judges, lambda: judge_records(list(zip(er_instances, records)), judges=judges, task_name="er"))
    assert set(stats) == {"judge-a", "judge-b"}
    exact = records[1]
    assert exact.judge.judges["judge-a"].scores["judge_emotion"] == 5.0
    assert exact.judge.judges["judge-b"].scores["judge_emotion"] == 4.0
    assert exact.scores["judge_emotion"] == 4.5
    metrics = er.TASK.aggregate(records)
    assert metrics["inter_judge_alpha"] is not None and 0 < metrics["inter_judge_alpha"] <= 1


def test_vp_likert_and_authors_scales(vp_instances):
    predictions = {i.instance_id: [{k: v[k] for k in ("source", "target", "viewpoint")} for v in i.gold] for i in vp_instances}
    likert = _records(vp_instances, predictions)
    authors = _records(vp_instances, predictions)
    seen: list[dict[str, Any]] = []

    def script(body: dict[str, Any]) -> Reply:
        data = _instance_data(body)
        seen.append(data)
        if "source_target_score" in message_text(body):
            return Reply.json({"source_target_score": 2, "viewpoint_score": 3, "viewpoint_total_score": 0})
        return Reply.json({"score": 4})

    with serve(script) as server:
        judge = _judge(server, "judge-a")
        _run([judge], lambda: judge_records(list(zip(vp_instances, likert)), judges=[judge], task_name="vp"))
        judge = _judge(server, "judge-a")
        _run([judge], lambda: judge_records(list(zip(vp_instances, authors)), judges=[judge], task_name="vp",
                                             scale="authors"))
    assert all(r.scores == {"judge": 4.0} for r in likert)
    assert all(
        r.scores == {"judge": authors_to_likert(2, 3), "judge_source_target": 2.0, "judge_viewpoint": 3.0,
                     "judge_total": 5.0}
        for r in authors
    )
    assert all(set(d) == {"turn", "predicted_viewpoints", "gold_viewpoints"} for d in seen)
    metrics = vp.TASK.aggregate(authors)
    assert metrics["judge_total"] == 5.0 and metrics["judge"] == pytest.approx(authors_to_likert(2, 3))


def test_bad_configuration_is_refused(er_instances):
    with pytest.raises(JudgeConfigError):
        asyncio.run(judge_records([], judges=[], task_name="itp"))
    with pytest.raises(JudgeConfigError):
        asyncio.run(judge_records([], judges=[], task_name="vp", scale="0-6"))  # type: ignore[arg-type]
    with pytest.raises(JudgeConfigError):
        judge_prompt("rpp", "likert", Turn("A", "hi"), None, None)
