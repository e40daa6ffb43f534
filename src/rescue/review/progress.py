"""Where the review stands: per segment (which copy is final, verified, discarded, needs adjudication)
and per annotator, for the dashboard, the queues and the export."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue.review.crud import annotator_copies, assignments, comment_counts, state_view
from rescue.review.db import row_where, stored_names
from rescue.review.fields import FIELD_NAMES
from rescue.review.models import FINAL, RowCopy, SegmentState
from rescue.review.project import Project, Segment
from rescue.review.shapes import AnnotatorProgress, CopyState, Dashboard

ALL_FIELDS = sorted(FIELD_NAMES)


@dataclass
class SegmentProgress:
    """Where one segment stands: its rows, assignees, annotators, each copy's state and how far each got."""

    sample_id: str
    rows: int
    assigned: list[str]
    annotators: list[str]
    states: dict[str, CopyState] = field(default_factory=dict)  # by copy
    reviewed: dict[str, int] = field(default_factory=dict)  # copy -> rows with every field accepted
    edited: dict[str, int] = field(default_factory=dict)  # copy -> rows saved at least once
    comments: int = 0
    status: str = "open"  # open | in_progress | needs_adjudication | verified | discarded
    source: str | None = None  # the copy that is exported when verified

    def as_dict(self) -> dict[str, Any]:
        """The progress as JSON."""
        return dict(self.__dict__)

    def copy_status(self, copy: str) -> str | None:
        """The stored status of ``copy``, None when never set (open)."""
        state = self.states.get(copy)
        return state["status"] if state is not None else None


def _row_summary(db: Session) -> dict[tuple[str, str], tuple[int, int]]:
    out: dict[tuple[str, str], list[int]] = {}
    rows = select(RowCopy.segment_id, RowCopy.copy, RowCopy.row_index, RowCopy.accepted_json)
    for segment_id, copy, index, accepted in db.execute(rows):
        entry = out.setdefault((segment_id, copy), [0, 0])
        entry[1] += 1
        if sorted(stored_names(accepted, row_where(segment_id, copy, index, "accepted_json"))) == ALL_FIELDS:
            entry[0] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def _same_values(db: Session, segment: Segment, copies: list[str]) -> bool:
    from rescue.review.crud import copy_values

    first = json.dumps(copy_values(db, segment, copies[0]), sort_keys=True)
    return all(json.dumps(copy_values(db, segment, c), sort_keys=True) == first for c in copies[1:])


def project_progress(db: Session, project: Project, viewer: str = FINAL) -> dict[str, SegmentProgress]:
    """The progress of every segment of the project, by sample id; ``comments`` counts those shown with the
    copy ``viewer`` (an annotator's name: not her co-annotators')."""
    plan = assignments(db)
    states: dict[str, dict[str, CopyState]] = {}
    for s in db.scalars(select(SegmentState)):
        states.setdefault(s.segment_id, {})[s.copy] = state_view(s)
    summary = _row_summary(db)
    counts = comment_counts(db, viewer)
    out: dict[str, SegmentProgress] = {}
    for sample_id, segment in project.segments.items():
        assigned = plan.get(sample_id, [])
        annotators = annotator_copies(db, sample_id, assigned) if (assigned or sample_id in states or any(
            key[0] == sample_id for key in summary)) else []
        p = SegmentProgress(sample_id, len(segment.rows), assigned, annotators, states.get(sample_id, {}))
        for copy in [*annotators, FINAL]:
            reviewed, edited = summary.get((sample_id, copy), (0, 0))
            p.reviewed[copy], p.edited[copy] = reviewed, edited
        p.comments = counts.get(sample_id, 0)
        p.status, p.source = _overall(db, segment, p)
        out[sample_id] = p
    return out


def _overall(db: Session, segment: Segment, p: SegmentProgress) -> tuple[str, str | None]:
    final = p.copy_status(FINAL)
    if final == "verified":
        return "verified", FINAL
    if final == "discarded":
        return "discarded", None
    if not p.annotators:
        return "open", None
    done = [p.copy_status(a) for a in p.annotators]
    if all(s == "discarded" for s in done):
        return "discarded", None
    if all(s == "verified" for s in done):
        if _same_values(db, segment, p.annotators):
            return "verified", p.annotators[0]
        return "needs_adjudication", None
    if all(s in ("verified", "discarded") for s in done):
        return "needs_adjudication", None
    touched = any(p.edited.get(a) for a in p.annotators) or any(done)
    return ("in_progress" if touched else "open"), None


def dashboard(db: Session, project: Project, users: list[tuple[str, str]], viewer: str = FINAL) -> Dashboard:
    """The paper's dashboard numbers: files, segments, reviewed and remaining rows, comments (those ``viewer``
    may read), discards, and per-annotator progress."""
    progress = project_progress(db, project, viewer)
    total_rows = sum(len(s.rows) for s in project.segments.values())
    reviewed_rows = 0
    for p in progress.values():
        copies = [FINAL] if p.states.get(FINAL) else p.annotators
        if p.status in ("verified", "discarded"):
            reviewed_rows += p.rows
        elif copies:  # counted in draft rows: a copy whose rows were split may hold more rows than the draft
            reviewed_rows += min(p.rows, *(p.reviewed.get(c, 0) for c in copies))
    per_user: list[AnnotatorProgress] = []
    for name, role in users:
        mine = [p for p in progress.values() if name in p.annotators]
        per_user.append({
            "name": name,
            "role": role,
            "segments": len(mine),
            "verified": sum(1 for p in mine if p.copy_status(name) == "verified"),
            "discarded": sum(1 for p in mine if p.copy_status(name) == "discarded"),
            "rows": sum(p.rows for p in mine),
            "reviewed_rows": sum(p.rows if p.copy_status(name) in ("verified", "discarded")
                                 else p.reviewed.get(name, 0) for p in mine),
        })
    counts: dict[str, int] = {}
    for p in progress.values():
        counts[p.status] = counts.get(p.status, 0) + 1
    return {
        "files": project.files(),
        "segments": len(project.segments),
        "rows": total_rows,
        "reviewed_rows": reviewed_rows,
        "remaining_rows": total_rows - reviewed_rows,
        "commented_segments": sum(1 for p in progress.values() if p.comments),
        "discarded_segments": counts.get("discarded", 0),
        "verified_segments": counts.get("verified", 0),
        "needs_adjudication": counts.get("needs_adjudication", 0),
        "status_counts": counts,
        "annotators": per_user,
    }
