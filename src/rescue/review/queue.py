"""The queue as a tool: every segment a person may see with what a lab sorts its day by (status, problems,
speaker count, duration, assignee), the filters and orders on them, and a search of the transcript across
segments. The JSON API (``GET /api/segments``, ``GET /api/search``) and the dashboard page both use these, so
the page and a script see one queue."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue.review.db import row_where, stored_json
from rescue.review.models import FINAL, RowCopy
from rescue.review.progress import project_progress
from rescue.review.project import Project, Segment
from rescue.review.shapes import QueueItem, RowValues, SearchAnswer, SearchHit

# The order a lab works through: what waits on someone first, what is settled last.
STATUS_ORDER = ("needs_adjudication", "in_progress", "open", "verified", "discarded")
SortKey = Literal["sample_id", "status", "problems", "speakers", "duration", "rows", "assignee"]
SORT_KEYS: tuple[str, ...] = SortKey.__args__  # type: ignore[attr-defined]
Status = Literal["needs_adjudication", "in_progress", "open", "verified", "discarded"]


@dataclass(frozen=True)
class QueueQuery:
    """What to keep and how to order it; every filter left at None keeps everything."""

    status: str | None = None
    assignee: str | None = None
    problems: bool | None = None  # True: only segments with problems; False: only those without
    speakers: int | None = None
    min_duration: float | None = None
    max_duration: float | None = None
    sort: str = "sample_id"
    descending: bool = False

    def keeps(self, item: QueueItem) -> bool:
        """Whether a queue item passes every filter that is set."""
        return ((self.status is None or item["status"] == self.status)
                and (self.assignee is None or self.assignee in item["assigned"])
                and (self.problems is None or (item["problems"] > 0) == self.problems)
                and (self.speakers is None or item["speakers"] == self.speakers)
                and (self.min_duration is None or item["duration"] >= self.min_duration)
                and (self.max_duration is None or item["duration"] <= self.max_duration))


def _speakers(segment: Segment) -> list[str]:
    return sorted({str(r.get("primary_speaker")) for r in segment.rows if r.get("primary_speaker")})


def _sort_key(name: str, item: QueueItem) -> tuple[Any, ...]:
    if name == "status":
        return (STATUS_ORDER.index(item["status"]) if item["status"] in STATUS_ORDER else len(STATUS_ORDER),)
    if name == "assignee":  # unassigned last, whichever way the rest goes
        return (not item["assigned"], ", ".join(item["assigned"]))
    by_name: Mapping[str, Any] = item  # the other sort keys are the item's own keys
    return (by_name[name],)


def queue(db: Session, project: Project, name: str, *, only_assigned: bool, blind: bool = True) -> list[QueueItem]:
    """The segments ``name`` sees (``only_assigned``: just their own once assignments exist), in project order;
    ``blind`` (annotators): comments counted as her copy shows them, never a co-annotator's."""
    progress = project_progress(db, project, name if blind else FINAL)
    items: list[QueueItem] = []
    for sample_id, segment in project.segments.items():
        p = progress[sample_id]
        if only_assigned and name not in p.assigned:
            continue
        speakers = _speakers(segment)
        items.append({
            "sample_id": sample_id,
            "scenario": segment.scenario,
            "rows": len(segment.rows),
            "duration": max((float(r.get("end_time") or 0) for r in segment.rows), default=0.0),
            "speakers": len(speakers),
            "speaker_names": speakers,
            "has_media": segment.clip is not None,
            "problems": len(segment.problems),
            "comments": p.comments,
            "assigned": p.assigned,
            "status": p.status,
            "my_status": p.copy_status(name) or "open",
            "my_reviewed_rows": p.reviewed.get(name, 0),
            "final_status": p.copy_status(FINAL),
        })
    return items


def narrow(items: list[QueueItem], query: QueueQuery) -> list[QueueItem]:
    """The items ``query`` keeps, in its order; ties keep the project's order."""
    kept = [item for item in items if query.keeps(item)]
    if query.sort != "sample_id" or query.descending:
        kept.sort(key=lambda item: _sort_key(query.sort, item), reverse=query.descending)
        if query.sort == "assignee" and query.descending:  # unassigned still last
            kept.sort(key=lambda item: not item["assigned"])
    return kept


def _row_texts(row: RowValues) -> list[str]:
    """What a row says: its dialogue and the background dialogue heard under it."""
    texts = [str(row.get("dialogue_cleaned") or "")]
    for entry in row.get("background_dialogue") or []:
        if isinstance(entry, dict) and entry.get("content"):
            texts.append(str(entry["content"]))
    return texts


def search(db: Session, project: Project, text: str, segment_ids: list[str], copies: list[str] | None,
           limit: int = 100) -> SearchAnswer:
    """Rows whose transcript holds every word of ``text`` (case-insensitive), over the draft and the stored rows
    of ``copies`` (None: every copy), in the given segments. A row edited in a copy is found by its new words and
    says which copy they are in; a hit identical to the draft's is listed once, as the draft's."""
    words = text.casefold().split()
    if not words:
        return {"query": text, "hits": [], "truncated": False}
    wanted = set(segment_ids)
    candidates: list[tuple[str, str, int, RowValues]] = []
    for sample_id in segment_ids:
        candidates += [(sample_id, "draft", i, row) for i, row in enumerate(project.segments[sample_id].rows, start=1)]
    stored = select(RowCopy.segment_id, RowCopy.copy, RowCopy.row_index, RowCopy.values_json)
    if copies is not None:
        stored = stored.where(RowCopy.copy.in_(copies))
    for segment_id, copy, index, values_json in db.execute(stored.order_by(RowCopy.segment_id, RowCopy.row_index)):
        if segment_id in wanted:
            where = row_where(segment_id, copy, index, "values_json")
            candidates.append((segment_id, copy, index, stored_json(values_json, where, dict)))
    hits: list[SearchHit] = []
    seen: set[tuple[str, int, str]] = set()
    truncated = False
    for sample_id, copy, index, row in candidates:
        said = " ".join(_row_texts(row))
        if not all(word in said.casefold() for word in words):
            continue
        key = (sample_id, index, said)
        if key in seen:
            continue
        seen.add(key)
        if len(hits) == limit:
            truncated = True
            break
        hits.append({"sample_id": sample_id, "row_index": index, "copy": copy,
                     "start_time": row.get("start_time"), "end_time": row.get("end_time"),
                     "speaker": row.get("primary_speaker"), "text": said})
    order = {sid: i for i, sid in enumerate(segment_ids)}
    hits.sort(key=lambda h: (order[h["sample_id"]], h["row_index"]))
    return {"query": text, "hits": hits, "truncated": truncated}
