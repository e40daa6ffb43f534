"""Who works on which segment (``rescue review assign``, the ``users`` and ``pages`` routes).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from rescue.errors import ReviewError
from rescue.review.models import Assignment, User
from rescue.review.project import Project
from rescue.review.crud._write import ASSIGNMENTS, audit, writing


def assign(db: Session, actor: str, project: Project, k: int, annotators: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Give every segment to ``k`` annotators, spreading the load evenly (round robin over segments)."""
    users = list(db.scalars(select(User).order_by(User.name)))
    by_name = {u.name: u for u in users}
    names = list(annotators) if annotators else [u.name for u in users if u.role == "annotator" and not u.disabled_at]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ReviewError(f"unknown user(s): {', '.join(unknown)}")
    disabled = [n for n in names if by_name[n].disabled_at]
    if disabled:
        raise ReviewError(f"disabled account(s): {', '.join(disabled)}")
    if not 1 <= k <= len(names):
        raise ReviewError(f"overlap k={k}: needs between 1 and {len(names)} annotators ({', '.join(names) or 'none'})")
    plan: dict[str, list[str]] = {}
    with writing(db, ASSIGNMENTS):
        db.execute(delete(Assignment))
        for i, sample_id in enumerate(sorted(project.segments)):
            chosen = [names[(i * k + j) % len(names)] for j in range(k)]
            plan[sample_id] = chosen
            for name in chosen:
                db.add(Assignment(segment_id=sample_id, user_id=by_name[name].id))
        audit(db, actor, "assign", field="k", new={"k": k, "annotators": names})
    return plan


def assignments(db: Session) -> dict[str, list[str]]:
    """Who is assigned to each segment, by segment id."""
    rows = db.execute(select(Assignment.segment_id, User.name).join(User, User.id == Assignment.user_id))
    plan: dict[str, list[str]] = {}
    for segment_id, name in rows:
        plan.setdefault(segment_id, []).append(name)
    return {k: sorted(v) for k, v in plan.items()}


def segment_assignees(db: Session, segment_id: str) -> list[str]:
    """The annotators assigned to a segment."""
    rows = db.execute(select(User.name).join(Assignment, Assignment.user_id == User.id)
                      .where(Assignment.segment_id == segment_id))
    return sorted(name for (name,) in rows)
