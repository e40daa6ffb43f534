"""ITP: instances, prompts without gold leaks, parsing, scoring; counts on the real data."""

from __future__ import annotations

import json

import pytest
from task_factories import batches, make_sample, to_records

from rescue.errors import RescueError
from rescue.tasks import get_task
from rescue.tasks.base import RenderOptions
from rescue.tasks.itp import decision_rows, even_sample

ITP = get_task("itp")
T = "Therapist"


def speakers_sample(*speakers: str, **kwargs):
    return make_sample([{"speaker": s, "text": f"row {i} says something"} for i, s in enumerate(speakers, 1)], **kwargs)


def test_even_sample_matches_the_authors_rule():
    assert even_sample(list(range(10)), 4) == [0, 3, 6, 9]
    assert even_sample(list(range(6)), 3) == [0, 2, 5]  # 2.5 rounds half to even
    assert even_sample(list(range(5)), 1) == [2]  # the middle item
    assert even_sample([1, 2], 5) == [1, 2]
    assert even_sample([1, 2, 3], 0) == [1, 2, 3]


def test_decision_rows_and_balanced_instances():
    sample = speakers_sample("Ann", "Ben", T, "Ann", "Ann", T, "Ben")
    assert decision_rows(sample) == ([2, 5], [1, 4])
    instances = ITP.build([sample])
    assert [(i.instance_id, i.gold) for i in instances] == [
        ("pair/s1#after_row1", "no"),
        ("pair/s1#after_row2", "yes"),
        ("pair/s1#after_row4", "no"),
        ("pair/s1#after_row5", "yes"),
    ]


def test_the_larger_class_is_sampled_down_evenly():
    sample = speakers_sample("Ann", "Ben", "Ann", "Ben", "Ann", T, "Ben", "Ann")
    assert decision_rows(sample) == ([5], [1, 2, 3, 4, 7])
    assert [(i.row_index, i.gold) for i in ITP.build([sample])] == [(3, "no"), (5, "yes")]
    assert ITP.build([speakers_sample("Ann", "Ben", "Ann")]) == []  # no therapist entry: nothing


def test_cap_per_class():
    sample = speakers_sample(*(["Ann", T] * 4 + ["Ann", "Ben"] * 4))
    assert len(ITP.build([sample])) == 8
    assert len(ITP.build([sample], itp_max_per_class=2)) == 4


def test_prompt_hides_the_gold_and_the_next_turn():
    sample = speakers_sample("Ann", "Ben", T, "Ann", "Ann", T, "Ben")
    instances = ITP.build([sample])
    # Row numbers of the data itself, not of the instance: a decision row shifted onto the therapist's turn
    # (and the context with it) would still be consistent with instance.row_index.
    expected = {"after_row1": (1, []), "after_row2": (2, [1]), "after_row4": (4, [1, 2, 3]), "after_row5": (5, [2, 3, 4])}
    assert [(i.instance_id.split("#")[1], i.row_index) for i in instances] == [(k, v[0]) for k, v in expected.items()]
    for instance in instances:
        text = ITP.render([instance], RenderOptions())[0]["content"]
        for leak in ("pos", "neg", "candidate_type", "boundary", "therapist_entry", "continue_listening"):
            assert leak not in text.lower().replace("position", "")
        [item] = json.loads(text.split("Items:\n", 1)[1])
        row, context = expected[item["id"]]
        decision = item["decision_row"]
        assert (decision["row_index"], decision["dialogue_cleaned"]) == (row, f"row {row} says something")
        assert decision["primary_speaker"] != T
        assert [c["row_index"] for c in item["prior_context"]] == context
        assert [c["dialogue_cleaned"] for c in item["prior_context"]] == [f"row {c} says something" for c in context]
        assert f"row {row + 1} says" not in text  # the next turn is never shown
    message = ITP.render(instances, RenderOptions(mode="dialogue", context_size=0))
    assert len(message) == 1 and message[0]["role"] == "user"
    items = json.loads(message[0]["content"].split("Items:\n", 1)[1])
    assert [item["id"] for item in items] == ["after_row1", "after_row2", "after_row4", "after_row5"]
    assert all(item["prior_context"] == [] for item in items)
    assert "Group label: Couple" in message[0]["content"]


def test_context_size_semantics():
    sample = speakers_sample("Ann", "Ben", "Ann", "Ben", "Ann", T, "Ben", "Ann")
    instance = next(i for i in ITP.build([sample]) if i.row_index == 5)

    def context(k):
        content = ITP.render([instance], RenderOptions(context_size=k))[0]["content"]
        item = json.loads(content.split("Items:\n", 1)[1])[0]
        assert item["decision_row"]["row_index"] == 5
        return [row["row_index"] for row in item["prior_context"]]

    assert context(None) == [2, 3, 4]  # default k = 3: the rows before the decision row, which is not repeated
    assert context(-1) == [1, 2, 3, 4]
    assert context(1) == [4]


def test_modes_choose_the_cues():
    sample = make_sample(
        [
            {
                "speaker": "Ann",
                "tone_of_voice": "sharp",
                "facial_expressions": [{"person": "Ann", "description": "frowns"}],
            },
            {"speaker": T},
            {"speaker": "Ann"},
            {"speaker": "Ben"},
        ]
    )
    batch = ITP.build([sample])[:1]
    text = {
        m: ITP.render(batch, RenderOptions(mode=m))[0]["content"]
        for m in ("dialogue", "audio", "visual", "audiovisual")
    }
    assert "sharp" not in text["dialogue"] and "frowns" not in text["dialogue"]
    assert "sharp" in text["audio"] and "frowns" not in text["audio"]
    assert "frowns" in text["visual"] and "sharp" not in text["visual"]
    assert "frowns" in text["audiovisual"] and "sharp" in text["audiovisual"]


@pytest.fixture()
def four():
    return ITP.build([speakers_sample("Ann", "Ben", T, "Ann", "Ann", T, "Ben")])


def test_parse_is_robust_to_what_models_send(four):
    raw = (
        "Sure! Here is my answer:\n```json\n"
        '{"predictions": [{"id": "after_row1", "should_speak": "No"}, {"id": "pair/s1#after_row2", "should_speak": true},'
        ' {"id": "After Row 4", "should_speak": " NO "}, {"id": "5", "should_speak": "speak"}]}\n```'
    )
    parsed = ITP.parse(raw, four)
    assert [parsed[i.instance_id].value for i in four] == ["no", "yes", "no", "yes"]
    assert all(p.status == "ok" and p.raw == raw for p in parsed.values())


def test_parse_failures_are_recorded_not_defaulted(four):
    raw = (
        '{"predictions": [{"id": "after_row1", "should_speak": "maybe"}, {"id": "after_row2", "should_speak": "yes"}]}'
    )
    parsed = ITP.parse(raw, four)
    assert parsed[four[0].instance_id].status == "parse_error" and "maybe" in parsed[four[0].instance_id].error
    assert parsed[four[1].instance_id].status == "ok"
    assert parsed[four[2].instance_id].status == "missing" and parsed[four[2].instance_id].value is None
    assert {p.status for p in ITP.parse("I cannot help with that.", four).values()} == {"parse_error"}
    single = ITP.parse('{"should_speak": "no"}', four[:1])  # a flat item answers a one-instance batch
    assert single[four[0].instance_id].value == "no"


def test_scoring_failures_as_wrong(four):
    # gold: no, yes, no, yes. Answers: right, wrong (no), failed, right.
    raw = '{"predictions": [{"id": "after_row1", "should_speak": "no"}, {"id": "after_row2", "should_speak": "no"}, {"id": "after_row5", "should_speak": "yes"}]}'
    records = to_records(ITP, four, ITP.parse(raw, four))
    assert [r.scores["correct"] for r in records] == [1.0, 0.0, 0.0, 1.0]
    result = ITP.aggregate(records)
    assert result["instances"] == 4 and result["failures"] == 1
    assert result["precision"] == 1.0 and result["recall"] == 0.5
    assert result["f1"] == pytest.approx(2 / 3)
    assert result["accuracy"] == 0.5
    assert result["balanced_accuracy"] == pytest.approx((0.5 + 0.5) / 2)
    assert ITP.aggregate([])["f1"] is None and ITP.aggregate([])["instances"] == 0


def test_format_answer_round_trips(four):
    values = {i.instance_id: i.gold for i in four}
    records = to_records(ITP, four, ITP.parse(ITP.format_answer(four, values), four))
    assert ITP.aggregate(records)["f1"] == 1.0


def test_real_data_counts(real_samples):
    instances = ITP.build(real_samples)
    family = [i for i in instances if i.scenario == "family"]
    couple = [i for i in instances if i.scenario == "couple"]
    assert (len(family), len({i.sample_id for i in family})) == (284, 16)  # paper Table 6
    assert (len(couple), len({i.sample_id for i in couple})) == (268, 18)
    for sample_id in {i.sample_id for i in instances}:
        golds = [i.gold for i in instances if i.sample_id == sample_id]
        assert golds.count("yes") == golds.count("no")
    assert len({i.instance_id for i in instances}) == len(instances)


def test_demo_data_round_trip(demo_samples):
    instances = ITP.build(demo_samples)
    assert {i.scenario for i in instances} == {"couple", "family"}
    records = []
    for batch in batches(instances, ITP.default_batch_size):
        # Answer as a perfect reader of the prompt would: from each item's decision row as rendered, look up in
        # the data whether the therapist speaks next, and answer under the item's id from the prompt.
        [message] = ITP.render(batch, RenderOptions(mode="audiovisual"))
        items = json.loads(message["content"].split("Items:\n", 1)[1])
        rows = batch[0].sample.rows
        assert [item["id"] for item in items] == [i.instance_id.split("#")[1] for i in batch]
        answers = []
        for item in items:
            shown = item["decision_row"]["row_index"]
            assert item["decision_row"]["dialogue_cleaned"] == rows[shown - 1].dialogue_cleaned
            assert "tone_of_voice" in item["decision_row"]  # the audiovisual cues are there
            answers.append({"id": item["id"], "should_speak": "yes" if rows[shown].is_therapist else "no"})
        records += to_records(ITP, batch, ITP.parse(json.dumps({"predictions": answers}), batch))
    assert len(records) == len(instances)
    assert ITP.aggregate(records)["accuracy"] == 1.0


def test_invalid_context_size_is_a_clear_error(four):
    with pytest.raises(RescueError, match="context size -2 is invalid"):
        ITP.render(four, RenderOptions(context_size=-2))
