"""GET /api/export: the verified JSONL (``?provenance=true`` gives the sidecar instead)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.responses import PlainTextResponse

from rescue.data.errors import DataError
from rescue.review.api.deps import Adjudicator, Db, ProjectDep
from rescue.review.export import build_export, to_jsonl
from rescue.review.shapes import ExportProvenance

router = APIRouter(prefix="/api", tags=["export"])


@router.get("/export", response_model=None)
def export(actor: Adjudicator, db: Db, project: ProjectDep, provenance: bool = False) -> PlainTextResponse | ExportProvenance:
    """GET /api/export: the verified segments as release-format JSONL, or their provenance (adjudicators); 422 when
    one does not validate."""
    try:
        samples, sidecar = build_export(db, project)
    except DataError as exc:
        raise HTTPException(422, {"message": "a verified segment does not validate", "problems": [
            {"field": i.field, "row_index": i.row, "sample_id": i.sample_id, "message": i.message} for i in exc.issues]}) from None
    if provenance:
        return sidecar
    return PlainTextResponse(to_jsonl(samples), media_type="application/x-ndjson",
                             headers={"Content-Disposition": 'attachment; filename="verified.jsonl"'})
