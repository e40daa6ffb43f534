"""GET /api/search: the transcript searched across the segments the caller may see."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from rescue.review.api.deps import CurrentUser, Db, ProjectDep, has_assignments
from rescue.review.queue import queue, search
from rescue.review.shapes import SearchAnswer

router = APIRouter(prefix="/api", tags=["search"])


@router.get("/search", response_model=dict[str, Any])
def search_transcript(actor: CurrentUser, db: Db, project: ProjectDep,
                      q: Annotated[str, Query(min_length=1, max_length=200)],
                      limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> SearchAnswer:
    """Rows whose dialogue (or background dialogue) holds every word of ``q``, in the caller's queue: the draft's
    words and, where edited, those of the caller's own copy (adjudicators: of every copy)."""
    visible = [item["sample_id"] for item in queue(
        db, project, actor.name, only_assigned=has_assignments(db) and not actor.at_least("adjudicator"),
        blind=not actor.at_least("adjudicator"))]
    copies = None if actor.at_least("adjudicator") else [actor.name]
    return search(db, project, q, visible, copies, limit)
