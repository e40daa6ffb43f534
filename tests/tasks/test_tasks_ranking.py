"""RPP, STP and SSP: instances, prompts, parsing without padding or gold fallbacks, rank metrics."""

from __future__ import annotations

import json

import pytest
from task_factories import batches, make_sample, strategy, to_records

from rescue.errors import RescueError
from rescue.data.taxonomy import COUPLE_RELATION, FAMILY_RELATION
from rescue.tasks import get_task, scoped_aggregates
from rescue.tasks.base import RenderOptions

RPP, STP, SSP = get_task("rpp"), get_task("stp"), get_task("ssp")
T = "Therapist"


def items_of(messages):
    return json.loads(messages[0]["content"].split("Items:\n", 1)[1])


# --- RPP -------------------------------------------------------------------------------------------------


def rpp_sample(**kwargs):
    return make_sample(
        [
            {"speaker": "Ann", "relation_pattern": "pursue_withdraw"},
            {"speaker": T, "relation_cycle_state": "attack_attack"},
            {"speaker": "Ben", "relation_pattern": "  Attack_Attack  "},  # not an exact label: dropped
            {"speaker": "Ann", "relation_pattern": "escalation_conflict"},  # family label in a couple: dropped
            {"speaker": T, "relation_pattern": "", "relation_cycle_state": "repair_softening", "text": "HIDDEN TURN"},
            {"speaker": "Ben", "relation_pattern": "repair_softening"},
        ],
        **kwargs,
    )


def test_rpp_gold_field_is_selectable():
    sample = rpp_sample()
    by_field = {
        gold: [(i.row_index, i.gold) for i in RPP.build([sample], rpp_gold=gold)]
        for gold in ("auto", "relation_pattern", "relation_cycle_state")
    }
    assert by_field["relation_pattern"] == [(1, "pursue_withdraw"), (6, "repair_softening")]
    assert by_field["relation_cycle_state"] == [(2, "attack_attack"), (5, "repair_softening")]
    assert by_field["auto"] == by_field["relation_pattern"]  # the sample has relation_pattern
    only_cycle = make_sample([{"speaker": "Ann"}, {"speaker": T, "relation_cycle_state": "withdraw_withdraw"}])
    assert [i.gold for i in RPP.build([only_cycle])] == ["withdraw_withdraw"]  # auto falls back per sample
    assert RPP.build([only_cycle], rpp_gold="relation_pattern") == []
    with pytest.raises(RescueError, match="relation_cycle_state"):
        RPP.build([sample], rpp_gold="pattern")


def test_rpp_prompt_hides_the_target_row_and_lists_the_taxonomy():
    sample = rpp_sample()
    instance = RPP.build([sample], rpp_gold="relation_cycle_state")[1]  # row 5, gold repair_softening
    text = RPP.render([instance], RenderOptions())[0]["content"]
    assert "HIDDEN TURN" not in text
    assert all(f"- {name}:" in text for name in COUPLE_RELATION.names)
    assert "escalation_conflict" not in text
    [item] = items_of(RPP.render([instance], RenderOptions()))
    assert item["id"] == "row5" and item["target_speaker"] == T
    assert [r["row_index"] for r in item["prior_context"]] == [1, 2, 3, 4]  # default k = -1: all earlier rows
    assert [
        r["row_index"] for r in items_of(RPP.render([instance], RenderOptions(context_size=2)))[0]["prior_context"]
    ] == [3, 4]
    for row in item["prior_context"]:
        assert not {"relation_pattern", "relation_cycle_state", "support_strategy", "internal_emotion"} & set(row)


def test_rpp_parsing_normalises_without_padding():
    batch = RPP.build([rpp_sample()])
    raw = json.dumps(
        {
            "predictions": [
                {
                    "id": "row1",
                    "relation_top3": [
                        "Pursue-Withdraw",
                        "demand withdraw",
                        "ATTACK ATTACK (mutual blame)",
                        "mixed_transition",
                    ],
                },
                {"turn_id": "row6", "relation_top3": "repair softening"},
            ]
        }
    )
    parsed = RPP.parse(raw, batch)
    # The synonym repeats pursue_withdraw: de-duplicated, then cut at 3.
    assert parsed[batch[0].instance_id].value == ["pursue_withdraw", "attack_attack", "mixed_transition"]
    assert parsed[batch[1].instance_id].value == ["repair_softening"]  # never padded
    bad = RPP.parse('{"predictions": [{"id": "row1", "relation_top3": ["pursue_withdraw", "enmeshment"]}]}', batch)
    assert bad[batch[0].instance_id].status == "parse_error" and "enmeshment" in bad[batch[0].instance_id].error
    assert bad[batch[1].instance_id].status == "missing"
    # A family-only label is unknown in a couple sample, even through a synonym.
    family_only = RPP.parse('{"predictions": [{"id": "row1", "relation_top3": ["coalition"]}]}', batch[:1])
    assert family_only[batch[0].instance_id].status == "parse_error"


def test_rpp_failures_score_as_wrong_never_as_gold():
    batch = RPP.build([rpp_sample()])
    records = to_records(RPP, batch, RPP.parse("the model refused", batch))
    assert all(r.status == "parse_error" and r.prediction is None for r in records)
    assert all(
        r.scores == {"recall_at_1": 0.0, "recall_at_2": 0.0, "recall_at_3": 0.0, "mrr": 0.0, "rank": 0.0}
        for r in records
    )
    result = RPP.aggregate(records)
    assert result["accuracy"] == 0.0 and result["macro_f1"] == 0.0 and result["failures"] == 2


def test_rpp_metrics_by_hand():
    batch = RPP.build([rpp_sample()])  # gold: pursue_withdraw, repair_softening
    answer = RPP.format_answer(
        batch, {batch[0].instance_id: ["pursue_withdraw"], batch[1].instance_id: ["attack_attack", "repair_softening"]}
    )
    records = to_records(RPP, batch, RPP.parse(answer, batch))
    result = RPP.aggregate(records)
    assert result["accuracy"] == result["recall_at_1"] == 0.5
    assert result["recall_at_2"] == 1.0 and result["mrr"] == pytest.approx((1 + 0.5) / 2)
    # Top-1: pursue_withdraw P=R=F=1; attack_attack predicted once, wrong: 0; repair_softening missed: 0;
    # the other three couple labels: 0. Macro over the 6 couple labels.
    assert result["macro_precision"] == pytest.approx(1 / 6)
    assert result["macro_recall"] == pytest.approx(1 / 6)
    assert result["macro_f1"] == pytest.approx(1 / 6)
    table = RPP.label_table(records)
    assert list(table) == COUPLE_RELATION.names and table["attack_attack"]["predicted"] == 1
    assert RPP.confusion(records)["repair_softening"]["attack_attack"] == 1


def test_rpp_pooled_macro_uses_the_union_of_taxonomies():
    couple = rpp_sample()
    family = make_sample(
        [{"speaker": "Kid"}, {"speaker": T, "relation_pattern": "escalation_conflict"}],
        scenario="family",
        participants=("Kid", "Mum", "Dad"),
        sample_id="fam/s1",
    )
    batch_c, batch_f = RPP.build([couple]), RPP.build([family])
    values = {i.instance_id: [i.gold] for i in batch_c + batch_f}
    records = to_records(RPP, batch_c, RPP.parse(RPP.format_answer(batch_c, values), batch_c))
    records += to_records(RPP, batch_f, RPP.parse(RPP.format_answer(batch_f, values), batch_f))
    union = list(dict.fromkeys(COUPLE_RELATION.names + FAMILY_RELATION.names))
    assert len(union) == 11
    scopes = scoped_aggregates(RPP, records)
    assert scopes["all"]["accuracy"] == 1.0
    assert scopes["all"]["macro_recall"] == pytest.approx(3 / 11)  # 3 labels seen and right, of 11
    assert scopes["couple"]["macro_recall"] == pytest.approx(2 / 6)
    assert scopes["family"]["macro_recall"] == pytest.approx(1 / 8)
    assert set(scopes["samples"]) == {"pair/s1", "fam/s1"} and scopes["samples"]["fam/s1"]["instances"] == 1


# --- STP / SSP -------------------------------------------------------------------------------------------


def support_sample(scenario="couple", participants=("Ann", "Ben"), sample_id="pair/s1"):
    return make_sample(
        [
            {"speaker": "Ann"},
            {"speaker": T, "support_strategy": [strategy("track", "Ann", "Ben")], "text": "HIDDEN ONE"},
            {"speaker": "Ben"},
            {"speaker": T, "target": ["Ben"], "support_strategy": [strategy("evoke", "Therapist")]},  # row target
            {"speaker": T, "support_strategy": [strategy("", "Ann"), strategy("join", "Ann")]},  # first has no type
            {"speaker": T, "support_strategy": [strategy("lecture", "Ann")]},  # not a strategy label
            {"speaker": T, "support_strategy": [strategy("join", "Zed")]},  # not a participant: unresolvable
            {"speaker": "Ann", "support_strategy": [strategy("join", "Ben")]},  # not a therapist row
        ],
        scenario=scenario,
        participants=participants,
        sample_id=sample_id,
    )


def test_stp_instances_resolve_targets():
    instances = STP.build([support_sample()])
    assert [(i.row_index, i.gold, i.extra["gold_source"]) for i in instances] == [
        (2, "Couple", "support_strategy"),  # two people -> the group label
        (4, "Ben", "row_target"),  # only the therapist named -> the row's target
        (6, "Ann", "support_strategy"),  # STP does not check the strategy type against the taxonomy
    ]
    assert instances[0].labels == ["Ann", "Ben", "Couple"]


def test_ssp_instances_need_a_taxonomy_strategy_and_show_the_target():
    instances = SSP.build([support_sample()])
    assert [(i.row_index, i.gold, i.extra["support_target"]) for i in instances] == [
        (2, "track", "Couple"),
        (4, "evoke", "Ben"),
    ]
    [first, second] = items_of(SSP.render(instances, RenderOptions(context_size=1)))
    assert first == {"id": "row2", "support_target": "Couple", "prior_context": first["prior_context"]}
    assert [r["row_index"] for r in second["prior_context"]] == [3]
    text = SSP.render(instances, RenderOptions())[0]["content"]
    assert "- goal_align:" in text and "- boundary:" not in text  # couple taxonomy only


def test_stp_prompt_does_not_show_the_therapist_turn():
    instance = STP.build([support_sample()])[0]
    text = STP.render([instance], RenderOptions(context_size=-1))[0]["content"]
    assert "HIDDEN ONE" not in text
    assert "- Couple:" in text and "- Ann:" in text


def test_stp_group_synonyms_only_within_the_scenario():
    couple = STP.build([support_sample()])[:1]
    parsed = STP.parse('{"predictions": [{"id": "row2", "target_top3": ["both partners", "ann", "BEN"]}]}', couple)
    assert parsed[couple[0].instance_id].value == ["Couple", "Ann", "Ben"]
    family = STP.build([support_sample("family", ("Ann", "Ben", "Cal"), "fam/s2")])[:1]
    assert family[0].gold == "Family" and family[0].labels == ["Ann", "Ben", "Cal", "Family"]
    ok = STP.parse('{"predictions": [{"id": "row2", "target_top3": ["the whole family", "Cal"]}]}', family)
    assert ok[family[0].instance_id].value == ["Family", "Cal"]
    ambiguous = STP.parse('{"predictions": [{"id": "row2", "target_top3": ["both", "Cal"]}]}', family)
    assert ambiguous[family[0].instance_id].status == "parse_error"


def test_ssp_synonyms_and_scores():
    instances = SSP.build([support_sample()])
    raw = '{"predictions": [{"id": "row2", "strategy_top3": ["Tracking", "goal alignment"]}, {"id": "row4", "strategy_top3": ["join", "reframe", "evoke"]}]}'
    records = to_records(SSP, instances, SSP.parse(raw, instances))
    assert records[0].prediction == ["track", "goal_align"]
    assert [r.scores["rank"] for r in records] == [1.0, 3.0]
    result = SSP.aggregate(records)
    assert result == {
        "instances": 2,
        "failures": 0,
        "recall_at_1": 0.5,
        "recall_at_2": 0.5,
        "recall_at_3": 1.0,
        "mrr": pytest.approx((1 + 1 / 3) / 2),
    }


# --- real and demo data ----------------------------------------------------------------------------------


def count(instances, scenario):
    chosen = [i for i in instances if i.scenario == scenario]
    return len(chosen), len({i.sample_id for i in chosen})


def test_real_data_counts(real_samples):
    assert count(RPP.build(real_samples), "family") == (525, 17)  # Table 6, through relation_pattern
    assert count(RPP.build(real_samples, rpp_gold="relation_pattern"), "family") == (525, 17)
    assert count(RPP.build(real_samples, rpp_gold="relation_cycle_state"), "family") == (431, 15)
    assert count(RPP.build(real_samples), "couple") == (151, 18)  # 110 relation_pattern + 41 gianni_and_matthew
    assert count(RPP.build(real_samples, rpp_gold="relation_cycle_state"), "couple") == (155, 18)
    for task in (STP, SSP):
        instances = task.build(real_samples)
        assert count(instances, "family") == (347, 17)
        assert count(instances, "couple") == (111, 18)
        assert all(i.gold in i.labels for i in instances)


@pytest.mark.parametrize("name", ["rpp", "stp", "ssp"])
def test_demo_data_round_trip(name, demo_samples):
    task = get_task(name)
    instances = task.build(demo_samples)
    assert {i.scenario for i in instances} == {"couple", "family"}
    assert len({i.instance_id for i in instances}) == len(instances)
    records = []
    for batch in batches(instances, task.default_batch_size):
        for mode in ("dialogue", "audiovisual"):
            assert task.render(batch, RenderOptions(mode=mode))[0]["content"]
        # Answer from the rendered prompt: its item ids, each with the gold of the row the id names, and check
        # that the context shown for an item ends right before that row.
        [message] = task.render(batch, RenderOptions())
        items = json.loads(message["content"].split("Items:\n", 1)[1])
        gold_by_row = {i.row_index: i.gold for i in batch}
        assert [item["id"] for item in items] == [f"row{i.row_index}" for i in batch]
        answers = []
        for item in items:
            row = int(item["id"].removeprefix("row"))
            shown = [c["row_index"] for c in item["prior_context"]]
            assert shown == list(range(row - len(shown), row))
            answers.append({"id": item["id"], task.answer_key: [gold_by_row[row]]})
        records += to_records(task, batch, task.parse(json.dumps({"predictions": answers}), batch))
    scopes = scoped_aggregates(task, records)
    assert scopes["all"]["recall_at_1"] == 1.0 and scopes["all"]["failures"] == 0
    assert scopes["couple"]["instances"] + scopes["family"]["instances"] == len(instances)


def test_answers_keyed_by_id_are_accepted():
    batch = RPP.build([rpp_sample()])
    parsed = RPP.parse('{"row1": ["attack_attack"], "row6": {"relation_top3": ["repair_softening"]}}', batch)
    assert [parsed[i.instance_id].value for i in batch] == [["attack_attack"], ["repair_softening"]]
    nested = RPP.parse('{"predictions": {"row6": "mixed_transition"}}', batch)
    assert nested[batch[1].instance_id].value == ["mixed_transition"]
    assert nested[batch[0].instance_id].status == "missing"
