"""Samples held compactly (issue 34 item 4): the models of a loaded sample share one set of field names per
distinct set, and a model that is assigned a field takes its own copy, so no other model changes."""

from __future__ import annotations

import json

from rescue.data.loading import load_samples
from rescue.data.models import Row, Sample, _SharedFields


def test_loaded_rows_share_their_field_name_sets(demo_samples):
    rows = [row for sample in demo_samples for row in sample.rows]
    sets = {id(row.__pydantic_fields_set__) for row in rows}
    assert len(sets) < 20 < len(rows)
    assert all(type(row.__pydantic_fields_set__) is _SharedFields for row in rows)


def test_assigning_a_field_changes_that_model_only(tmp_path):
    record = {"sample_id": "s1", "scenario": "couple", "participants": ["A", "B"], "rows": [
        {"row_index": i, "start_time": float(i), "end_time": i + 1.0, "primary_speaker": "A", "target": ["B"],
         "dialogue_cleaned": f"line {i}"} for i in (1, 2, 3)]}
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    sample = load_samples(path)[0]
    first, second = sample.rows[0], sample.rows[1]
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    before = second.model_dump(exclude_unset=True)
    first.relation_pattern = "A"  # a field the record did not give
    first.note = "extra"  # an extra field
    assert "relation_pattern" in first.model_dump(exclude_unset=True)
    assert second.model_dump(exclude_unset=True) == before and "relation_pattern" not in before
    assert Sample.model_validate(json.loads(sample.release_json())).rows[1] == second
    assert load_samples(path)[0].rows[0].__pydantic_fields_set__ == set(record["rows"][0])
    assert Row.model_validate(record["rows"][0]).__pydantic_fields_set__ == set(record["rows"][0])


def test_records_share_their_field_sets_until_one_is_assigned(demo_samples):
    from rescue.tasks import get_task
    from rescue.tasks.base import Prediction, make_record

    task = get_task("itp")
    first, second = (make_record(task, "m", i, Prediction(i.instance_id, "ok", value="yes", raw="yes"))
                     for i in task.build(demo_samples)[:2])
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    before = second.model_dump(exclude_unset=True)
    first.scores = {"accuracy": 0.5}
    first.reasoning = "thought"  # a field neither was given
    assert first.__pydantic_fields_set__ is not second.__pydantic_fields_set__
    assert "reasoning" in first.model_dump(exclude_unset=True)
    assert second.model_dump(exclude_unset=True) == before and second.reasoning is None


def test_loaded_models_share_short_strings_and_one_empty_extras_dict(demo_samples):
    # A run holds every sample: the names and labels a release repeats are one object each, and the models
    # without extra fields share one empty dict of them.
    from rescue.data.models import _NoExtra

    rows = [row for sample in demo_samples for row in sample.rows]
    speakers = [row.primary_speaker for row in rows if row.primary_speaker == "Therapist"]
    assert len(speakers) > 1 and len({id(s) for s in speakers}) == 1
    cues = [cue for row in rows for cue in row.body_posture]
    assert cues and len({id(m.__pydantic_extra__) for m in [*rows, *cues]}) == 1
    assert all(type(m.__pydantic_extra__) is _NoExtra and m.__pydantic_extra__ == {} for m in [*rows, *cues])
    long_text = [row.dialogue_cleaned for row in rows if len(row.dialogue_cleaned) > 200]
    assert len({id(t) for t in long_text}) == len(long_text)  # the dialogue stays each row's own


def test_an_extra_field_given_to_one_model_is_that_models_alone():
    from rescue.data.reading import demo_path

    samples = load_samples(demo_path())  # its own copy: the shared fixture must not be changed
    first, second = samples[0].rows[:2]
    assert first.__pydantic_extra__ is second.__pydantic_extra__
    first.note = "extra"
    assert first.note == "extra" and first.model_dump()["note"] == "extra"
    assert second.__pydantic_extra__ == {} and "note" not in second.model_dump()
    assert not hasattr(second, "note")
    copied = second.model_copy(update={"other": 1})
    assert copied.other == 1 and second.__pydantic_extra__ == {} and samples[1].rows[0].__pydantic_extra__ == {}


def test_a_compacted_sample_dumps_and_compares_as_read(tmp_path):
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
