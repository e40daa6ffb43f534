"""A copy's state (open, verified, discarded) and the actions that set it (the ``segments`` route).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue.review.models import SegmentState, now
from rescue.review.crud._write import audit, writing
from rescue.review.shapes import CopyState


def segment_state(db: Session, segment_id: str, copy: str) -> SegmentState | None:
    """The state (open, verified, discarded) stored for one copy, None when never set."""
    return db.scalar(select(SegmentState).where(SegmentState.segment_id == segment_id, SegmentState.copy == copy))


def state_view(state: SegmentState) -> CopyState:
    """A stored state as the dashboard, the editor and the export read it."""
    return {"status": state.status, "reason": state.reason, "comment": state.comment, "by": state.updated_by,
            "at": state.updated_at}


def set_state(db: Session, actor: str, segment_id: str, copy: str, status: str, reason: str = "", comment: str = "") -> None:
    """Store a copy's state inside a write transaction already open (audited, the old state with it)."""
    state = segment_state(db, segment_id, copy)
    old = {"status": state.status, "reason": state.reason, "comment": state.comment} if state else {"status": "open"}
    if state is None:
        state = SegmentState(segment_id=segment_id, copy=copy, status=status, updated_by=actor)
        db.add(state)
    state.status, state.reason, state.comment, state.updated_by, state.updated_at = status, reason, comment, actor, now()
    audit(db, actor, f"segment.{status}", segment_id, copy, None, "status", old,
          {"status": status, "reason": reason, "comment": comment})


def reopen_if_verified(db: Session, actor: str, segment_id: str, copy: str) -> None:
    """An edit after verification means the copy needs verifying again."""
    state = segment_state(db, segment_id, copy)
    if state is not None and state.status == "verified":
        set_state(db, actor, segment_id, copy, "open")


def discard(db: Session, actor: str, segment_id: str, copy: str, reason: str, comment: str) -> None:
    """Mark a copy discarded, with the reason and comment (audited)."""
    with writing(db, segment_id):
        set_state(db, actor, segment_id, copy, "discarded", reason, comment)


def reopen(db: Session, actor: str, segment_id: str, copy: str) -> None:
    """Mark a copy open again (audited)."""
    with writing(db, segment_id):
        set_state(db, actor, segment_id, copy, "open")
