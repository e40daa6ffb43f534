"""Rows of one copy: PUT /api/segments/{id}/rows/{row_index} saves fields of one row (its start and end too),
optimistically versioned; POST .../rows inserts a row, POST .../rows/{i}/split and .../rows/{i}/merge re-cut,
DELETE .../rows/{i} removes one, POST .../rows/take?copy=final gives the final copy an annotator's rows. A cut names the copy's ``layout`` (its cut revision, in the segment payload)
and the versions of the rows it touches; either being stale is a 409, as for a save. A cut answers with the
whole segment as it now stands, since every row after the cut moved."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import JSONResponse
from pydantic import Field, StrictInt

from rescue.errors import Conflict, LayoutConflict, ReviewError
from rescue.review import crud
from rescue.review.crud import segment_assignees
from rescue.review.api.deps import (
    CurrentUser,
    Db,
    Body,
    PlainText,
    ProjectDep,
    get_segment,
    resolve_copy,
    visible_audit,
)
from rescue.review.api.routes.segments import segment_payload
from rescue.review.fields import FieldError, checks_payload
from rescue.review.models import FINAL
from rescue.review.project import Segment
from rescue.review.shapes import AuditView

router = APIRouter(prefix="/api", tags=["rows"])


class RowSave(Body):
    """The body of a row save: the version it edits, the changed fields, accepted fields and acknowledged warnings."""

    version: StrictInt
    fields: dict[str, Any] = Field(default_factory=dict)
    accepted: list[str] = Field(default_factory=list)
    # Keys ("rule@field") of the row's warnings its annotator knowingly lets stand; None leaves them as they are.
    acknowledged: list[str] | None = None
    # An undo giving the row back what it held: its accepted fields as they were (replacing, not adding to, them).
    restore_accepted: list[str] | None = None
    # Fields to take out of the row (an undo giving it back the keys it had): only those the release lets a row
    # leave out, each once, none also in ``fields``.
    remove: list[str] = Field(default_factory=list)


@router.put("/segments/{segment_id:path}/rows/{row_index:int}", response_model=None)
def save_row(segment_id: str, row_index: int, body: RowSave, actor: CurrentUser, db: Db, project: ProjectDep,
             copy: str | None = None) -> dict[str, Any] | JSONResponse:
    """PUT a row of a copy: saved when its version is current (409 with both versions otherwise), 422 for a field
    that breaks a rule."""
    segment = get_segment(project, segment_id)
    target = resolve_copy(db, actor, segment_id, copy, write=True)
    try:
        saved = crud.save_row(db, actor.name, segment, target, row_index, body.version, body.fields, body.accepted,
                              segment_assignees(db, segment_id), body.acknowledged, body.restore_accepted,
                              body.remove)
    except Conflict as exc:
        return JSONResponse(status_code=409, content={
            "detail": f"row {row_index} was saved by {exc.current.get('updated_by') or 'someone'} since you loaded "
                      f"version {body.version}",
            "current": exc.current,
            "yours": {"version": body.version, "fields": body.fields, **({"remove": body.remove} if body.remove else {})},
            # a newer cut means the row number may name another row now: the page then reloads instead of merging
            "layout": cut.revision if (cut := crud.copy_cut(db, segment_id, target)) else 0,
        })
    except FieldError as exc:
        raise HTTPException(422, {"message": str(exc), "problems": exc.problems}) from None
    except ReviewError as exc:
        raise HTTPException(404, str(exc)) from None
    return {"version": saved.version, "copy": target, "acknowledged": saved.acknowledged,
            "checks": checks_payload(segment, saved.values, saved.acknowledged)}


class CutBase(Body):
    """What every re-cut sends: the copy's cut revision (layout) it was made on."""

    layout: StrictInt


class SplitBody(CutBase):
    """The body of a split: the row's version, the time to split at, and where its text splits."""

    version: StrictInt
    at: float
    text_at: StrictInt | None = None


class MergeBody(CutBase):
    """The body of a merge: the versions of the row and of the next one."""

    version: StrictInt
    next_version: StrictInt
    # Joining a therapist row and a client row can make the first speaker a target of their own row.
    drop_self_target: bool = False


class InsertBody(CutBase):
    """The body of an insert: the new row's times, speaker and text."""

    start_time: float = Field(ge=0)
    end_time: float = Field(ge=0)
    primary_speaker: PlainText = ""
    dialogue_cleaned: PlainText = ""


class DeleteBody(CutBase):
    """The body of a delete: the row's version."""

    version: StrictInt


class TakeBody(CutBase):
    """The body of taking another copy's cut: the copy to take it from."""

    source: PlainText


def _cut(db: Db, project: ProjectDep, actor: CurrentUser, segment: Segment, copy: str | None,
         run: Callable[[str, list[str]], tuple[int, int]]) -> dict[str, Any] | JSONResponse:
    target = resolve_copy(db, actor, segment.sample_id, copy, write=True)
    try:
        layout, row_index = run(target, segment_assignees(db, segment.sample_id))
    except Conflict as exc:  # a stale layout or row version (or, on PostgreSQL, a row saved a moment before)
        layout = exc.layout if isinstance(exc, LayoutConflict) else (
            cut.revision if (cut := crud.copy_cut(db, segment.sample_id, target)) else 0)
        return JSONResponse(status_code=409, content={
            "detail": f"the rows changed since you loaded them (now cut revision {layout}); reload to see them",
            "current": exc.current, "layout": layout})
    except FieldError as exc:
        raise HTTPException(422, {"message": str(exc), "problems": exc.problems}) from None
    except ReviewError as exc:
        raise HTTPException(404, str(exc)) from None
    return {"row_index": row_index, "layout": layout, "segment": segment_payload(db, project, segment, target)}


@router.post("/segments/{segment_id:path}/rows/{row_index:int}/split", response_model=None)
def split_row(segment_id: str, row_index: int, body: SplitBody, actor: CurrentUser, db: Db, project: ProjectDep,
              copy: str | None = None) -> dict[str, Any] | JSONResponse:
    """POST: split a row of a copy in two."""
    segment = get_segment(project, segment_id)
    return _cut(db, project, actor, segment, copy, lambda target, assigned: crud.split_row(
        db, actor.name, segment, target, body.layout, row_index, body.version, body.at, body.text_at, assigned))


@router.post("/segments/{segment_id:path}/rows/{row_index:int}/merge", response_model=None)
def merge_rows(segment_id: str, row_index: int, body: MergeBody, actor: CurrentUser, db: Db, project: ProjectDep,
               copy: str | None = None) -> dict[str, Any] | JSONResponse:
    """Row ``row_index`` and the next one become one row."""
    segment = get_segment(project, segment_id)
    return _cut(db, project, actor, segment, copy, lambda target, assigned: crud.merge_rows(
        db, actor.name, segment, target, body.layout, row_index, body.version, body.next_version, assigned,
        body.drop_self_target))


@router.post("/segments/{segment_id:path}/rows", response_model=None, status_code=201)
def insert_row(segment_id: str, body: InsertBody, actor: CurrentUser, db: Db, project: ProjectDep,
               copy: str | None = None) -> dict[str, Any] | JSONResponse:
    """POST: insert a row into a copy."""
    segment = get_segment(project, segment_id)
    return _cut(db, project, actor, segment, copy, lambda target, assigned: crud.insert_row(
        db, actor.name, segment, target, body.layout, body.start_time, body.end_time, body.primary_speaker,
        body.dialogue_cleaned, assigned))


@router.post("/segments/{segment_id:path}/rows/take", response_model=None)
def take_rows(segment_id: str, body: TakeBody, actor: CurrentUser, db: Db, project: ProjectDep,
              copy: str | None = None) -> dict[str, Any] | JSONResponse:
    """The final copy's rows become an annotator's, their cut included (adjudicators)."""
    segment = get_segment(project, segment_id)
    if resolve_copy(db, actor, segment_id, copy, write=True) != FINAL:  # adjudicators only, like any final write
        raise HTTPException(422, {"message": "only the final copy takes another copy's rows", "problems": [
            {"field": "copy", "message": "use ?copy=final"}]})
    if body.source not in crud.annotator_copies(db, segment_id, segment_assignees(db, segment_id)):
        raise HTTPException(404, f"{body.source!r} has no copy of this segment")
    return _cut(db, project, actor, segment, copy, lambda target, assigned: crud.take_rows(
        db, actor.name, segment, target, body.layout, body.source, assigned))


class BoundaryBody(CutBase):
    """The body of moving a boundary two rows share: the first row, both rows' versions and the new time."""

    row: StrictInt
    version: StrictInt
    next_version: StrictInt
    at: float


@router.post("/segments/{segment_id:path}/boundary", response_model=None)
def move_boundary(segment_id: str, body: BoundaryBody, actor: CurrentUser, db: Db, project: ProjectDep,
                  copy: str | None = None) -> dict[str, Any] | JSONResponse:
    """POST: the end of row ``row`` and the start of the next, where they meet, moved together to ``at``."""
    segment = get_segment(project, segment_id)
    return _cut(db, project, actor, segment, copy, lambda target, assigned: (crud.move_boundary(
        db, actor.name, segment, target, body.layout, body.row, body.version, body.next_version, body.at, assigned),
        body.row))


class TakeFieldsBody(CutBase):
    """The body of taking another copy's values: the copy, the versions of the rows as the taker saw them, and
    which rows (default: every row)."""

    source: PlainText
    versions: dict[int, StrictInt]
    rows: list[int] | None = None


@router.post("/segments/{segment_id:path}/rows/take-fields", response_model=None)
def take_fields(segment_id: str, body: TakeFieldsBody, actor: CurrentUser, db: Db, project: ProjectDep,
                copy: str | None = None) -> dict[str, Any] | JSONResponse:
    """An annotator's values of every row where they differ, into the final copy in one write (adjudicators)."""
    segment = get_segment(project, segment_id)
    target = resolve_copy(db, actor, segment_id, copy, write=True)
    if target != FINAL:
        raise HTTPException(422, {"message": "only the final copy takes another copy's values", "problems": [
            {"field": "copy", "message": "use ?copy=final"}]})
    if body.source not in crud.annotator_copies(db, segment_id, segment_assignees(db, segment_id)):
        raise HTTPException(404, f"{body.source!r} has no copy of this segment")
    taken: list[int] = []

    def run(target: str, assigned: list[str]) -> tuple[int, int]:
        taken.extend(crud.take_fields(db, actor.name, segment, target, body.layout, body.source, body.versions,
                                      body.rows, assigned))
        return body.layout, taken[0] if taken else 1

    answer = _cut(db, project, actor, segment, copy, run)
    if isinstance(answer, dict):
        answer["taken"] = taken
    return answer


@router.delete("/segments/{segment_id:path}/rows/{row_index:int}", response_model=None)
def delete_row(segment_id: str, row_index: int, body: DeleteBody, actor: CurrentUser, db: Db, project: ProjectDep,
               copy: str | None = None) -> dict[str, Any] | JSONResponse:
    """DELETE: delete a row of a copy."""
    segment = get_segment(project, segment_id)
    return _cut(db, project, actor, segment, copy, lambda target, assigned: crud.delete_row(
        db, actor.name, segment, target, body.layout, row_index, body.version, assigned))


@router.get("/segments/{segment_id:path}/rows/{row_index:int}/audit", response_model=list[dict[str, Any]])
def row_audit(segment_id: str, row_index: int, actor: CurrentUser, db: Db, project: ProjectDep) -> list[AuditView]:
    """GET: a row's audit log, as far as the user may see it."""
    get_segment(project, segment_id)
    return visible_audit(db, actor, segment_id, row_index)
