"""The draft checks, rule by rule: each violation is found, named, and kept (never dropped or silently
fixed); values the release cannot hold are set aside in draft_invalid so the draft still validates."""

from __future__ import annotations

import copy
import json

import pytest

from rescue.builder.checks import check_relations, check_rows, parse_draft
from rescue.builder.prompts import ROW_KEYS, annotation_system_prompt
from rescue.data.models import Row
from rescue.data.taxonomy import strategy_precedence, strategy_taxonomy
from rescue.media import Cue

CUES = [Cue(1, 0.0, 4.0, "I just wanna be better.", ("Alan",)),
        Cue(2, 5.0, 8.0, "What does better mean to you?", ("Therapist",)),
        Cue(3, 9.0, 12.0, "He never listens to me.", ("Evelyn",))]


def _row(start, end, speaker, target, text, **kw):
    row = {key: [] for key in ROW_KEYS}
    row.update(start_time=start, end_time=end, primary_speaker=speaker, target=target, dialogue_cleaned=text,
               utterance_type="" if speaker == "Therapist" else "disclosure", tone_of_voice="flat")
    row.update(kw)
    return row


GOOD = [
    _row(0.0, 4.0, "Alan", ["Therapist"], "I just wanna be better."),
    _row(5.0, 8.0, "Therapist", ["Alan"], "What does better mean to you?",
         support_strategy=[{"provider": "Therapist", "target": ["Alan"], "strategy_type": "evoke",
                            "strategy_content": "invites his hope"}]),
    _row(9.0, 12.0, "Evelyn", ["Therapist"], "He never listens to me.", utterance_type="accusation"),
]


def check(rows, duration=12.0):
    return check_rows({"rows": rows}, CUES, scenario="couple", participants=["Alan", "Evelyn"], clip_duration=duration)


def messages(problems):
    return [str(p) for p in problems]


def test_row_keys_are_release_fields():
    assert len(ROW_KEYS) == 15 and set(ROW_KEYS) <= set(Row.model_fields)


def test_a_good_draft_has_no_problems():
    rows, problems = check(copy.deepcopy(GOOD))
    assert problems == [] and [r["row_index"] for r in rows] == [1, 2, 3]


def test_split_line_still_covers_it():
    rows = copy.deepcopy(GOOD)
    rows[0:1] = [_row(0.0, 2.0, "Alan", ["Therapist"], "I just wanna"), _row(2.0, 4.0, "Alan", ["Evelyn"], "be better.")]
    assert check(rows)[1] == []


def test_missing_and_unknown_keys():
    rows = copy.deepcopy(GOOD)
    del rows[0]["tone_of_voice"]
    rows[0]["mood"] = "sad"
    out, problems = check(rows)
    assert messages(problems) == ["row 1 tone_of_voice: missing key", "row 1 mood: unknown key (not one of the 15 row keys)"]
    assert out[0]["tone_of_voice"] == "" and out[0]["draft_invalid"] == {"mood": "sad"}


def test_wrong_types_and_null_are_set_aside():
    rows = copy.deepcopy(GOOD)
    rows[0]["body_posture"] = "slumped"
    rows[1]["facial_expressions"] = None
    out, problems = check(rows)
    assert [p.field for p in problems] == ["body_posture", "facial_expressions"]
    assert out[0]["body_posture"] == [] and out[0]["draft_invalid"] == {"body_posture": "slumped"}


def test_uncovered_subtitle_line():
    rows = copy.deepcopy(GOOD)
    del rows[2]
    assert messages(check(rows)[1]) == [
        ("segment dialogue_cleaned: subtitle line [3] (9.00-12.00) 'He never listens to me.' is not quoted in full by "
        "the rows spanning it")]


def test_paraphrase_does_not_cover():
    rows = copy.deepcopy(GOOD)
    rows[2]["dialogue_cleaned"] = "He does not listen."
    assert "subtitle line [3]" in messages(check(rows)[1])[0]


def test_rows_outside_their_cue_and_past_the_clip():
    rows = copy.deepcopy(GOOD)
    rows[0]["end_time"] = 4.6  # in the silence after line 1
    rows[2]["end_time"] = 13.0
    problems = messages(check(rows, duration=12.0)[1])
    assert "row 1 end_time: 4.6 lies outside every subtitle line (rows stay inside their lines)" in problems
    assert "row 3 end_time: 13.0 is past the clip's end (12.00 s)" in problems


def test_reversed_row_times_are_kept_aside():
    rows = copy.deepcopy(GOOD)
    rows[0]["end_time"] = 0.0
    rows[0]["start_time"] = 3.0
    out, problems = check(rows)
    assert "row 1 end_time: end_time 0.0 is before start_time 3.0; shown as 3.0" in messages(problems)
    assert out[0]["end_time"] == 3.0 and out[0]["draft_invalid"]["end_time"] == 0.0


def test_self_and_empty_targets():
    rows = copy.deepcopy(GOOD)
    rows[0]["target"] = ["Alan"]
    rows[2]["target"] = []
    rows[1]["support_strategy"][0]["target"] = ["Therapist"]
    problems = messages(check(rows)[1])
    assert "row 1 target: self-target: Alan is the speaker and a target" in problems
    assert "row 3 target: empty target" in problems
    assert "row 2 support_strategy[0].target: self-target: Therapist is the provider and a target" in problems


def test_closed_entity_set():
    rows = copy.deepcopy(GOOD)
    rows[0]["target"] = ["Dr. Sue"]
    rows[2]["primary_speaker"] = "Family"
    out, problems = check(rows)
    text = messages(problems)
    assert "row 1 target: 'Dr. Sue' not one of Alan, Evelyn, Therapist, Couple" in text
    assert "row 3 primary_speaker: 'Family' is not one of Alan, Evelyn, Therapist, Couple; shown as 'Evelyn' until reviewed" in text
    assert out[2]["primary_speaker"] == "Evelyn" and out[2]["draft_invalid"]["primary_speaker"] == "Family"


def test_couple_group_target_stands_alone():
    rows = copy.deepcopy(GOOD)
    rows[1]["support_strategy"][0]["target"] = ["Couple", "Alan"]
    assert "row 2 support_strategy[0].target: Couple must be the only target item" in messages(check(rows)[1])


def test_labels_in_the_scenario_taxonomy():
    rows = copy.deepcopy(GOOD)
    rows[1]["support_strategy"][0]["strategy_type"] = "boundary"  # a family label
    rows[2]["utterance_type"] = "complaint"
    rows[1]["utterance_type"] = "request"
    out, problems = check(rows)
    text = messages(problems)
    assert "row 2 support_strategy: 'boundary' not a couple support strategy" in text
    assert "row 3 utterance_type: 'complaint' is not an utterance type" in text
    assert 'row 2 utterance_type: must be "" on a Therapist row (got \'request\')' in text
    assert out[1]["support_strategy"] == [] and out[1]["draft_invalid"]["support_strategy"][0]["strategy_type"] == "boundary"


def test_strategy_on_a_client_row():
    rows = copy.deepcopy(GOOD)
    rows[0]["support_strategy"] = copy.deepcopy(GOOD[1]["support_strategy"])
    assert "row 1 support_strategy: only Therapist rows carry a support strategy (this row's speaker is Alan)" in messages(check(rows)[1])


def test_out_of_order_rows_are_listed_in_time_order_with_a_note():
    rows = copy.deepcopy(GOOD)[::-1]
    rows[0]["target"] = ["Evelyn"]  # a problem on what becomes row 3
    out, problems = check(rows)
    assert [r["start_time"] for r in out] == [0.0, 5.0, 9.0]
    assert "row 3 target: self-target: Evelyn is the speaker and a target" in messages(problems)
    assert "segment start_time: rows were not in time order; listed by start_time" in messages(problems)


@pytest.mark.parametrize("text,expected", [
    ("", ["segment: the answer is empty"]),
    ("rows: nope", ["segment: the answer is not valid JSON (Expecting value at char 0)"]),
    ('```json\n{"rows": []}\n```', ["segment: the JSON is wrapped in a code fence"]),
    ('Sure! {"rows": []}', ["segment: text around the JSON object"]),
])
def test_output_rules(text, expected):
    assert messages(parse_draft(text)[1]) == expected


def test_relation_checks():
    rows, _ = check(copy.deepcopy(GOOD))
    answer = {"relation_patterns": [{"row_index": 2, "relation_pattern": "escalation_conflict",
                                     "relation_pattern_reason": "", "relation_pattern_evidence_rows": [1, 3]}]}
    found, problems = check_relations(answer, rows, "couple")
    assert messages(problems) == [
        "row 2 relation_pattern: 'escalation_conflict' is not a couple relation pattern",
        "row 2 relation_pattern_reason: empty reason",
        "row 2 relation_pattern_evidence_rows: row(s) [3] are not this row or earlier ones",
    ]
    assert found[2]["relation_pattern"] is None and found[2]["relation_pattern_evidence_rows"] == [1]
    assert found[2]["draft_invalid"]["relation_pattern"] == "escalation_conflict"
    _missing, problems = check_relations({"relation_patterns": []}, rows, "couple")
    assert messages(problems) == ["row 2 relation_pattern: no relation pattern for this Therapist row"]


@pytest.mark.parametrize("scenario", ["couple", "family"])
def test_prompt_takes_labels_and_precedence_from_the_taxonomy(scenario):
    prompt = annotation_system_prompt(scenario, ["Ann", "Bo"])
    for label in strategy_taxonomy(scenario).labels:
        assert f"- {label.name}: {label.definition}" in prompt
    for winner, loser in strategy_precedence(scenario):
        assert f"{winner} over {loser}" in prompt
    assert "The only names allowed anywhere are: Ann, Bo, Therapist, " + ("Couple" if scenario == "couple" else "Family") in prompt
    assert prompt.rstrip().endswith("its own time span? Are all labels from the lists above?")
    if scenario == "family":
        assert "Never use detach, evoke, goal_align: they are not family labels." in prompt
    for field in ("facial_expressions", "self_directed_behavior", "interaction_behavior", "internal_emotion",
                  "viewpoints_attitudes", "support_strategy"):
        assert field in prompt.split("must be considered on every row")[1].split("\n")[0]


# A row where every list holds an item and every name or label slot holds a valid value: the generator
# below puts a wrong value into each slot in turn (issue #20, item 3).
FULL = _row(5.0, 8.0, "Therapist", ["Alan", "Evelyn"], "What does better mean to you?",
            background_dialogue=[{"speaker": "Evelyn", "target": ["Alan"], "content": "mm"}],
            body_posture=[{"person": "Alan", "description": "leans in"}],
            facial_expressions=[{"person": "Evelyn", "description": "frowns"}],
            self_directed_behavior=[{"person": "Alan", "description": "rubs hands"}],
            interaction_behavior=[{"initiator": "Evelyn", "target": ["Alan"], "description": "turns away"}],
            internal_emotion=[{"person": "Evelyn", "emotion_description": "hurt", "intensity": 6}],
            viewpoints_attitudes=[{"source": "Evelyn", "target": "Alan", "viewpoint": "v", "attitude": "a"}],
            support_strategy=[{"provider": "Therapist", "target": ["Alan"], "strategy_type": "evoke",
                               "strategy_content": "invites his hope"}])


def _slots(value, path=()):
    """Every scalar leaf of a row except free text and times: (path, value)."""
    free = {"dialogue_cleaned", "tone_of_voice", "description", "content", "viewpoint", "attitude",
            "emotion_description", "strategy_content", "start_time", "end_time"}
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in free:
                yield from _slots(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _slots(item, (*path, i))
    else:
        yield path, value


def _wrong_values(value):
    if isinstance(value, int | float):
        return [11, -1, 7.5]
    return ["India", "Couple" if value != "Couple" else "Family", "", "therapist", "Alan "]


def _wrong_rows():
    for path, value in _slots(FULL):
        for wrong in _wrong_values(value):
            row = copy.deepcopy(FULL)
            holder = row
            for part in path[:-1]:
                holder = holder[part]
            holder[path[-1]] = wrong
            yield ".".join(map(str, path)), wrong, row


def test_every_wrong_name_or_label_anywhere_leaves_a_valid_draft():
    from rescue.data.reading import RawRecord
    from rescue.data.validation import validate_records

    cases = list(_wrong_rows())
    assert len(cases) > 60
    for where, wrong, row in cases:
        rows, _problems = check([copy.deepcopy(GOOD[0]), row, copy.deepcopy(GOOD[2])])
        record = {"sample_id": "s", "scenario": "couple", "participants": ["Alan", "Evelyn"], "rows": rows}
        errors = validate_records([RawRecord("draft", 1, record)]).errors
        assert errors == [], f"{where} = {wrong!r}: {[str(e) for e in errors]}"
        kept = rows[1].get("draft_invalid", {})
        if wrong not in ("", "Couple") and where.split(".")[0] in kept:  # what moved is kept verbatim
            assert json.dumps(wrong) in json.dumps(kept)


def test_a_nested_target_outside_the_cast_moves_to_draft_invalid():
    row = copy.deepcopy(GOOD[1])
    row["support_strategy"][0]["target"] = ["Alan", "India"]
    rows, problems = check([copy.deepcopy(GOOD[0]), row, copy.deepcopy(GOOD[2])])
    assert rows[1]["support_strategy"][0]["target"] == ["Alan"]
    assert rows[1]["draft_invalid"]["support_strategy"][0]["target"] == ["Alan", "India"]
    assert any(p.field == "support_strategy[0].target[1]" and "'India'" in p.message for p in problems)


# --- faithful to the subtitles (issue 24, item 2) -----------------------------------------------------------


def test_an_invented_sentence_is_found():
    rows = copy.deepcopy(GOOD)
    rows[0]["dialogue_cleaned"] += " And I love her more than anything."
    found = [p for p in check(rows)[1] if p.field == "dialogue_cleaned" and p.row_index == 1]
    assert found and "words not in the subtitle lines" in str(found[0]) and "anything" in str(found[0])
    reordered = copy.deepcopy(GOOD)
    reordered[0]["dialogue_cleaned"] = "Better be I just wanna."
    assert any("out of their order" in str(p) for p in check(reordered)[1])
    trimmed = copy.deepcopy(GOOD)
    trimmed[0]["dialogue_cleaned"] = "I wanna be better."  # a word left out is cleaning, not invention
    assert not [p for p in check(trimmed)[1] if p.row_index == 1]


def test_a_line_moved_to_another_speaker_is_found():
    rows = copy.deepcopy(GOOD)
    rows[2]["primary_speaker"] = "Alan"  # Evelyn's line, attributed to Alan
    rows[2]["target"] = ["Therapist"]
    assert any(p.field == "primary_speaker" and "Evelyn's" in str(p) for p in check(rows)[1])


def test_two_speakers_in_one_row_are_found():
    rows = [copy.deepcopy(GOOD[0]), copy.deepcopy(GOOD[1])]
    rows[0].update(end_time=8.0, dialogue_cleaned="I just wanna be better. What does better mean to you?")
    problems = check(rows[:1], duration=12.0)[1]
    assert any("start a new row at every speaker change" in str(p) for p in problems)


@pytest.mark.parametrize("field, value", [("tone_of_voice", "N/A"), ("tone_of_voice", "unknown"),
                                          ("tone_of_voice", "none.")])
def test_placeholders_are_found(field, value):
    rows = copy.deepcopy(GOOD)
    rows[0][field] = value
    assert any(p.field == field and "placeholder" in str(p) for p in check(rows)[1])


def test_empty_evidence_is_found():
    rows = copy.deepcopy(GOOD)
    rows[2]["viewpoints_attitudes"] = [{"source": "Evelyn", "target": "Alan", "viewpoint": "", "attitude": "hurt"}]
    assert any(p.field == "viewpoints_attitudes[0].viewpoint" and "empty" in str(p) for p in check(rows)[1])
    rows[2]["viewpoints_attitudes"][0]["viewpoint"] = "N/A"
    assert any("placeholder" in str(p) for p in check(rows)[1])
