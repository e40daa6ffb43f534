"""Reading a copy's rows: stored versions, the draft they start from, the final copy's agreed values, a
re-cut copy's alignment to the draft (the ``rows`` and ``segments`` routes, export, progress, agreement).
"""

from __future__ import annotations


from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue.errors import ReviewError
from rescue.review import cuts
from rescue.review.fields import FIELD_NAMES
from rescue.review.models import FINAL, CopyCut, RowCopy, SegmentState
from rescue.review.project import Segment
from rescue.review.crud._assignment import segment_assignees
from rescue.review.crud._write import dump
from rescue.review.db import row_names, row_values
from rescue.review.shapes import CopyRow, RowValues


def stored_rows(db: Session, segment_id: str, copy: str, only: int | None = None) -> dict[int, RowCopy]:
    """The saved rows of one copy of a segment (only row ``only`` when given), by row index."""
    query = select(RowCopy).where(RowCopy.segment_id == segment_id, RowCopy.copy == copy)
    found = db.scalars(query if only is None else query.where(RowCopy.row_index == only))
    return {r.row_index: r for r in found}


def annotator_copies(db: Session, segment_id: str, assigned: list[str] | None) -> list[str]:
    """The annotators whose versions count for a segment: the assigned ones, else whoever worked on it."""
    if assigned:
        return list(assigned)
    touched = set(db.scalars(select(RowCopy.copy).where(RowCopy.segment_id == segment_id).distinct()))
    touched |= set(db.scalars(select(SegmentState.copy).where(SegmentState.segment_id == segment_id)))
    touched.discard(FINAL)
    return sorted(touched)


def copy_cut(db: Session, segment_id: str, copy: str) -> CopyCut | None:
    """The copy's cut, when its rows were re-cut (then every row is stored and the draft's numbering is gone)."""
    return db.scalar(select(CopyCut).where(CopyCut.segment_id == segment_id, CopyCut.copy == copy))


def draft_counterparts(segment: Segment, values: list[RowValues]) -> list[RowValues]:
    """The draft row each row of a copy stands for: the same row where the copy keeps the draft's cut, else the
    draft row it overlaps longest in time (see :func:`rescue.review.cuts.align`), its evidence references in
    the copy's numbering; a row with no such draft row (speech the draft missed) stands for a blank row of its
    own span."""
    draft = segment.rows
    matched = cuts.align(values, draft)
    # The draft's evidence references, read in the copy's numbering (by time): a row whose references were only
    # renumbered by a cut is not a change from the draft; one to a row the copy deleted is dropped, as the delete did.
    mapping = cuts.counterparts(draft, values)
    return [cuts.moved_references(draft[m], mapping)[0] if m is not None else
            cuts.blank_row(float(v.get("start_time") or 0), float(v.get("end_time") or 0))
            for v, m in zip(values, matched)]


def copy_values(db: Session, segment: Segment, copy: str) -> list[RowValues]:
    """The release-format rows of one copy."""
    return [row["values"] for row in copy_rows(db, segment, copy)]


def _base_rows(db: Session, segment: Segment, copy: str, assigned: list[str] | None = None,
               only: int | None = None) -> list[RowValues]:
    """What a copy starts from: the draft, and for the final copy the annotators' value wherever they all
    agree (for row ``only`` alone when given)."""
    rows = [dict(r) for r in segment.rows]
    if copy != FINAL:
        return rows
    if assigned is None:
        assigned = segment_assignees(db, segment.sample_id)
    others: list[dict[int, RowValues]] = []
    unknown: set[tuple[int, str]] = set()  # (draft row, field) a re-cut copy's value cannot be read for
    for name in annotator_copies(db, segment.sample_id, assigned):
        if copy_cut(db, segment.sample_id, name) is None:
            others.append({i: row_values(r) for i, r in stored_rows(db, segment.sample_id, name, only).items()})
        else:
            others.append(_recut_speaks(segment, [row_values(r) for _, r in
                                                  sorted(stored_rows(db, segment.sample_id, name).items())], unknown))
    if not others:
        return rows
    for index, row in enumerate(rows, start=1):
        if only is not None and index != only:
            continue
        versions = [o[index] if index in o else segment.rows[index - 1] for o in others]
        for name in FIELD_NAMES:
            if (index, name) in unknown:
                continue  # a reference to a row the draft's cut lacks: nobody's agreed value, the draft's stays
            values = [v.get(name) for v in versions]
            if all(dump(v) == dump(values[0]) for v in values) and (name in row or values[0] is not None):
                row[name] = values[0]
    return rows


def _recut_speaks(segment: Segment, theirs: list[RowValues], unknown: set[tuple[int, str]]) -> dict[int, RowValues]:
    """What a re-cut copy says of each draft row: its row overlapping the draft row longest, with its evidence
    references read in the draft's numbering (by time); a reference to a row the draft's cut lacks puts
    (draft row, field) in ``unknown``."""
    mapping = cuts.counterparts(theirs, segment.rows)
    spoken: dict[int, RowValues] = {}
    for i, m in enumerate(cuts.align(segment.rows, theirs), start=1):
        if m is not None:
            spoken[i], lost = cuts.moved_references(theirs[m], mapping)
            unknown.update((i, field) for field, _ref in lost)
    return spoken


def copy_rows(db: Session, segment: Segment, copy: str, assigned: list[str] | None = None) -> list[CopyRow]:
    """Every row of one copy: ``values`` (the full release-format row), ``version`` (0 = never saved) and
    ``accepted`` (the fields someone accepted or edited)."""
    stored = stored_rows(db, segment.sample_id, copy)
    cut = copy_cut(db, segment.sample_id, copy)
    count = cut.rows if cut is not None else len(segment.rows)
    base = _base_rows(db, segment, copy, assigned) if len(stored) < count else []
    out: list[CopyRow] = []
    for index in range(1, count + 1):
        record = stored.get(index)
        if record is None:
            out.append({"row_index": index, "version": 0, "values": base[index - 1], "accepted": [],
                        "acknowledged": [], "updated_by": None, "updated_at": None})
        else:
            out.append(_stored(record))
    return out


def _stored(record: RowCopy) -> CopyRow:
    accepted, acknowledged = row_names(record)
    return {"row_index": record.row_index, "version": record.version, "values": row_values(record),
            "accepted": accepted, "acknowledged": acknowledged,
            "updated_by": record.updated_by, "updated_at": record.updated_at}


def current_row(db: Session, segment: Segment, copy: str, row_index: int, assigned: list[str] | None) -> CopyRow:
    """One row of a copy, as :func:`copy_rows` gives it, reading only that row."""
    query = select(RowCopy).where(RowCopy.segment_id == segment.sample_id, RowCopy.copy == copy,
                                  RowCopy.row_index == row_index)
    record = db.scalar(query)
    if record is None and copy_cut(db, segment.sample_id, copy) is not None:
        # A cut stores every row of its copy. The row was missing a moment ago because a cut was committing
        # between the two reads: read it again, so that a save racing the cut is a conflict, not a 404.
        record = db.scalar(query)
        if record is None:
            raise ReviewError(f"row {row_index} does not exist")
    if record is None:
        if not 1 <= row_index <= len(segment.rows):
            raise ReviewError(f"row {row_index} does not exist")
        if copy == FINAL:
            values = _base_rows(db, segment, copy, assigned, only=row_index)[row_index - 1]
        else:
            values = dict(segment.rows[row_index - 1])
        return {"row_index": row_index, "version": 0, "values": values, "accepted": [], "acknowledged": [],
                "updated_by": None, "updated_at": None}
    return _stored(record)
