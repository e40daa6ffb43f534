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


def test_the_editor_and_queue_answers_hold_exactly_their_types_keys(ann: Client, ada: Client) -> None:
    assert ann.save(1, {"tone_of_voice": "calm"}).status_code == 200
    posted = ann.write("POST", seg_url(FIRST) + "/comments", {"text": "check row 1", "row_index": 1})
    assert posted.status_code == 201
    _check(posted.json(), shapes.CommentView)
    for item in ada.get("/api/segments").json():
        _check(item, shapes.QueueItem)
    payload = ann.segment()
    _check(payload, shapes.SegmentPayload)
    _check(payload["status"], shapes.OpenState)
    _check(payload["media"], shapes.MediaLinks)
    for row in payload["rows"]:
        _check(row, shapes.EditorRow)
        for check in row["checks"]:
            _check(check, shapes.CheckView)
    for comment in payload["comments"]:
        _check(comment, shapes.CommentView)
    for field in payload["fields"]:
        _check(field, shapes.FieldView)
    for labels in payload["labels"].values():
        for label in labels:
            _check(label, shapes.LabelView)
    audit = ann.get(seg_url(FIRST) + "/audit").json()
    assert audit
    for entry in audit:
        _check(entry, shapes.AuditView)
    for user in ada.get("/api/users").json():
        _check(user, shapes.UserView)
    found = ada.get("/api/search", params={"q": "calm"}).json()
    _check(found, shapes.SearchAnswer)
    words = str(payload["rows"][0]["values"]["dialogue_cleaned"]).split()[:1]
    hits = ada.get("/api/search", params={"q": " ".join(words)}).json()["hits"]
    assert hits
    for hit in hits:
        _check(hit, shapes.SearchHit)


def test_a_refused_save_names_its_problems_as_field_problems(ann: Client) -> None:
    refused = ann.save(1, {"primary_speaker": "Nobody at all"})
    assert refused.status_code == 422
    for problem in refused.json()["problems"]:
        _check(problem, FieldProblem)


def test_the_export_provenance_and_agreement_hold_exactly_their_types_keys(ann: Client, ada: Client) -> None:
    discarded = ada.write("POST", seg_url(FIRST) + "/discard?copy=final", {"reason": "other", "comment": "test"})
    assert discarded.status_code == 200
    second = next(s["sample_id"] for s in ada.get("/api/segments").json() if s["sample_id"] != FIRST)
    assert ada.verify(second, copy="final").status_code == 200
    provenance = ada.get("/api/export", params={"provenance": "true"}).json()
    _check(provenance, shapes.ExportProvenance)
    for segment in provenance["segments"]:
        _check(segment, shapes.SegmentProvenance)
    left_out = provenance["not_exported"]
    assert left_out
    for entry in left_out:
        _check(entry, shapes.LeftOut)
        for state in entry.get("discarded", {}).values():
            _check(state, shapes.CopyState)
    final = ada.segment(FIRST, copy="final")
    _check(final["status"], shapes.CopyState)
    agreement = ada.get("/api/agreement").json()
    _check(agreement, shapes.AgreementResult)
    for field in agreement["fields"]:
        _check(field, shapes.FieldAgreement)
    for acceptance in agreement["draft_acceptance"]:
        _check(acceptance, shapes.DraftAcceptance)
    for text in agreement["text_fields"]:
        _check(text, shapes.TextFieldAgreement)
    for spent in agreement["time"]:
        _check(spent, shapes.LeadTime)


def test_a_benchmark_projects_answers_hold_exactly_their_types_keys(tmp_path: Path) -> None:
    import random

    from bench_helpers import bench_app, make_bench, scripted_answer

    from rescue.review.benchmark_export import human_summary
    from rescue.review.benchmark_store import all_answers

    app = bench_app(make_bench(tmp_path / "bench", tasks=["stp", "er"]), tmp_path / "review.db")
    try:
        ann = Client(app, "ann")
        queue = ann.get("/api/bench/queue").json()
        for entry in queue:
            _check(entry, shapes.BenchQueueEntry)
        rng = random.Random(7)
        for entry in {e["task"]: e for e in queue}.values():
            url = f"/api/bench/items/{entry['task']}/{entry['number']}"
            item = ann.get(url).json()
            page = {k: v for k, v in item.items() if k in get_type_hints(shapes.BenchPage)}
            _check(page, shapes.BenchPage)
            _check({k: item[k] for k in ("value", "version")}, shapes.BenchShown)
            assert set(item) == set(page) | {"value", "version", "queue"}
            _check(item["queue"], shapes.QueuePosition)
            for label in item["labels"]:
                _check(label, shapes.LabelDefinition)
            answer = {"value": scripted_answer(item, rng), "version": item["version"]}
            assert ann.write("PUT", url + "/answer", answer).status_code == 200
        with app.state.sessions() as db:
            answers = all_answers(db)
        for given in answers:
            _check(given, shapes.GivenAnswer)
        summary = human_summary(app.state.project, answers)
        _check(summary, shapes.HumanSummary)
        for agreement in summary["agreement"].values():
            _check(agreement, shapes.TaskAgreement)
        for tasks in summary["time"].values():
            for spent in tasks.values():
                _check(spent, shapes.TimeStats)
    finally:
        app.state.engine.dispose()
