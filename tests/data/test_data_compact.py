"""Samples held compactly through pydantic's public API (issue 34 item 4, issue 47 item 1): the short strings a
release repeats are one object each, rows and cues given the same field names share one set of them (so they are
read-only: a change is a copy), and a record that is assigned a field changes alone."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from rescue.data.loading import load_samples
from rescue.data.models import Row, Sample


def test_rows_and_cues_given_the_same_names_share_one_set_of_them(demo_samples):
    rows = [row for sample in demo_samples for row in sample.rows]
    cues = [cue for row in rows for cue in row.body_posture]
    assert len({id(row.model_fields_set) for row in rows}) < 20 < len(rows)
    assert len({id(cue.model_fields_set) for cue in cues}) < 5 < len(cues)


def test_a_row_is_changed_by_copy_and_the_copy_alone_changes(tmp_path):
    record = {"sample_id": "s1", "scenario": "couple", "participants": ["A", "B"], "rows": [
        {"row_index": i, "start_time": float(i), "end_time": i + 1.0, "primary_speaker": "A", "target": ["B"],
         "dialogue_cleaned": f"line {i}"} for i in (1, 2, 3)]}
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    sample = load_samples(path)[0]
    first, second = sample.rows[0], sample.rows[1]
    assert first.model_fields_set is second.model_fields_set
    before = second.model_dump(exclude_unset=True)
    with pytest.raises(ValidationError, match="frozen"):
        first.relation_pattern = "A"  # would change the names every row of the sample shares
    changed = first.model_copy(update={"relation_pattern": "A", "note": "extra"})  # a field not given, an extra
    assert "relation_pattern" in changed.model_dump(exclude_unset=True) and changed.note == "extra"
    assert "relation_pattern" not in first.model_fields_set and not hasattr(first, "note")
    assert second.model_dump(exclude_unset=True) == before and "relation_pattern" not in before
    assert Sample.model_validate(json.loads(sample.release_json())).rows[1] == second
    assert load_samples(path)[0].rows[0].model_fields_set == set(record["rows"][0])
    assert Row.model_validate(record["rows"][0]).model_fields_set == set(record["rows"][0])
    assert Row(**record["rows"][0]).model_fields_set == set(record["rows"][0])


def test_records_given_a_field_change_alone(demo_samples):
    from rescue.tasks import get_task
    from rescue.tasks.base import Prediction, make_record

    task = get_task("itp")
    first, second = (make_record(task, "m", i, Prediction(i.instance_id, "ok", value="yes", raw="yes"))
                     for i in task.build(demo_samples)[:2])
    before = second.model_dump(exclude_unset=True)
    first.scores = {"accuracy": 0.5}
    first.reasoning = "thought"  # a field neither was given
    assert "reasoning" in first.model_dump(exclude_unset=True)
    assert second.model_dump(exclude_unset=True) == before and second.reasoning is None


def test_loaded_models_share_short_strings(demo_samples):
    # A run holds every sample: the names and labels a release repeats are one object each.
    rows = [row for sample in demo_samples for row in sample.rows]
    speakers = [row.primary_speaker for row in rows if row.primary_speaker == "Therapist"]
    assert len(speakers) > 1 and len({id(s) for s in speakers}) == 1
    people = [cue.person for row in rows for cue in row.body_posture]
    assert len(people) > len(set(people)) and len({id(p) for p in people}) == len(set(people))
    targets = [t for row in rows for t in row.target]  # in lists too
    assert len({id(t) for t in targets}) == len(set(targets))
    long_text = [row.dialogue_cleaned for row in rows if len(row.dialogue_cleaned) > 200]
    assert len({id(t) for t in long_text}) == len(long_text)  # the dialogue stays each row's own


def test_a_short_string_made_in_code_is_held_once_too():
    made = [Row(row_index=1, start_time=0.0, end_time=1.0, primary_speaker="".join(["Thera", "pist"]))
            for _ in range(2)]
    assert made[0].primary_speaker is made[1].primary_speaker == "Therapist"


def test_an_extra_field_given_to_one_model_is_that_models_alone():
    from rescue.data.reading import demo_path

    samples = load_samples(demo_path())  # its own copy: the shared fixture must not be changed
    first, second = samples[0].rows[:2]
    copied = first.model_copy(update={"note": "extra"})
    assert copied.note == "extra" and copied.model_dump()["note"] == "extra"
    assert first.model_extra == {} and second.model_extra == {} and "note" not in second.model_dump()
    assert not hasattr(first, "note") and not hasattr(second, "note")
    read = Row.model_validate({**second.model_dump(), "other": 1})  # extra fields read are kept
    assert read.other == 1 and second.model_extra == {} and samples[1].rows[0].model_extra == {}


def test_a_loaded_sample_dumps_and_compares_as_read(tmp_path):
    from rescue.data.reading import demo_path

    line = next(text for text in demo_path().read_text(encoding="utf-8").splitlines() if text.strip())
    path = tmp_path / "one.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    loaded = load_samples(path)[0]
    fresh = Sample.model_validate(json.loads(line))
    assert loaded.rows == fresh.rows
    assert loaded.model_dump(exclude={"origin_file", "origin_line"}) == fresh.model_dump(
        exclude={"origin_file", "origin_line"})


def test_samples_loaded_without_their_text_are_the_same_samples():
    # rescue run loads with keep_text=False: it never exports, so it holds no compressed copy of each record.
    from rescue.data.reading import demo_path

    kept, bare = load_samples(demo_path()), load_samples(demo_path(), keep_text=False)
    assert [s.model_dump() for s in kept] == [s.model_dump() for s in bare]  # (== also compares the private text)
    assert [s.rows for s in kept] == [s.rows for s in bare]
    assert [s.origin_line for s in kept] == [s.origin_line for s in bare]
    assert all(s._release_text is None for s in bare) and all(s._release_text is not None for s in kept)
    assert json.loads(bare[0].release_json()) == json.loads(bare[0].model_dump_json(exclude_unset=True))


def test_a_loaded_model_without_extra_fields_holds_an_empty_dict_of_them(demo_samples):
    # pydantic's model_construct keeps its keyword dict, emptied of the fields, as the extra fields: sized for
    # every field (832 bytes for a row) unless cleared. At ten times the release that was 125 MB.
    import sys

    rows = [row for sample in demo_samples for row in sample.rows]
    cues = [cue for row in rows for cue in row.internal_emotion]
    assert cues and all(m.model_extra == {} and sys.getsizeof(m.model_extra) == sys.getsizeof({}) for m in [*rows, *cues])
