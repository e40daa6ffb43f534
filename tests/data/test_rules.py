"""The rulebook (rescue.data.rules): each rule on a row that breaks it, the real data breaking none, and the
three places that use it: `rescue validate` (plain and --strict), `rescue build`'s checks and the review tool
(tests/review/test_review_rules.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from _cli import invoke_main

from rescue.data.rules import RULES, RULES_BY_ID, cast_of, check_row
from rescue.data.validation import validate_path

CAST = cast_of("couple", ["Lily", "Sam"])
GOOD = {
    "row_index": 1, "start_time": 0.0, "end_time": 2.0, "primary_speaker": "Lily", "target": ["Sam"],
    "dialogue_cleaned": "You never listen.", "utterance_type": "accusation", "background_dialogue": [],
    "tone_of_voice": "sharp", "body_posture": [{"person": "Lily", "description": "leans in"}],
    "facial_expressions": [], "self_directed_behavior": [],
    "interaction_behavior": [{"initiator": "Lily", "target": ["Sam"], "description": "points"}],
    "internal_emotion": [{"person": "Lily", "emotion_description": "hurt", "intensity": 7}],
    "viewpoints_attitudes": [{"source": "Lily", "target": "Sam", "viewpoint": "he ignores me", "attitude": "resentful"}],
    "support_strategy": [],
}
THERAPIST_ROW = {**GOOD, "primary_speaker": "Therapist", "target": ["Couple"], "utterance_type": "",
                 "support_strategy": [{"provider": "Therapist", "strategy_type": "track", "target": ["Couple"],
                                       "strategy_content": "names the cycle"}]}


def breaches(row):
    return sorted((b.rule.id, b.field) for b in check_row(row, CAST))


def changed(base, **fields):
    row = copy.deepcopy(base)
    row.update(copy.deepcopy(fields))
    return row


def test_a_good_row_breaks_nothing():
    assert breaches(GOOD) == [] and breaches(THERAPIST_ROW) == []


@pytest.mark.parametrize(("row", "expected"), [
    (changed(GOOD, target=["Sam", "Lily"]), ("self-target", "target")),
    (changed(THERAPIST_ROW, support_strategy=[{"provider": "Therapist", "strategy_type": "track", "target": ["Therapist"]}]),
     ("self-target", "support_strategy[0].target")),
    (changed(GOOD, interaction_behavior=[{"initiator": "Lily", "target": ["Lily"], "description": "x"}]),
     ("self-target", "interaction_behavior[0].target")),
    (changed(GOOD, background_dialogue=[{"speaker": "Sam", "target": ["Sam"], "content": "mm"}]),
     ("self-target", "background_dialogue[0].target")),
    (changed(GOOD, viewpoints_attitudes=[{"source": "Lily", "target": "Lily", "viewpoint": "I fail", "attitude": ""}]),
     ("self-viewpoint", "viewpoints_attitudes[0].target")),
    (changed(GOOD, support_strategy=THERAPIST_ROW["support_strategy"]), ("strategy-therapist-only", "support_strategy")),
    (changed(THERAPIST_ROW, support_strategy=[{"provider": "Sam", "strategy_type": "track", "target": ["Lily"]}]),
     ("strategy-therapist-only", "support_strategy[0].provider")),
    (changed(THERAPIST_ROW, support_strategy=[{"provider": "Therapist", "strategy_type": "track", "target": ["Couple", "Sam"]}]),
     ("group-target-alone", "support_strategy[0].target")),
    (changed(GOOD, body_posture=[{"person": "", "description": ""}]), ("blank-entry", "body_posture[0]")),
    (changed(GOOD, viewpoints_attitudes=[{"source": "", "target": "", "viewpoint": "", "attitude": ""}]),
     ("blank-entry", "viewpoints_attitudes[0]")),
    (changed(THERAPIST_ROW, support_strategy=[{"provider": "Therapist", "strategy_type": "", "target": [],
                                               "strategy_content": ""}]), ("blank-entry", "support_strategy[0]")),
    (changed(THERAPIST_ROW, utterance_type="request"), ("therapist-utterance-type", "utterance_type")),
    (changed(GOOD, utterance_type=""), ("client-utterance-type", "utterance_type")),
    (changed(GOOD, target=[]), ("empty-target", "target")),
    (changed(GOOD, facial_expressions=[{"person": "Sam", "description": " "}]),
     ("empty-text", "facial_expressions[0].description")),
    (changed(GOOD, target=["Bo"]), ("closed-set", "target[0]")),
    (changed(GOOD, primary_speaker="Narrator"), ("closed-set", "primary_speaker")),
    (changed(GOOD, body_posture=[{"person": "Waiter", "description": "hovers"}]), ("cue-closed-set", "body_posture[0].person")),
    (changed(GOOD, utterance_type="rant"), ("label", "utterance_type")),
    (changed(GOOD, relation_pattern="family_feud"), ("label", "relation_pattern")),
    (changed(THERAPIST_ROW, support_strategy=[{"provider": "Therapist", "strategy_type": "boundary", "target": ["Sam"]}]),
     ("label", "support_strategy[0].strategy_type")),
    (changed(GOOD, internal_emotion=[{"person": "Lily", "emotion_description": "hurt", "intensity": 7.5}]),
     ("intensity", "internal_emotion[0].intensity")),
])
def test_each_rule_names_its_field(row, expected):
    assert expected in breaches(row)


def test_every_rule_is_tested_above_and_has_an_id_fields_severity_and_message():
    source = Path(__file__).read_text()
    for rule in RULES:
        assert rule.id and rule.fields and rule.severity in ("error", "warning") and rule.message
        assert f'("{rule.id}", ' in source, rule.id
    assert len(RULES_BY_ID) == len(RULES)


def test_a_blank_entry_is_one_breach_not_a_cascade():
    row = changed(GOOD, internal_emotion=[{"person": "", "emotion_description": "", "intensity": None}])
    assert breaches(row) == [("blank-entry", "internal_emotion[0]")]


def test_rows_of_the_wrong_shape_are_left_to_the_schema():
    assert check_row({"primary_speaker": 3, "target": "Sam", "body_posture": ["x", None]}, CAST) == []


def test_the_real_samples_and_the_demo_break_no_rule(real_data_path):
    """Real data has no breach of any rule (1,756 rows in ../shared/data/rescue/rescue_subset.jsonl)."""
    for path in (real_data_path, None):
        report = validate_path(path, strict=True)
        assert report.errors == [] and [str(i) for i in report.issues if i.rule] == []
        assert report.samples and all(s.rows for s in report.samples)


# --- rescue validate ---------------------------------------------------------------------------------------------------


def _write(tmp_path, rows, participants=("Lily", "Sam")):
    path = tmp_path / "data.jsonl"
    sample = {"sample_id": "couple/x", "scenario": "couple", "participants": list(participants), "rows": rows}
    path.write_text(json.dumps(sample) + "\n")
    return path


def test_validate_reports_new_rules_as_warnings_and_strict_makes_them_errors(tmp_path):
    rows = [changed(GOOD, target=["Sam", "Lily"]),
            changed(GOOD, row_index=2, start_time=2.0, end_time=3.0, viewpoints_attitudes=[{"source": "Sam", "target": "Sam",
                                                                               "viewpoint": "x", "attitude": "y"}]),
            changed(GOOD, row_index=3, start_time=3.0, end_time=4.0, body_posture=[{"person": "", "description": ""}]),
            changed(THERAPIST_ROW, row_index=4, start_time=4.0, end_time=5.0, support_strategy=[
                {"provider": "Therapist", "strategy_type": "track", "target": ["Therapist"]}])]
    rows[0]["support_strategy"] = copy.deepcopy(THERAPIST_ROW["support_strategy"])
    path = _write(tmp_path, rows)
    plain = invoke_main(["validate", "--data", str(path)])
    assert plain.exit_code == 0, plain.output
    assert f"{path}:1: couple/x row 1: target: self-target: Lily is the speaker and a target " \
           "[self-target: an error with --strict] (warning)" in plain.stdout
    strict = invoke_main(["validate", "--data", str(path), "--strict"])
    assert strict.exit_code == 2
    for expected in ("row 1: target: self-target: Lily is the speaker and a target",
                     "row 1: support_strategy: only Therapist rows carry a support strategy",
                     "row 2: viewpoints_attitudes[0].target: self-viewpoint: from Sam to Sam",
                     "row 3: body_posture[0]: a blank entry",
                     "row 4: support_strategy[0].target: self-target: Therapist is the provider and a target"):
        assert expected in strict.stderr, expected
    assert "error(s)" in strict.stdout and "with --strict" not in strict.stderr


def test_strict_keeps_warnings_of_rules_a_person_may_override(tmp_path):
    path = _write(tmp_path, [changed(GOOD, target=[])])
    result = invoke_main(["validate", "--data", str(path), "--strict"])
    assert result.exit_code == 0 and "row 1: target: empty target (warning)" in result.stdout


# --- rescue build ------------------------------------------------------------------------------------------------------


def test_build_checks_take_their_rules_from_the_rulebook():
    from rescue.builder.checks import check_rows
    from rescue.media import Cue

    cues = [Cue(1, 0.0, 2.0, "You never listen.", ("Lily",))]
    row = changed(GOOD, body_posture=[{"person": "", "description": ""}],
                  viewpoints_attitudes=[{"source": "Lily", "target": "Lily", "viewpoint": "x", "attitude": "y"}])
    row.pop("row_index")
    out, problems = check_rows({"rows": [row]}, cues, scenario="couple", participants=["Lily", "Sam"], clip_duration=2.0)
    found = {(p.field, p.message) for p in problems}
    expected = {(b.field, b.message) for b in check_row(out[0], CAST)}
    assert expected and expected <= found
    assert ("body_posture[0]", "a blank entry (every part empty): fill it in or remove it") in found
