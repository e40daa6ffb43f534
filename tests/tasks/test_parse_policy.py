"""--parse strict|lenient on hand-made answers, and rescore switching it without new requests (issue #11)."""

from __future__ import annotations

import json

import pytest
from _engine_support import read_jsonl

from rescue.cli import app
from rescue.data.loading import load_samples
from rescue.engine.runner import RunConfig, rescore, run
from rescue.tasks import get_task
from rescue.tasks.base import Instance, RenderOptions, make_record
from rescue.testing.openai_server import Reply, request_key, serve


def _first(name: str) -> Instance:
    return get_task(name).build(load_samples(None))[0]


def _answer(instance: Instance, key: str, value) -> str:
    return json.dumps({"predictions": [{"id": instance.instance_id.rsplit("#", 1)[1], key: value}]})


@pytest.mark.parametrize("name,key", [("rpp", "relation_top3"), ("stp", "target_top3"), ("ssp", "strategy_top3")])
def test_rankings_strict_voids_lenient_drops_and_counts(name, key):
    task = get_task(name)
    instance = _first(name)
    labels = instance.labels
    raw = _answer(instance, key, ["not_a_label", labels[0], "also unknown", labels[1]])
    strict = task.parse(raw, [instance])[instance.instance_id]
    assert strict.status == "parse_error" and "not_a_label" in strict.error and strict.lenient is None
    lenient = task.parse(raw, [instance], "lenient")[instance.instance_id]
    assert lenient.status == "ok" and lenient.value == [labels[0], labels[1]]
    assert lenient.lenient == {"dropped": ["not_a_label", "also unknown"]}
    # Nothing known left: a failure under both policies, never an empty or padded ranking.
    empty = task.parse(_answer(instance, key, ["nope", "nada"]), [instance], "lenient")[instance.instance_id]
    assert empty.status == "parse_error" and "dropped: nope, nada" in empty.error
    # A clean answer is read the same way by both and carries no note.
    clean = _answer(instance, key, labels[:3])
    assert task.parse(clean, [instance])[instance.instance_id].value == \
        task.parse(clean, [instance], "lenient")[instance.instance_id].value
    assert task.parse(clean, [instance], "lenient")[instance.instance_id].lenient is None
    record = make_record(task, "m", instance, lenient)
    counts = task.aggregate([record, make_record(task, "m", instance, strict)])
    assert counts["lenient_dropped_labels"] == 2 and counts["lenient_instances_with_drops"] == 1
    assert "lenient_dropped_labels" not in task.aggregate([make_record(task, "m", instance, strict)])


@pytest.mark.parametrize("text,expected", [
    ("Yes, the therapist should speak now.", "yes"),
    ("No, keep listening; she is still unfolding it", "no"),
    ("I would say NO.", "no"),
])
def test_itp_lenient_reads_a_clear_yes_or_no_from_prose(text, expected):
    task = get_task("itp")
    instance = _first("itp")
    raw = _answer(instance, "should_speak", text)
    strict = task.parse(raw, [instance])[instance.instance_id]
    assert strict.status == "parse_error"
    lenient = task.parse(raw, [instance], "lenient")[instance.instance_id]
    assert lenient.status == "ok" and lenient.value == expected
    assert lenient.lenient == {"read_from_prose": text}
    # A bare prose answer (no JSON) to a single question is read too, under lenient only.
    assert task.parse(text, [instance])[instance.instance_id].status == "parse_error"
    assert task.parse(text, [instance], "lenient")[instance.instance_id].value == expected


@pytest.mark.parametrize("text", ["yes or no, hard to say", "perhaps", "not sure; maybe later", "nobody knows"])
def test_itp_lenient_refuses_prose_that_is_not_clear(text):
    task = get_task("itp")
    instance = _first("itp")
    for raw in (_answer(instance, "should_speak", text), text):
        assert task.parse(raw, [instance], "lenient")[instance.instance_id].status == "parse_error"


def test_rescore_switches_the_policy_without_new_requests(tmp_path):
    samples = load_samples(None)
    task = get_task("ssp")
    instances = task.build(samples)
    # Local ids repeat across samples: answer by the whole request.
    gold = {request_key({"messages": task.render([i], RenderOptions())}): i for i in instances}

    def script(body):
        instance = gold[request_key(body)]
        # The gold, but preceded by a label of no taxonomy: strict voids it, lenient drops it.
        return Reply.text(_answer(instance, "strategy_top3", ["made_up", instance.gold]))

    out = tmp_path / "run"
    with serve(script) as server:
        run(RunConfig(out=str(out), models=["m"], tasks=["ssp"], base_url=server.base_url, quiet=True,
                      bertscore=False, max_retries=1, timeout=30.0))
        asked = server.request_count
    strict = json.loads((out / "results.json").read_text())
    assert strict["config"]["parse"] == "strict"
    assert strict["models"]["m"]["ssp"]["all"]["failures"] == len(instances)
    # The server is gone: every answer below comes from the cache.
    lenient = rescore(out, parse="lenient").results
    assert lenient["config"]["parse"] == "lenient" and lenient["run"]["rescored"] is True
    scores = lenient["models"]["m"]["ssp"]["all"]
    assert scores["failures"] == 0 and scores["recall_at_1"] == 1.0
    assert scores["lenient_dropped_labels"] == len(instances) == scores["lenient_instances_with_drops"]
    assert all(r["lenient"] == {"dropped": ["made_up"]} for r in read_jsonl(out / "predictions.jsonl"))
    back = rescore(out, parse="strict").results
    assert back["models"]["m"]["ssp"]["all"] == strict["models"]["m"]["ssp"]["all"]
    assert asked == len(instances)  # batch size 1: one request per instance, never another


def test_parse_option_is_checked(tmp_path):
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "r"), "--parse", "loose", "-q"])
    assert "--parse 'loose'" in str(result.exception) and not (tmp_path / "r").exists()


def test_lenient_notes_are_typed_and_a_note_rescue_does_not_know_is_kept():
    from rescue.tasks.base import PredictionRecord

    record = make_record(get_task("rpp"), "m", _first("rpp"), get_task("rpp").parse(
        _answer(_first("rpp"), "relation_top3", ["Pursue-Distance", "not a label"]), [_first("rpp")], "lenient")[
        _first("rpp").instance_id])
    assert record.lenient == {"dropped": ["not a label"]}
    line = json.loads(record.model_dump_json())
    # A predictions.jsonl note of another version (or a plug-in's) is read back whole, never dropped silently.
    line["lenient"] = {"dropped": ["x"], "read_from_prose": "yes", "guessed": True}
    again = PredictionRecord.model_validate_json(json.dumps(line))
    assert json.loads(again.model_dump_json())["lenient"] == line["lenient"]
    line["lenient"] = {"dropped": "not a list"}
    with pytest.raises(ValueError, match="dropped"):
        PredictionRecord.model_validate_json(json.dumps(line))
