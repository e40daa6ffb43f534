"""Segments: the queue, one segment with its rows, verify, discard, reopen, comments, audit, versions.

Sample ids contain '/'; clients percent-encode them, Starlette decodes them, and the ``:path`` converter
takes everything up to the action suffix, so both spellings reach the same route."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Query
from pydantic import Field


from rescue.review import crud, cuts
from rescue.review.crud import segment_assignees
from rescue.review.api.deps import (
    Adjudicator,
    CurrentUser,
    Db,
    Body,
    PlainText,
    ProjectDep,
    get_segment,
    has_assignments,
    resolve_copy,
    visible_audit,
)
from rescue.review.fields import DISCARD_REASONS, FieldError, checks_payload, field_schema, label_sets
from rescue.data.rules import RULES
from rescue.review.models import FINAL
from rescue.review.project import Project, Segment
from rescue.review.queue import QueueQuery, SortKey, Status, narrow, queue
from rescue.review.shapes import AuditView, CommentView, EditorRow, ProblemView, QueueItem, SegmentPayload

router = APIRouter(prefix="/api", tags=["segments"])
RULEBOOK = [{"id": r.id, "fields": r.fields, "severity": r.severity, "message": r.message} for r in RULES]


class DiscardBody(Body):
    """The body of a discard: the reason and a comment (required for "other")."""

    reason: PlainText
    comment: PlainText = ""


class CommentBody(Body):
    """The body of a comment: its text, and the row it is about when any."""

    text: PlainText = Field(min_length=1, max_length=10_000)
    row_index: int | None = None


def media_url(path: str | None) -> str | None:
    """The /media/ URL of a project path, None for none."""
    return "/media/" + quote(path) if path else None


def _copy_comments(db: Db, segment_id: str, copy: str) -> list[CommentView]:
    """The comments shown with a copy: on an annotator's copy, hers and those of adjudicators and admins, never a
    co-annotator's (blind double annotation); on the final copy, all of them."""
    found = crud.comments(db, segment_id)
    annotators = crud.annotator_names(db) if copy != FINAL else set()
    return [c for c in found if crud.comment_shown(c["author"], copy, annotators)]


def segment_payload(db: Db, project: Project, segment: Segment, copy: str) -> SegmentPayload:
    """Everything the editor shows of one copy of a segment: rows, problems, state, cut, media, comments."""
    assigned = segment_assignees(db, segment.sample_id)
    rows = crud.copy_rows(db, segment, copy, assigned)
    problems: dict[int | None, list[ProblemView]] = {}
    for problem in segment.problems:
        problems.setdefault(problem.row_index, []).append(problem.as_dict())
    state = crud.segment_state(db, segment.sample_id, copy)
    cut = crud.copy_cut(db, segment.sample_id, copy)
    # A re-cut copy's rows are compared with the draft rows they overlap most; build problems name draft rows.
    row_values = [r["values"] for r in rows]
    drafts = crud.draft_counterparts(segment, row_values) if cut is not None else segment.rows
    # Re-cut or re-timed rows say so (the row list shows it): by time, against the draft's rows.
    origins = cuts.origins(segment.rows, row_values) if cut is not None else [
        "draft" if (v.get("start_time"), v.get("end_time")) == (d.get("start_time"), d.get("end_time")) else "re-timed"
        for v, d in zip(row_values, segment.rows)]
    out_rows: list[EditorRow] = []
    for row, draft, origin in zip(rows, drafts, origins):
        values = row["values"]
        out_rows.append({
            "origin": origin,
            "row_index": row["row_index"],
            "start_time": values.get("start_time"),
            "end_time": values.get("end_time"),
            "version": row["version"],
            "values": values,
            "draft": draft,
            "accepted": row["accepted"],
            "acknowledged": row["acknowledged"],
            "checks": checks_payload(segment, values, row["acknowledged"]),
            "problems": problems.get(row["row_index"], []) if cut is None else [],
            "updated_by": row["updated_by"],
            "updated_at": row["updated_at"],
        })
    return {
        "sample_id": segment.sample_id,
        "scenario": segment.scenario,
        "participants": segment.participants,
        "entities": segment.entities,
        "copy": copy,
        "layout": cut.revision if cut is not None else 0,
        "status": crud.state_view(state) if state else {"status": "open"},
        "assigned": assigned,
        "media": {"clip": media_url(segment.clip), "subtitles": media_url(segment.subtitles)},
        "source_video": segment.source_video,
        "problems": problems.get(None, []),
        "rows": out_rows,
        "comments": _copy_comments(db, segment.sample_id, copy),
        "labels": label_sets(segment.scenario),
        "fields": field_schema(),
        "rules": RULEBOOK,
        "discard_reasons": DISCARD_REASONS,
    }


@router.get("/segments", response_model=list[dict[str, Any]])
def list_segments(
    actor: CurrentUser, db: Db, project: ProjectDep, mine: bool = False,
    status: Status | None = None, assignee: str | None = None, problems: bool | None = None,
    speakers: Annotated[int | None, Query(ge=0)] = None, min_duration: Annotated[float | None, Query(ge=0)] = None,
    max_duration: Annotated[float | None, Query(ge=0)] = None, sort: SortKey = "sample_id",
    order: Literal["asc", "desc"] = "asc",
) -> list[QueueItem]:
    """The caller's queue once segments are assigned; adjudicators see every segment unless ``?mine=true``.
    Filters (status, assignee, problems, speakers, min/max_duration) and a sort (with ``order``) narrow it."""
    query = QueueQuery(status, assignee, problems, speakers, min_duration, max_duration, sort, order == "desc")
    items = queue(db, project, actor.name, only_assigned=has_assignments(db) and (mine or not actor.at_least("adjudicator")),
                  blind=not actor.at_least("adjudicator"))
    return narrow(items, query)


@router.get("/segments/{segment_id:path}/audit", response_model=list[dict[str, Any]])
def segment_audit(segment_id: str, actor: CurrentUser, db: Db, project: ProjectDep, row: int | None = None) -> list[AuditView]:
    """GET: a segment's audit log (one row's with ``row``), as far as the user may see it."""
    get_segment(project, segment_id)
    return visible_audit(db, actor, segment_id, row)


@router.get("/segments/{segment_id:path}/versions")
def segment_versions(segment_id: str, actor: Adjudicator, db: Db, project: ProjectDep) -> dict[str, Any]:
    """Every annotator's copy and the final one, for the adjudication view."""
    segment = get_segment(project, segment_id)
    assigned = segment_assignees(db, segment_id)
    names = crud.annotator_copies(db, segment_id, assigned)
    copies = {name: [r["values"] for r in crud.copy_rows(db, segment, name)] for name in names}
    states = {name: (s.status if (s := crud.segment_state(db, segment_id, name)) else "open") for name in names}
    final = segment_payload(db, project, segment, FINAL)
    # Row by row of the final copy, each annotator's row for it: the same row where the cuts agree, else the row
    # overlapping it longest (None where their copy has no speech there), so re-cut copies still line up.
    final_values = [r["values"] for r in final["rows"]]
    aligned = {name: [rows[m] if m is not None else None for m in cuts.align(final_values, rows)]
               for name, rows in copies.items()}
    return {"annotators": names, "states": states, "copies": copies, "aligned": aligned, "final": final}


@router.post("/segments/{segment_id:path}/verify")
def verify(segment_id: str, actor: CurrentUser, db: Db, project: ProjectDep, copy: str | None = None) -> dict[str, str]:
    """POST: mark a copy verified; 422 listing what must be fixed first."""
    segment = get_segment(project, segment_id)
    target = resolve_copy(db, actor, segment_id, copy, write=True)
    try:
        crud.verify(db, actor.name, segment, target, segment_assignees(db, segment_id))
    except FieldError as exc:
        raise HTTPException(422, {"message": "fix these before verifying", "problems": exc.problems}) from None
    return {"status": "verified", "copy": target}


@router.post("/segments/{segment_id:path}/discard")
def discard(segment_id: str, body: DiscardBody, actor: CurrentUser, db: Db, project: ProjectDep,
            copy: str | None = None) -> dict[str, str]:
    """POST: discard a copy, with a known reason."""
    get_segment(project, segment_id)
    target = resolve_copy(db, actor, segment_id, copy, write=True)
    if body.reason not in DISCARD_REASONS:
        raise HTTPException(422, {"message": "unknown reason", "problems": [
            {"field": "reason", "message": f"{body.reason!r} is not one of {', '.join(DISCARD_REASONS)}"}]})
    if body.reason == "other" and not body.comment.strip():
        raise HTTPException(422, {"message": "say why", "problems": [
            {"field": "comment", "message": "reason 'other' needs a comment"}]})
    crud.discard(db, actor.name, segment_id, target, body.reason, body.comment)
    return {"status": "discarded", "copy": target}


@router.post("/segments/{segment_id:path}/reopen")
def reopen(segment_id: str, actor: CurrentUser, db: Db, project: ProjectDep, copy: str | None = None) -> dict[str, str]:
    """POST: open a verified or discarded copy again."""
    get_segment(project, segment_id)
    target = resolve_copy(db, actor, segment_id, copy, write=True)
    crud.reopen(db, actor.name, segment_id, target)
    return {"status": "open", "copy": target}


@router.post("/segments/{segment_id:path}/comments", status_code=201, response_model=dict[str, Any])
def comment(segment_id: str, body: CommentBody, actor: CurrentUser, db: Db, project: ProjectDep) -> CommentView:
    """POST: comment on a segment or one of its rows."""
    segment = get_segment(project, segment_id)
    if body.row_index is not None and not 1 <= body.row_index <= len(segment.rows):
        raise HTTPException(422, {"message": "no such row", "problems": [
            {"field": "row_index", "message": f"row {body.row_index} does not exist (1-{len(segment.rows)})"}]})
    resolve_copy(db, actor, segment_id, None, write=False)
    return crud.comment_view(crud.add_comment(db, actor.name, segment_id, body.row_index, body.text))


@router.get("/segments/{segment_id:path}", response_model=dict[str, Any])
def get_one(segment_id: str, actor: CurrentUser, db: Db, project: ProjectDep, copy: str | None = None) -> SegmentPayload:
    """GET: one copy of a segment (the user's own by default)."""
    segment = get_segment(project, segment_id)
    target = resolve_copy(db, actor, segment_id, copy, write=False)
    return segment_payload(db, project, segment, target)
