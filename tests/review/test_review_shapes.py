"""The review tool's JSON answers hold exactly the keys of their types in rescue.review.shapes (and
rescue.errors.FieldProblem): mypy checks every dict the code builds against them, this checks what reaches the
client, so a type and the answer it describes cannot drift apart."""

from __future__ import annotations

from pathlib import Path

import pytest
from review_helpers import FIRST, Client, seg_url
from review_helpers import check_each as _each
from review_helpers import check_keys as _check

from rescue.errors import FieldProblem
from rescue.review import shapes


@pytest.fixture
def project(small_project: Path) -> Path:
    return small_project


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
