"""PUT /api/segments/{id}/rows/{row_index}: save fields of one row, optimistically versioned."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from rescue.review import crud
from rescue.review.api.deps import CurrentUser, Db, ProjectDep, get_segment, resolve_copy, segment_assignees
from rescue.review.fields import FieldError

router = APIRouter(prefix="/api", tags=["rows"])


class RowSave(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: StrictInt
    fields: dict[str, Any] = Field(default_factory=dict)
    accepted: list[str] = Field(default_factory=list)


@router.put("/segments/{segment_id:path}/rows/{row_index:int}", response_model=None)
def save_row(segment_id: str, row_index: int, body: RowSave, actor: CurrentUser, db: Db, project: ProjectDep,
             copy: str | None = None) -> dict[str, Any] | JSONResponse:
    segment = get_segment(project, segment_id)
    target = resolve_copy(db, actor, segment_id, copy, write=True)
    try:
        version = crud.save_row(db, actor.name, segment, target, row_index, body.version, body.fields, body.accepted,
                                segment_assignees(db, segment_id))
    except crud.Conflict as exc:
        return JSONResponse(status_code=409, content={
            "detail": f"row {row_index} was saved by {exc.current.get('updated_by') or 'someone'} since you loaded "
                      f"version {body.version}",
            "current": exc.current,
            "yours": {"version": body.version, "fields": body.fields},
        })
    except FieldError as exc:
        raise HTTPException(422, {"message": str(exc), "problems": exc.problems}) from None
    except crud.ReviewError as exc:
        raise HTTPException(404, str(exc)) from None
    return {"version": version, "copy": target}


@router.get("/segments/{segment_id:path}/rows/{row_index:int}/audit")
def row_audit(segment_id: str, row_index: int, actor: CurrentUser, db: Db, project: ProjectDep) -> list[dict[str, Any]]:
    get_segment(project, segment_id)
    return crud.audit_log(db, segment_id, row_index)
