"""ER and VP: checkpoint selection, prompts, parsing, scores and aggregation."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from task_factories import record_for

from rescue.data.models import Row, Sample
from rescue.metrics.intensity import intensity_score
from rescue.tasks.base import Instance, PredictionRecord, RenderOptions
from rescue.tasks.er import TASK as ER
from rescue.tasks.generative import early_cutoff, pick_evenly
from rescue.tasks.vp import TASK as VP
from rescue.tasks.vp import pair_recall


def make_row(index: int, speaker: str, text: str = "", **fields: Any) -> Row:
    return Row(
        row_index=index,
        start_time=float(index),
        end_time=index + 0.5,
        primary_speaker=speaker,
        dialogue_cleaned=text,
        **fields,
    )


def emotion(person: str, description: str, intensity: Any) -> dict[str, Any]:
    return {"person": person, "emotion_description": description, "intensity": intensity}


LONG = "I just do not know what to say to you"


def er_sample() -> Sample:
    """Ten rows: rows 1-3 fall in the early 30%; rows 4-10 test each eligibility rule."""
    rows = [make_row(i, "Ann", LONG, internal_emotion=[emotion("Ann", f"early {i}", 5)]) for i in (1, 2, 3)]
    rows += [
        make_row(4, "Ann", LONG, internal_emotion=[emotion("Ann", "hurt and unseen", 7)]),  # eligible
        make_row(5, "Therapist", LONG, internal_emotion=[emotion("Therapist", "calm", 2)]),  # therapist
        make_row(6, "Ben", "Too short here", internal_emotion=[emotion("Ben", "annoyed", 4)]),  # 3 words
        make_row(7, "Ben", LONG, internal_emotion=[emotion("Ann", "not his", 4)]),  # no speaker match
        make_row(8, "Ben", LONG, internal_emotion=[emotion("Ben", "bad", 11), emotion("Ben", "defensive", "6.4")]),
        make_row(9, "Couple", LONG, internal_emotion=[emotion("Couple", "tense", 5)]),  # group speaker
        make_row(10, "Ann", LONG, internal_emotion=[emotion("Ann", "", 5)]),  # empty description
    ]
    return Sample(sample_id="demo/er", scenario="couple", participants=["Ann", "Ben"], rows=rows)


def record(
    task: str, instance: Instance, prediction: Any, status: str = "ok", **scores: float | None
) -> PredictionRecord:
    assert task == instance.task
    return record_for(instance, prediction, status=status, scores=dict(scores))


# --- selection ---------------------------------------------------------------------------------------


def test_pick_evenly_follows_the_authors_positions():
    assert pick_evenly(list(range(10)), 5) == [0, 2, 4, 7, 9]  # round(2.25)=2, round(4.5)=4, round(6.75)=7
    assert pick_evenly(list(range(4)), 5) == [0, 1, 2, 3]
    assert pick_evenly(list(range(6)), 1) == [0]
    assert pick_evenly(list(range(6)), 0) == list(range(6))


def test_early_cutoff():
    assert early_cutoff(10, 0.3) == 3
    assert early_cutoff(11, 0.3) == 4  # ceil(3.3)
    assert early_cutoff(2, 0.3) == 1
    assert early_cutoff(1, 0.3) == 0


def test_er_checkpoint_rules():
    instances = ER.build([er_sample()])
    assert [(i.row_index, i.gold) for i in instances] == [
        (4, {"emotion": "hurt and unseen", "intensity": 7}),
        (8, {"emotion": "defensive", "intensity": 6}),  # first item with a valid 0-10 intensity
    ]
    assert instances[0].instance_id == "demo/er#row4"
    assert ER.build([er_sample()], min_dialogue_words=3)[1].row_index == 6


def test_vp_checkpoint_rules_have_no_early_cutoff():
    view = {"source": "Ann", "target": "Ben", "viewpoint": "he never listens", "attitude": "hurt"}
    rows = [
        make_row(1, "Ann", "x", viewpoints_attitudes=[view]),
        make_row(2, "Ben", "x", viewpoints_attitudes=[view]),  # source is not the speaker
        make_row(3, "Ann", "x", viewpoints_attitudes=[{**view, "target": ""}]),
        make_row(4, "Therapist", "x", viewpoints_attitudes=[{**view, "source": "Therapist"}]),
    ]
    sample = Sample(sample_id="demo/vp", scenario="family", participants=["Ann", "Ben"], rows=rows)
    instances = VP.build([sample])
    assert [(i.row_index, i.gold) for i in instances] == [(1, [view])]
    assert instances[0].extra["participants"] == ["Ann", "Ben", "Therapist"]  # speakers count, gold does not


def test_real_data_counts_match_the_protocol(real_samples):
    for task, expected in (
        (ER, {"family": (82, 17), "couple": (87, 18)}),
        (VP, {"family": (80, 17), "couple": (81, 18)}),
    ):
        instances = task.build(real_samples)
        counts = Counter(i.scenario for i in instances)
        samples = {s: len({i.sample_id for i in instances if i.scenario == s}) for s in counts}
        assert {s: (counts[s], samples[s]) for s in counts} == expected, task.name
        assert max(Counter(i.sample_id for i in instances).values()) <= 5


# --- rendering ---------------------------------------------------------------------------------------


def _checkpoints(messages: list[dict[str, str]]) -> list[dict[str, Any]]:
    assert len(messages) == 1 and messages[0]["role"] == "user"
    return json.loads(messages[0]["content"].split("Checkpoints: ", 1)[1])


@pytest.mark.parametrize("task", [ER, VP], ids=["er", "vp"])
def test_context_size_semantics(task, demo_samples):
    instance = max(task.build(demo_samples), key=lambda i: i.row_index)
    for k, expected in ((0, 0), (1, 1), (3, 3), (-1, instance.row_index - 1)):
        [checkpoint] = _checkpoints(task.render([instance], RenderOptions(context_size=k)))
        prior = [row["row_index"] for row in checkpoint["prior_context"]]
        assert prior == list(range(instance.row_index - expected, instance.row_index)), k
        assert checkpoint["current_turn"]["row_index"] == instance.row_index
    with pytest.raises(ValueError):
        task.render([instance], RenderOptions(context_size=-2))


@pytest.mark.parametrize("task", [ER, VP], ids=["er", "vp"])
def test_prompt_shows_no_gold_and_one_sample_per_batch(task, demo_samples):
    instances = task.build(demo_samples)
    by_sample: dict[str, list[Instance]] = {}
    for instance in instances:
        by_sample.setdefault(instance.sample_id, []).append(instance)
    batch = next(iter(by_sample.values()))
    for mode in ("dialogue", "audio", "visual", "audiovisual"):
        text = task.render(batch, RenderOptions(mode=mode, context_size=-1))[0]["content"]
        assert "internal_emotion" not in text and "viewpoints_attitudes" not in text
        assert f"Mode: {mode}." in text
        for instance in batch:
            golds = [instance.gold["emotion"]] if task is ER else [v["viewpoint"] for v in instance.gold]
            assert all(g not in text for g in golds)
    assert ("tone_of_voice" in task.render(batch, RenderOptions(mode="audio"))[0]["content"]) is True
    assert "tone_of_voice" not in task.render(batch, RenderOptions(mode="dialogue"))[0]["content"]
    two_samples = [group[0] for group in list(by_sample.values())[:2]]
    with pytest.raises(ValueError, match="one sample"):
        task.render(two_samples, RenderOptions())


def test_vp_prompt_lists_participants(demo_samples):
    instance = VP.build(demo_samples)[0]
    [checkpoint] = _checkpoints(VP.render([instance], RenderOptions()))
    assert checkpoint["current_turn"]["participants"] == instance.extra["participants"]
    assert "Therapist" in instance.extra["participants"]


# --- parsing -----------------------------------------------------------------------------------------


@pytest.fixture
def er_batch() -> list[Instance]:
    return ER.build([er_sample()])


@pytest.mark.parametrize("task", [ER, VP], ids=["er", "vp"])
def test_perfect_answer_round_trips(task, demo_samples):
    instances = task.build(demo_samples)
    batch = [i for i in instances if i.sample_id == instances[0].sample_id]
    predictions = task.parse(task.format_answer(batch, {i.instance_id: i.gold for i in batch}), batch)
    assert all(p.status == "ok" for p in predictions.values())
    for instance in batch:
        value = predictions[instance.instance_id].value
        if task is ER:
            assert value == instance.gold
        else:
            assert [(v["source"], v["target"], v["viewpoint"]) for v in value] == [
                (g["source"], g["target"], g["viewpoint"]) for g in instance.gold
            ]


def test_er_parse_accepts_what_models_send(er_batch):
    first, second = er_batch
    answer = (
        "Here you go:\n```json\n"
        + json.dumps(
            {
                "predictions": [
                    {
                        "checkpoint_id": "demo/er__row8",
                        "predicted_internal_emotion": "defensive",
                        "predicted_intensity_score": "7/10",
                    },
                    {"checkpoint_id": "Row 4", "emotion": ["hurt", "lonely"], "intensity": 6.6},
                ]
            }
        )
        + "\n```"
    )
    predictions = ER.parse(answer, er_batch)
    assert predictions[first.instance_id].value == {"emotion": "hurt, lonely", "intensity": 7}
    assert predictions[second.instance_id].value == {"emotion": "defensive", "intensity": 7}
    assert predictions[first.instance_id].raw == answer


def test_er_parse_failures_are_kept_with_their_reason(er_batch):
    first, second = er_batch
    predictions = ER.parse(
        json.dumps({"predictions": [{"checkpoint_id": "row4", "emotion": "sad", "intensity": 12}]}), er_batch
    )
    assert predictions[first.instance_id].status == "parse_error"
    assert "outside 0-10" in predictions[first.instance_id].error
    assert predictions[second.instance_id].status == "missing"
    predictions = ER.parse("I cannot help with that.", er_batch)
    assert {p.status for p in predictions.values()} == {"parse_error"}
    assert all(p.raw == "I cannot help with that." for p in predictions.values())
    no_emotion = ER.parse('{"checkpoint_id": "row4", "intensity": 3}', er_batch[:1])[first.instance_id]
    assert no_emotion.status == "parse_error" and "no emotion" in no_emotion.error


def test_er_parse_without_ids(er_batch):
    flat = ER.parse('{"emotion": "sad", "intensity": 3}', er_batch[:1])
    assert flat[er_batch[0].instance_id].value == {"emotion": "sad", "intensity": 3}
    ordered = ER.parse(json.dumps([{"emotion": "a", "intensity": 1}, {"emotion": "b", "intensity": 2}]), er_batch)
    assert [ordered[i.instance_id].value["emotion"] for i in er_batch] == ["a", "b"]
    by_row = ER.parse(
        json.dumps(
            [{"row_index": 8, "emotion": "b", "intensity": 2}, {"row_index": 4, "emotion": "a", "intensity": 1}]
        ),
        er_batch,
    )
    assert [by_row[i.instance_id].value["emotion"] for i in er_batch] == ["a", "b"]


def test_vp_parse_variants(demo_samples):
    instance = VP.build(demo_samples)[0]
    speaker = instance.extra["speaker"]
    one = VP.parse('{"checkpoint_id": "x", "target": "Sam", "viewpoint": "he is unfair"}', [instance])[
        instance.instance_id
    ]
    assert one.status == "ok" and one.value == [{"source": speaker, "target": "Sam", "viewpoint": "he is unfair"}]
    listed = VP.parse(
        json.dumps(
            {
                "predictions": [
                    {
                        "checkpoint_id": instance.instance_id,
                        "predicted_viewpoints": [
                            {"source": speaker, "target": "Sam", "viewpoint": "he is unfair"},
                            {"target": "", "viewpoint": "dropped"},
                        ],
                    }
                ]
            }
        ),
        [instance],
    )
    assert len(listed[instance.instance_id].value) == 1
    empty = VP.parse(json.dumps({"predictions": [{"checkpoint_id": "row1", "viewpoints": []}]}), [instance])[
        instance.instance_id
    ]
    assert empty.status in ("parse_error", "missing")


# --- scores ------------------------------------------------------------------------------------------


def test_intensity_score():
    assert [intensity_score(5, p) for p in (5, 6, 3, 9, 10, 0)] == [5.0, 4.0, 3.0, 1.0, 1.0, 1.0]
    with pytest.raises(ValueError):
        intensity_score(5, 11)


def test_one_intensity_scale():
    # rescue.metrics imports nothing from rescue, so it states the data's scale itself: the two must agree.
    from rescue.data.taxonomy import INTENSITY_SCALE
    from rescue.metrics.intensity import INTENSITY_MAX, INTENSITY_MIN
    from rescue.tasks.generative import answer_intensity, read_intensity

    assert (INTENSITY_MIN, INTENSITY_MAX) == INTENSITY_SCALE == (0, 10)
    assert read_intensity(10.4) == 10 and read_intensity(11) is None and read_intensity("7") == 7
    with pytest.raises(ValueError, match="outside 0-10"):
        answer_intensity("11/10")


def test_pair_recall():
    gold = [{"source": "Ann", "target": "Ben"}, {"source": "Ann", "target": "Therapist"}]
    assert pair_recall(gold, [{"source": "ann", "target": "BEN"}]) == 0.5
    assert pair_recall(gold, []) == 0.0


def test_er_scores_and_aggregate(er_batch):
    first, second = er_batch  # gold intensities 7 and 6
    good = record("er", first, {"emotion": "hurt", "intensity": 5})
    failed = record("er", second, None, status="parse_error")
    assert ER.instance_scores(good) == {"intensity": 3.0}
    assert ER.instance_scores(failed) == {"intensity": 1.0}
    result = ER.aggregate([good, failed])
    assert result == {"instances": 2, "failures": 1, "intensity": 2.0}
    # Judge and BERTScore keys appear when records carry them; a failure scores each key's floor.
    good.scores.update(judge_emotion=4.0, s_er=3.5, bertscore_f1=0.9)
    result = ER.aggregate([good, failed])
    assert (result["judge_emotion"], result["s_er"], result["bertscore_f1"]) == (2.5, 2.25, 0.45)
    unjudged = record("er", second, {"emotion": "x", "intensity": 6}, judge_emotion=None)
    result = ER.aggregate([good, unjudged])
    assert result["judge_emotion"] == 4.0 and result["judge_emotion_unscored"] == 1
    assert ER.aggregate([]) == {"instances": 0, "failures": 0, "intensity": None}


def test_vp_scores_and_aggregate(demo_samples):
    first, second = VP.build(demo_samples)[:2]
    gold_pairs = [{"source": v["source"], "target": v["target"], "viewpoint": "x"} for v in first.gold]
    good = record("vp", first, gold_pairs, judge=5.0)
    failed = record("vp", second, None, status="request_error")
    assert VP.instance_scores(good) == {"pair_recall": 1.0}
    result = VP.aggregate([good, failed])
    assert result == {"instances": 2, "failures": 1, "pair_recall": 0.5, "judge": 3.0}


def test_aggregate_reports_judge_counts_when_a_judge_ran(er_batch):
    first, second = er_batch
    graded = record("er", first, {"emotion": "hurt", "intensity": 7}, judge_emotion=4.0)
    graded.judge = {
        "scale": "likert",
        "judges": {"j": {"status": "ok", "scores": {"judge_emotion": 4.0}}},
        "failures": 0,
    }
    lost = record("er", second, {"emotion": "calm", "intensity": 6}, judge_emotion=None)
    lost.judge = {"scale": "likert", "judges": {"j": {"status": "failed", "error": "bad JSON"}}, "failures": 1}
    result = ER.aggregate([graded, lost])
    assert result["judge_emotion"] == 4.0 and result["judge_emotion_unscored"] == 1
    assert (result["judged"], result["judge_failures"], result["judge_request_failures"]) == (1, 1, 1)
