"""Changing a copy's rows as a whole: split, merge, insert, delete, take another copy's rows or fields, move a
boundary (the ``rows`` route's layout actions), each checked against the copy's layout revision.

A cut rewrites the copy's whole row list: every row is stored from then on (so the copy no longer follows the
draft's numbering), rows whose number or content changed get one new version above every version the copy has
held (so a save or a cut started from the old numbering is a conflict, never a write to the wrong row), and the
cut's revision moves on.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from rescue.errors import FieldProblem, LayoutConflict, ReviewError
from rescue.review import cuts
from rescue.review.fields import FIELD_NAMES, FieldError
from rescue.review.models import FINAL, CopyCut, RowCopy, now
from rescue.review.project import Segment
from rescue.review.crud._edits import audit_adopted, save_in
from rescue.review.crud._rows import copy_cut, copy_rows, stored_rows
from rescue.review.crud._states import reopen_if_verified
from rescue.review.crud._write import audit, dump, writing
from rescue.review.shapes import CopyRow, RowValues

Rows = list[RowValues]


def _recut(db: Session, actor: str, segment: Segment, copy: str, layout: int, versions: dict[int, int],
           action: str, change: Callable[[Rows], tuple[Rows, list[int | None], int]],
           assigned: list[str] | None) -> tuple[int, int]:
    """Apply ``change`` (rows -> new rows, the old 1-based row each new row comes from unchanged or None, and
    the row to report) to one copy; returns (new layout revision, that row)."""
    with writing(db, segment.sample_id):
        cut = copy_cut(db, segment.sample_id, copy)
        revision = cut.revision if cut is not None else 0
        rows = copy_rows(db, segment, copy, assigned)
        _check_layout(rows, revision, layout, versions)
        try:
            new_rows, origin, reported = change([r["values"] for r in rows])
        except cuts.CutError as exc:
            raise FieldError([{"field": exc.field, "message": exc.message}]) from None
        stored = stored_rows(db, segment.sample_id, copy)
        fresh = max((r.version for r in stored.values()), default=0) + 1
        stamp = now()
        for position, values in enumerate(new_rows, start=1):
            source = origin[position - 1]
            record = stored.get(position)
            if source == position and record is not None and record.values_json == dump(values):
                continue  # the same row at the same place (its evidence references may have been renumbered)
            old = rows[source - 1] if source is not None else None
            accepted = dump(old["accepted"]) if old is not None else "[]"
            acknowledged = dump(old["acknowledged"]) if old is not None else "[]"  # the row's warnings move with it
            if record is None:
                db.add(RowCopy(segment_id=segment.sample_id, copy=copy, row_index=position, version=fresh,
                               values_json=dump(values), accepted_json=accepted, acknowledged_json=acknowledged,
                               updated_by=actor, updated_at=stamp))
                if copy == FINAL and old is not None and old["version"] == 0:
                    audit_adopted(db, actor, segment, copy, source or position, values, ())
            else:
                record.version, record.values_json, record.accepted_json = fresh, dump(values), accepted
                record.acknowledged_json = acknowledged
                record.updated_by, record.updated_at = actor, stamp
        for position, record in stored.items():
            if position > len(new_rows):
                db.delete(record)
        if cut is None:
            db.add(CopyCut(segment_id=segment.sample_id, copy=copy, rows=len(new_rows), revision=1, updated_by=actor,
                           updated_at=stamp))
        else:
            cut.rows, cut.revision, cut.updated_by, cut.updated_at = len(new_rows), revision + 1, actor, stamp
        touched = list(range(1, len(rows) + 1)) if action == "rows.take" else [i for i in versions] or [reported]
        audit(db, actor, action, segment.sample_id, copy, reported, "rows",
              {"rows": len(rows), "changed": [rows[i - 1]["values"] for i in touched if 1 <= i <= len(rows)]},
              {"rows": len(new_rows), "changed": [new_rows[i - 1] for i in _new_positions(action, reported)
                                                  if 1 <= i <= len(new_rows)]})
        reopen_if_verified(db, actor, segment.sample_id, copy)
    return revision + 1, reported


def _check_layout(rows: list[CopyRow], revision: int, layout: int, versions: dict[int, int]) -> None:
    """A cut starts from the copy's current cut (``layout``) and the current versions of the rows it touches."""
    if revision != layout:
        raise LayoutConflict({"layout": revision, "rows": len(rows)}, revision)
    for index, version in versions.items():
        if not 1 <= index <= len(rows):
            raise ReviewError(f"row {index} does not exist (1-{len(rows)})")
        if rows[index - 1]["version"] != version:
            raise LayoutConflict(rows[index - 1], revision)


def _check_rows(count: int, versions: dict[int, int], only: list[int] | None) -> None:
    """Every row a take names (its versions, its ``rows``) is a row of the copy (1-``count``): FieldError otherwise,
    before anything is read further or written."""
    problems: list[FieldProblem] = [
        {"field": what, "message": f"row {index} does not exist (1-{count})"}
        for what, indexes in (("versions", list(versions)), ("rows", only or []))
        for index in dict.fromkeys(indexes) if not 1 <= index <= count]
    if problems:
        raise FieldError(problems)


def _new_positions(action: str, reported: int) -> list[int]:
    if action == "rows.take":
        return list(range(1, 100_000))
    return [reported, reported + 1] if action == "row.split" else [] if action == "row.delete" else [reported]


def split_row(db: Session, actor: str, segment: Segment, copy: str, layout: int, row_index: int, version: int,
              at: float, text_at: int | None = None, assigned: list[str] | None = None) -> tuple[int, int]:
    """Cut row ``row_index`` in two at ``at`` seconds (its dialogue at character ``text_at`` when given)."""
    def change(rows: Rows) -> tuple[Rows, list[int | None], int]:
        new = cuts.split(rows, row_index, at, text_at)
        return new, [*range(1, row_index), None, None, *range(row_index + 1, len(rows) + 1)], row_index

    return _recut(db, actor, segment, copy, layout, {row_index: version}, "row.split", change, assigned)


def merge_rows(db: Session, actor: str, segment: Segment, copy: str, layout: int, row_index: int, version: int,
               next_version: int, assigned: list[str] | None = None, drop_self_target: bool = False) -> tuple[int, int]:
    """Join row ``row_index`` and the row after it (leaving the speaker out of the targets with ``drop_self_target``)."""
    def change(rows: Rows) -> tuple[Rows, list[int | None], int]:
        new = cuts.merge(rows, row_index, drop_self_target)
        return new, [*range(1, row_index), None, *range(row_index + 2, len(rows) + 1)], row_index

    return _recut(db, actor, segment, copy, layout, {row_index: version, row_index + 1: next_version}, "row.merge",
                  change, assigned)


def insert_row(db: Session, actor: str, segment: Segment, copy: str, layout: int, start: float, end: float,
               speaker: str = "", dialogue: str = "", assigned: list[str] | None = None) -> tuple[int, int]:
    """Add a row for speech nobody annotated, placed by its start time; returns (layout, its row number)."""
    def change(rows: Rows) -> tuple[Rows, list[int | None], int]:
        new, position = cuts.insert(rows, cuts.blank_row(start, end, speaker, dialogue), segment.time_limit)
        return new, [*range(1, position), None, *range(position, len(rows) + 1)], position

    problems = cuts.check_span(start, end, segment.time_limit)  # before anything is read or written
    if problems:
        raise FieldError(problems)
    return _recut(db, actor, segment, copy, layout, {}, "row.insert", change, assigned)


def take_rows(db: Session, actor: str, segment: Segment, copy: str, layout: int, source: str,
              assigned: list[str] | None = None) -> tuple[int, int]:
    """Every row of the copy replaced by the rows of copy ``source`` as they stand, its cut included: how an
    adjudicator takes an annotator's segmentation (field-by-field picks cannot add or remove rows)."""
    theirs = [dict(r["values"]) for r in copy_rows(db, segment, source, assigned)]

    def change(rows: Rows) -> tuple[Rows, list[int | None], int]:
        return cuts.renumbered(theirs), [None] * len(theirs), 1

    return _recut(db, actor, segment, copy, layout, {}, "rows.take", change, assigned)


def take_fields(db: Session, actor: str, segment: Segment, copy: str, layout: int, source: str,
                versions: dict[int, int], only: list[int] | None = None, assigned: list[str] | None = None) -> list[int]:
    """Write copy ``source``'s value of every field where its row departs from the copy's (row for row, or by
    time where the cuts differ) into rows ``only`` (default: every row): one transaction, every row's version
    checked first (LayoutConflict otherwise) and every row checked as a save is (FieldError), so either all of
    it is written or nothing. Returns the rows written."""
    with writing(db, segment.sample_id):
        cut = copy_cut(db, segment.sample_id, copy)
        rows = copy_rows(db, segment, copy, assigned)
        _check_rows(len(rows), versions, only)
        _check_layout(rows, cut.revision if cut is not None else 0, layout, versions)
        values = [r["values"] for r in rows]
        theirs = [r["values"] for r in copy_rows(db, segment, source, assigned)]
        # Their evidence references name their rows: each is moved to the row of this copy that stands for it.
        mapping = cuts.counterparts(theirs, values)
        written = []
        for row, match in zip(rows, cuts.align(values, theirs)):
            index = row["row_index"]
            if match is None or (only is not None and index not in only):
                continue
            taken, lost = cuts.moved_references(theirs[match], mapping)
            fields = {name: taken[name] for name in FIELD_NAMES
                      if name in taken and dump(taken[name]) != dump(row["values"].get(name))}
            # A reference to a row this cut lacks (deleted here) refuses the take only where it would write the
            # field without it; where the rest already stands here, nothing is taken (as the delete dropped it).
            lost = [(name, ref) for name, ref in lost if name in fields]
            if lost:
                raise FieldError([{"field": name, "row_index": index, "message": (
                    f"{source}'s row {match + 1} refers to their row {ref}, which no row of this copy's cut stands "
                    f"for (their cut differs here): take their cut first, or set this field by hand")}
                    for name, ref in lost])
            if not fields:
                continue
            if index not in versions:  # a row the taker never saw: their view is older than the copy
                raise LayoutConflict(row, cut.revision if cut is not None else 0)
            save_in(db, actor, segment, copy, row, fields, values if cut is not None else None, assigned)
            written.append(index)
        reopen_if_verified(db, actor, segment.sample_id, copy)
    return written


def move_boundary(db: Session, actor: str, segment: Segment, copy: str, layout: int, row_index: int, version: int,
                  next_version: int, at: float, assigned: list[str] | None = None) -> int:
    """Move the boundary rows ``row_index`` and ``row_index + 1`` share (the first's end, the second's start) to
    ``at``, both in one transaction: checked like two time saves, each row's version first. Returns the layout."""
    with writing(db, segment.sample_id):
        cut = copy_cut(db, segment.sample_id, copy)
        revision = cut.revision if cut is not None else 0
        rows = copy_rows(db, segment, copy, assigned)
        _check_layout(rows, revision, layout, {row_index: version, row_index + 1: next_version})
        first, second = rows[row_index - 1], rows[row_index]
        probe = [r["values"] for r in rows]
        probe[row_index - 1] = {**first["values"], "end_time": at}
        probe[row_index] = {**second["values"], "start_time": at}
        problems = [*cuts.check_times(probe, row_index, float(first["values"]["start_time"]), at, segment.time_limit),
                    *cuts.check_times(probe, row_index + 1, at, float(second["values"]["end_time"]), segment.time_limit)]
        if problems:
            raise FieldError(problems)
        save_in(db, actor, segment, copy, first, {"end_time": at}, probe, assigned)
        save_in(db, actor, segment, copy, second, {"start_time": at}, probe, assigned)
        reopen_if_verified(db, actor, segment.sample_id, copy)
    return revision


def delete_row(db: Session, actor: str, segment: Segment, copy: str, layout: int, row_index: int, version: int,
               assigned: list[str] | None = None) -> tuple[int, int]:
    """Delete row ``row_index`` of a copy (a re-cut, audited); the new layout revision and the row reported."""
    def change(rows: Rows) -> tuple[Rows, list[int | None], int]:
        new = cuts.delete(rows, row_index)
        return new, [*range(1, row_index), *range(row_index + 1, len(rows) + 1)], row_index

    return _recut(db, actor, segment, copy, layout, {row_index: version}, "row.delete", change, assigned)
