"""The review tool's JSON answers hold exactly the keys of their types in rescue.review.shapes (and
rescue.errors.FieldProblem): mypy checks every dict the code builds against them, this checks what reaches the
client, so a type and the answer it describes cannot drift apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NotRequired, get_origin, get_type_hints

import pytest
from review_helpers import FIRST, Client, seg_url

from rescue.errors import FieldProblem
from rescue.review import shapes


@pytest.fixture
def project(small_project: Path) -> Path:
    return small_project


def _check(value: Any, shape: type) -> None:
    """``value`` holds every required key of ``shape`` and no key it does not declare."""
    # Read through get_type_hints: under postponed annotations Python 3.11 counts NotRequired keys as required.
    hints = get_type_hints(shape, include_extras=True)
    required = {key for key, hint in hints.items() if get_origin(hint) is not NotRequired}
    assert isinstance(value, dict), (shape.__name__, value)
    assert required <= set(value) <= set(hints), (shape.__name__, sorted(value), sorted(hints))


def _each(values: Any, shape: type) -> None:
    for value in values:
        _check(value, shape)


def test_the_editor_and_queue_answers_hold_exactly_their_types_keys(ann: Client, ada: Client) -> None:
    assert ann.save(1, {"tone_of_voice": "calm"}).status_code == 200
    posted = ann.write("POST", seg_url(FIRST) + "/comments", {"text": "check row 1", "row_index": 1})
    assert posted.status_code == 201
    _check(posted.json(), shapes.CommentView)
    _each(ada.get("/api/segments").json(), shapes.QueueItem)
    payload = ann.segment()
    _check(payload, shapes.SegmentPayload)
    _check(payload["status"], shapes.OpenState)
    _check(payload["media"], shapes.MediaLinks)
    _each(payload["rows"], shapes.EditorRow)
    for row in payload["rows"]:
        _each(row["checks"], shapes.CheckView)
    _each(payload["comments"], shapes.CommentView)
    _each(payload["fields"], shapes.FieldView)
    for labels in payload["labels"].values():
        _each(labels, shapes.LabelView)
    audit = ann.get(seg_url(FIRST) + "/audit").json()
    assert audit
    _each(audit, shapes.AuditView)
    _each(ada.get("/api/users").json(), shapes.UserView)
    found = ada.get("/api/search", params={"q": "calm"}).json()
    _check(found, shapes.SearchAnswer)
    words = str(payload["rows"][0]["values"]["dialogue_cleaned"]).split()[:1]
    hits = ada.get("/api/search", params={"q": " ".join(words)}).json()["hits"]
    assert hits
    _each(hits, shapes.SearchHit)


def test_a_refused_save_names_its_problems_as_field_problems(ann: Client) -> None:
    refused = ann.save(1, {"primary_speaker": "Nobody at all"})
    assert refused.status_code == 422
    _each(refused.json()["problems"], FieldProblem)


def test_the_export_provenance_and_agreement_hold_exactly_their_types_keys(ann: Client, ada: Client) -> None:
    discarded = ada.write("POST", seg_url(FIRST) + "/discard?copy=final", {"reason": "other", "comment": "test"})
    assert discarded.status_code == 200
    second = next(s["sample_id"] for s in ada.get("/api/segments").json() if s["sample_id"] != FIRST)
    assert ada.verify(second, copy="final").status_code == 200
    provenance = ada.get("/api/export", params={"provenance": "true"}).json()
    _check(provenance, shapes.ExportProvenance)
    _each(provenance["segments"], shapes.SegmentProvenance)
    left_out = provenance["not_exported"]
    assert left_out
    _each(left_out, shapes.LeftOut)
    for entry in left_out:
        _each(entry.get("discarded", {}).values(), shapes.CopyState)
    final = ada.segment(FIRST, copy="final")
    _check(final["status"], shapes.CopyState)
    agreement = ada.get("/api/agreement").json()
    _check(agreement, shapes.AgreementResult)
    _each(agreement["fields"], shapes.FieldAgreement)
    _each(agreement["draft_acceptance"], shapes.DraftAcceptance)
    _each(agreement["text_fields"], shapes.TextFieldAgreement)
    _each(agreement["time"], shapes.LeadTime)


def test_a_benchmark_projects_answers_hold_exactly_their_types_keys(tmp_path: Path) -> None:
    import random

    from bench_helpers import bench_app, make_bench, scripted_answer

    from rescue.review.benchmark_export import human_summary
    from rescue.review.benchmark_store import all_answers

    app = bench_app(make_bench(tmp_path / "bench", tasks=["stp", "er"]), tmp_path / "review.db")
    try:
        ann = Client(app, "ann")
        queue = ann.get("/api/bench/queue").json()
        _each(queue, shapes.BenchQueueEntry)
        rng = random.Random(7)
        for entry in {e["task"]: e for e in queue}.values():
            url = f"/api/bench/items/{entry['task']}/{entry['number']}"
            item = ann.get(url).json()
            page = {k: v for k, v in item.items() if k in get_type_hints(shapes.BenchPage)}
            _check(page, shapes.BenchPage)
            _check({k: item[k] for k in ("value", "version")}, shapes.BenchShown)
            assert set(item) == set(page) | {"value", "version", "queue"}
            _check(item["queue"], shapes.QueuePosition)
            _each(item["labels"], shapes.LabelDefinition)
            answer = {"value": scripted_answer(item, rng), "version": item["version"]}
            assert ann.write("PUT", url + "/answer", answer).status_code == 200
        with app.state.sessions() as db:
            answers = all_answers(db)
        _each(answers, shapes.GivenAnswer)
        summary = human_summary(app.state.project, answers)
        _check(summary, shapes.HumanSummary)
        _each(summary["agreement"].values(), shapes.TaskAgreement)
        for tasks in summary["time"].values():
            _each(tasks.values(), shapes.TimeStats)
    finally:
        app.state.engine.dispose()
