"""Comments on segments and rows, shown blind to co-annotators, and the audit log's reader.
"""

from __future__ import annotations


from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue.review.db import stored_json
from rescue.review.models import FINAL, AuditEntry, Comment, User, now
from rescue.review.crud._write import audit, writing
from rescue.review.shapes import AuditView, CommentView


def add_comment(db: Session, actor: str, segment_id: str, row_index: int | None, text: str) -> Comment:
    """Add a comment to a segment or a row (audited)."""
    with writing(db, None):  # only inserts
        entry = Comment(segment_id=segment_id, row_index=row_index, author=actor, text=text, created_at=now())
        db.add(entry)
        audit(db, actor, "comment", segment_id, "", row_index, "comment", None, text)
    return entry


def comment_shown(author: str, copy: str, annotators: set[str]) -> bool:
    """Whether a comment by ``author`` is shown with ``copy``: the final copy shows all of them; an annotator's copy
    hers and those of adjudicators and admins, never a co-annotator's, not even how many (blind annotation)."""
    return copy == FINAL or author == copy or author not in annotators


def annotator_names(db: Session) -> set[str]:
    """The names of every annotator account."""
    return set(db.scalars(select(User.name).where(User.role == "annotator")))


def comment_counts(db: Session, copy: str) -> dict[str, int]:
    """How many comments each segment shows with ``copy`` (FINAL: all of them), by segment id."""
    annotators = annotator_names(db) if copy != FINAL else set()
    counts: dict[str, int] = {}
    for segment_id, author in db.execute(select(Comment.segment_id, Comment.author)):
        if comment_shown(author, copy, annotators):
            counts[segment_id] = counts.get(segment_id, 0) + 1
    return counts


def comment_view(c: Comment) -> CommentView:
    """A comment as the answers show it."""
    return {"id": c.id, "row_index": c.row_index, "author": c.author, "text": c.text, "created_at": c.created_at}


def comments(db: Session, segment_id: str) -> list[CommentView]:
    """A segment's comments, oldest first."""
    found = db.scalars(select(Comment).where(Comment.segment_id == segment_id).order_by(Comment.id))
    return [comment_view(c) for c in found]


def audit_log(db: Session, segment_id: str, row_index: int | None = None) -> list[AuditView]:
    """A segment's audit entries (one row's when ``row_index`` is given), oldest first."""
    query = select(AuditEntry).where(AuditEntry.segment_id == segment_id)
    if row_index is not None:
        query = query.where(AuditEntry.row_index == row_index)
    return [
        {"at": a.at, "user": a.user, "action": a.action, "copy": a.copy, "row_index": a.row_index, "field": a.field,
         "old": stored_json(a.old_json, f"review database: audit.old_json of entry {a.id}"),
         "new": stored_json(a.new_json, f"review database: audit.new_json of entry {a.id}")}
        for a in db.scalars(query.order_by(AuditEntry.id))
    ]
