"""GET /api/agreement (JSON, or CSV with ?format=csv)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from rescue.review.api.deps import Adjudicator, Db, ProjectDep
from rescue.review.shapes import AgreementResult

router = APIRouter(prefix="/api", tags=["agreement"])


@router.get("/agreement", response_model=None)
def agreement(actor: Adjudicator, db: Db, project: ProjectDep, format: str = "json") -> AgreementResult | PlainTextResponse:
    # Agreement pulls in the metrics: imported when asked for, so the server answers its first page sooner.
    """GET /api/agreement: agreement between annotators as JSON, or CSV with ``format=csv`` (adjudicators)."""
    from rescue.review.annotator_agreement import agreement_csv, compute_agreement

    result = compute_agreement(db, project)
    if format == "csv":
        return PlainTextResponse(agreement_csv(result), media_type="text/csv",
                                 headers={"Content-Disposition": 'attachment; filename="agreement.csv"'})
    return result
