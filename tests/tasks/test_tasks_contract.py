"""The tasks' reading of answers and gold, by hand: every key and synonym, the skipped and the defaulted parts,
the exact messages of a rejected answer, and discovery's errors (gaps mutation testing found in tasks/;
see docs/mutation.md)."""

from __future__ import annotations

import json

import pytest

from rescue.tasks import TASKS, get_task
from rescue.tasks.base import Instance
from rescue.tasks.vp import pair_recall, viewpoint_items, viewpoint_texts

VP = get_task("vp")
ER = get_task("er")


def test_viewpoint_items_reads_every_shape():
    views = [{"source": " Ann ", "target": "Ben ", "viewpoint": " he never listens ", "attitude": " hurt "},
             {"source": "Ben", "target": "Ann", "viewpoint": "  "},  # empty: skipped
             "not a viewpoint",  # skipped
             {"viewpoint": "no pair"}]
    expected = [{"source": "Ann", "target": "Ben", "viewpoint": "he never listens"},
                {"source": "", "target": "", "viewpoint": "no pair"}]
    assert viewpoint_items(views) == expected
    assert viewpoint_items({"viewpoints": views}) == expected
    assert viewpoint_items({"predicted_viewpoints": views}) == expected
    assert viewpoint_items({"viewpoints": [], "predicted_viewpoints": views}) == expected  # the first non-empty
    assert viewpoint_items(views[0]) == expected[:1]  # one flat viewpoint
    assert viewpoint_items(None) == [] and viewpoint_items([]) == []
    with_attitude = viewpoint_items(views, with_attitude=True)
    assert with_attitude[0] == {**expected[0], "attitude": "hurt"}
    assert with_attitude[1] == expected[1]  # no attitude given: no key
    assert viewpoint_items([{**views[0], "attitude": " "}], with_attitude=True) == expected[:1]
    assert viewpoint_texts({"viewpoints": views}) == ["he never listens", "no pair"]


def test_pair_recall_ignores_case_and_space_and_counts_pairs():
    gold = [{"source": "Ann", "target": "Ben", "viewpoint": "x"}, {"source": "Ben", "target": "Ann", "viewpoint": "y"}]
    assert pair_recall(gold, [{"source": " ann", "target": "BEN "}]) == 0.5
    assert pair_recall(gold, [{"source": "Ben", "target": "Ann"}, {"source": "Ann", "target": "Ben"}]) == 1.0
    assert pair_recall(gold, [{"source": "Ann", "target": "Ann"}]) == 0.0
    assert pair_recall([{"target": "Ben"}], [{"source": "", "target": "ben"}]) == 1.0  # a missing source is ""
    assert pair_recall([{"source": "Ann"}], [{"source": "Ann", "target": ""}]) == 1.0
    assert pair_recall([], gold) == 0.0


@pytest.fixture(scope="module")
def vp_instance(demo_samples) -> Instance:
    return VP.build(demo_samples)[0]


def _vp(instance: Instance, item: dict) -> object:
    raw = json.dumps({"predictions": [{"checkpoint_id": instance.instance_id.split("#")[1], **item}]})
    return VP.parse(raw, [instance])[instance.instance_id]


def test_vp_answers_with_synonyms_and_a_missing_source(vp_instance):
    speaker = vp_instance.extra["speaker"]
    prediction = _vp(vp_instance, {"viewpoints": [
        {"holder": "Riley", "about": "Sam", "view": "he hides"},
        {"target": "Therapist", "description": "she helps"},  # no source: the current speaker
        {"source": "Sam", "target": "Riley"},  # no viewpoint text: skipped
        "noise",
    ]})
    assert prediction.status == "ok"
    assert prediction.value == [{"source": "Riley", "target": "Sam", "viewpoint": "he hides"},
                                {"source": speaker, "target": "Therapist", "viewpoint": "she helps"}]
    flat = _vp(vp_instance, {"source": "Riley", "target": "Sam", "viewpoint": "flat"})
    assert flat.status == "ok" and flat.value == [{"source": "Riley", "target": "Sam", "viewpoint": "flat"}]
    one = _vp(vp_instance, {"viewpoints": {"source": "Riley", "target": "Sam", "viewpoint": "one"}})
    assert one.status == "ok" and one.value == [{"source": "Riley", "target": "Sam", "viewpoint": "one"}]


def test_vp_rejections_say_why(vp_instance):
    checkpoint = vp_instance.instance_id.split("#")[1]
    not_a_list = _vp(vp_instance, {"viewpoints": "he hides"})
    assert not_a_list.status == "parse_error"
    assert not_a_list.error == f"{checkpoint}: no viewpoint list (expected 'viewpoints')"
    empty = _vp(vp_instance, {"viewpoints": [{"source": "Riley", "viewpoint": "no target"}]})
    assert empty.status == "parse_error"
    assert empty.error == f"{checkpoint}: no viewpoint with both a target and a viewpoint"


def test_er_rejections_say_why(demo_samples):
    instance = ER.build(demo_samples)[0]
    checkpoint = instance.instance_id.split("#")[1]

    def parse(item: dict) -> object:
        raw = json.dumps({"predictions": [{"checkpoint_id": checkpoint, **item}]})
        return ER.parse(raw, [instance])[instance.instance_id]

    assert parse({"emotion": "", "intensity": 3}).error == f"{checkpoint}: no emotion (expected a non-empty 'emotion')"
    no_intensity = parse({"emotion": "sad", "intensity": ""})
    assert no_intensity.error == f"{checkpoint}: no intensity (expected 'intensity', an integer 0-10)"
    assert parse({"predicted_emotion": "sad", "predicted_intensity": 4}).value == {"emotion": "sad", "intensity": 4}


def test_a_task_module_that_fails_to_import_is_not_hidden(monkeypatch, tmp_path):
    from rescue.tasks.registry import discover

    package = tmp_path / "zz_tasks_broken"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "zz_broken.py").write_text("import zz_missing_dependency_of_a_task\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="zz_missing_dependency_of_a_task"):
        discover("zz_tasks_broken")


# --- ITP and the ranking tasks: every answer key, numbers and booleans, raw text kept, lenient notes -------------

ITP = get_task("itp")


@pytest.fixture(scope="module")
def itp_pair(demo_samples) -> list[Instance]:
    return ITP.build(demo_samples)[:2]


def _answer(instances: list[Instance], key: str, values: list[object]) -> str:
    return json.dumps({"predictions": [{"id": i.instance_id.split("#")[1], key: v} for i, v in zip(instances, values)]})


@pytest.mark.parametrize("key", ["should_speak", "answer", "prediction", "label"])
def test_itp_reads_every_answer_key(itp_pair, key):
    parsed = ITP.parse(_answer(itp_pair, key, ["yes", "no"]), itp_pair)
    assert [parsed[i.instance_id].value for i in itp_pair] == ["yes", "no"]
    assert all(parsed[i.instance_id].instance_id == i.instance_id for i in itp_pair)


def test_itp_reads_booleans_and_zero_one_and_rejects_other_numbers(itp_pair):
    for values, expected in (([True, False], ["yes", "no"]), ([1, 0], ["yes", "no"]), ([1.0, 0.0], ["yes", "no"])):
        parsed = ITP.parse(_answer(itp_pair, "should_speak", values), itp_pair)
        assert [(parsed[i.instance_id].status, parsed[i.instance_id].value) for i in itp_pair] == [
            ("ok", expected[0]), ("ok", expected[1])]
    raw = _answer(itp_pair, "should_speak", [2, -1])
    parsed = ITP.parse(raw, itp_pair)
    for instance, shown in zip(itp_pair, ("2", "-1")):
        prediction = parsed[instance.instance_id]
        assert (prediction.status, prediction.value, prediction.raw) == ("parse_error", None, raw)
        assert prediction.instance_id == instance.instance_id
        assert f"expected yes or no, got {shown}" in prediction.error


def test_failed_predictions_keep_the_raw_answer(itp_pair):
    first, second = itp_pair
    raw = _answer([first], "should_speak", ["yes"])
    missing = ITP.parse(raw, itp_pair)[second.instance_id]
    assert (missing.instance_id, missing.status, missing.raw) == (second.instance_id, "missing", raw)
    assert missing.error == f"no answer for id {second.instance_id.split('#')[1]!r}"
    prose = "I cannot decide."
    no_json = ITP.parse(prose, itp_pair)
    assert all((p.status, p.raw) == ("parse_error", prose) for p in no_json.values())
    assert [p.instance_id for p in no_json.values()] == [i.instance_id for i in itp_pair]


def test_itp_lenient_prose_is_read_and_noted_only_for_a_single_item(itp_pair):
    raw = "  Yes, the therapist should step in now.  "
    [only] = itp_pair[:1]
    strict = ITP.parse(raw, [only])[only.instance_id]
    assert strict.status == "parse_error"
    lenient = ITP.parse(raw, [only], "lenient")[only.instance_id]
    assert (lenient.instance_id, lenient.status, lenient.value, lenient.raw) == (only.instance_id, "ok", "yes", raw)
    assert lenient.lenient == {"read_from_prose": raw.strip()}
    assert ITP.parse("x" * 300 + " no", [only], "lenient")[only.instance_id].lenient == {
        "read_from_prose": ("x" * 300)[:200]}
    both = ITP.parse(raw, itp_pair, "lenient")  # two items asked: prose cannot say which is which
    assert all(p.status == "parse_error" for p in both.values())
    in_json = ITP.parse(_answer([only], "should_speak", ["well, no, keep listening"]), [only], "lenient")[only.instance_id]
    assert (in_json.status, in_json.value, in_json.lenient) == ("ok", "no", {"read_from_prose": "well, no, keep listening"})


@pytest.mark.parametrize("name", [n for n, t in TASKS.items() if t.declaration.answer == "ranking"])
def test_ranking_tasks_read_every_answer_key(name, demo_samples):
    task = get_task(name)
    instance = task.build(demo_samples)[0]
    labels = [instance.gold] + [label for label in instance.labels if label != instance.gold][:3]
    assert task.declaration.answer_aliases == ("top3", "ranking", "labels", "prediction")
    for key in (task.declaration.answer_key, *task.declaration.answer_aliases):
        raw = _answer([instance], key, [labels])
        prediction = task.parse(raw, [instance])[instance.instance_id]
        assert (prediction.status, prediction.value) == ("ok", labels[:3]), key  # at most three, never padded
    as_text = task.parse(_answer([instance], "prediction", [f"{labels[1]} then {labels[0]}"]), [instance])
    assert as_text[instance.instance_id].value == [labels[1], labels[0]]


def test_ranking_failures_name_what_was_dropped(demo_samples):
    from rescue.tasks.parsing import AnswerError, normalize_ranking

    labels = ["a", "b", "c", "d"]
    assert normalize_ranking(["d", "c", "b", "a"], labels) == ["d", "c", "b"]
    dropped: list[str] = []
    assert normalize_ranking(["zz", {"x": "é"}, "b"], labels, dropped=dropped) == ["b"]
    assert dropped == ["zz", '{"x": "é"}']
    with pytest.raises(AnswerError, match=r"^empty ranking \(unknown labels dropped: zz, yy\)$"):
        normalize_ranking(["zz", "yy"], labels, dropped=[])
    with pytest.raises(AnswerError, match=r"^empty ranking$"):
        normalize_ranking([], labels, dropped=[])
    with pytest.raises(AnswerError, match=r"^expected a list of labels, got int$"):
        normalize_ranking(3, labels)
