"""Saving rows: one field save, a save inside a larger transaction, and a copy's verification.

Rows are versioned per copy: a save names the version it started from and is refused with
:class:`~rescue.errors.Conflict` when the stored version moved on, so two people never silently overwrite each
other. The version check is the ``WHERE version = :seen`` of the UPDATE itself (atomic on every backend: on
PostgreSQL a concurrent UPDATE of the row waits for the other and then re-checks the condition), and a
row's first save is an INSERT the unique constraint lets only one writer make.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from rescue.errors import Conflict, FieldProblem, ReviewError
from rescue.data.errors import DataIssue
from rescue.review import cuts
from rescue.review.fields import (
    FIELD_NAMES,
    TIME_FIELDS,
    FieldError,
    check_edit,
    row_checks,
    sample_issues,
    unacknowledged,
)
from rescue.review.models import RowCopy, now
from rescue.review.project import Segment
from rescue.review.crud._rows import copy_cut, copy_rows, current_row, stored_rows
from rescue.review.crud._states import reopen_if_verified, set_state
from rescue.review.crud._write import audit, dump, writing
from rescue.review.shapes import CopyRow, RowValues


@dataclass(frozen=True)
class Saved:
    """A row as one save left it."""

    version: int
    values: RowValues
    acknowledged: list[str]


def save_row(
    db: Session,
    actor: str,
    segment: Segment,
    copy: str,
    row_index: int,
    version: int,
    fields: RowValues,
    accepted: list[str] | None = None,
    assigned: list[str] | None = None,
    acknowledged: list[str] | None = None,
    restore_accepted: list[str] | None = None,
    remove: list[str] | None = None,
) -> Saved:
    """Apply ``fields`` to one row of a copy if its stored version is still ``version``.

    ``acknowledged`` (when given) replaces the row's acknowledged warnings: keys ``rule@field`` of warnings the
    row has after the save. ``restore_accepted`` (an undo giving a row back what it held) replaces the row's
    accepted fields, instead of adding the fields saved to them: an undo accepts nothing nobody accepted.
    ``remove`` names fields to take out of the row (an undo giving a row back the keys it had: a field the row
    never held leaves it, where a null would be a change); each must be editable, named once, not also saved,
    and one the release lets a row leave out (its validation refuses the rest). Raises Conflict (someone saved first), FieldError (a value the benchmark would
    reject, or an acknowledgement of something that is not a warning of the row) or ReviewError.
    """
    cut = copy_cut(db, segment.sample_id, copy)
    count = cut.rows if cut is not None else len(segment.rows)
    if not 1 <= row_index <= count:
        raise ReviewError(f"row {row_index} does not exist (1-{count})")
    bad = [name for name in [*(accepted or []), *(restore_accepted or [])] if name not in FIELD_NAMES]
    if bad:
        raise FieldError([{"field": name, "message": "not an editable field"} for name in bad])
    # Checked before taking the write lock: the check depends only on this row (and, for a boundary move, its
    # neighbours' starts), and the UPDATE below refuses the save if the row moved on meanwhile (a cut gives
    # every row it moves a new version).
    current = current_row(db, segment, copy, row_index, assigned)
    if current["version"] != version:
        raise Conflict(current)
    remove = remove or []
    updated = _edited_row(db, segment, copy, row_index, fields, current["values"], cut is not None, assigned, remove)
    warnings = {b.key for b in row_checks(segment, updated) if b.severity == "warning"}
    new_acks = _acknowledgements(current["acknowledged"], acknowledged, warnings)
    with writing(db, segment.sample_id):
        if any(name in fields for name in TIME_FIELDS):
            # Order is a fact of the whole copy: checked again under the segment's write lock, so two saves of
            # neighbouring rows' times (two tabs of one annotator) are serialised, never both passed against
            # what each read before the other wrote.
            _check_times(segment, [r["values"] for r in copy_rows(db, segment, copy, assigned)], row_index, updated)
        new_accepted = sorted(set(restore_accepted)) if restore_accepted is not None else sorted(
            set(current["accepted"]) | ((set(fields) | set(remove)) & set(FIELD_NAMES)) | set(accepted or []))
        _store_row(db, actor, segment, copy, row_index, version, assigned,
                   values=updated, accepted=new_accepted, acknowledged=new_acks)
        _audit_save(db, actor, segment, copy, row_index, version, [*fields, *remove], current, updated, new_accepted,
                    new_acks)
        reopen_if_verified(db, actor, segment.sample_id, copy)
    return Saved(version + 1, updated, new_acks)


def _edited_row(db: Session, segment: Segment, copy: str, row_index: int, fields: RowValues,
                values: RowValues, cut: bool, assigned: list[str] | None, remove: list[str]) -> RowValues:
    """The row's ``values`` with ``fields`` applied and ``remove`` taken out, checked as the benchmark would
    (FieldError otherwise)."""
    # Checked before taking the write lock: the check depends only on this row (and, for a boundary move, its
    # neighbours' starts), and the UPDATE refuses the save if the row moved on meanwhile (a cut gives every row
    # it moves a new version).
    timed = any(name in fields for name in TIME_FIELDS)
    siblings = [r["values"] for r in copy_rows(db, segment, copy, assigned)] if cut or timed else None
    updated = check_edit(segment, values, row_index, dict(fields), siblings, remove)
    if siblings is not None and timed:
        _check_times(segment, siblings, row_index, updated)
    return updated


def _check_times(segment: Segment, rows: list[RowValues], row_index: int, updated: RowValues) -> None:
    problems = cuts.check_times(rows, row_index, float(updated["start_time"]), float(updated["end_time"]),
                                segment.time_limit)
    if problems:
        raise FieldError(problems)


def _acknowledgements(current: list[str], acknowledged: list[str] | None, warnings: set[str]) -> list[str]:
    """The row's acknowledged warnings after a save: ``acknowledged`` (or the current ones when None), only those
    still warnings. An acknowledgement lapses with its warning: should the warning come back, it is asked again."""
    if acknowledged is not None:
        wrong = [key for key in acknowledged if key not in warnings]
        if wrong:
            raise FieldError([{"field": key.partition("@")[2] or key, "message": f"{key!r} is not a warning of this "
                               "row (only warnings can be acknowledged; errors must be fixed)"} for key in wrong])
    return sorted(k for k in (current if acknowledged is None else set(acknowledged)) if k in warnings)


def _store_row(db: Session, actor: str, segment: Segment, copy: str, row_index: int, version: int,
               assigned: list[str] | None, *, values: RowValues, accepted: list[str],
               acknowledged: list[str]) -> None:
    """Store the row's next version over ``version`` (0: its first); Conflict when someone saved first."""
    stamp = now()
    if version == 0:
        db.add(RowCopy(segment_id=segment.sample_id, copy=copy, row_index=row_index, version=1,
                       values_json=dump(values), accepted_json=dump(accepted),
                       acknowledged_json=dump(acknowledged), updated_by=actor, updated_at=stamp))
        try:
            db.flush()
        except IntegrityError:  # someone stored the row first
            db.rollback()
            raise Conflict(current_row(db, segment, copy, row_index, assigned)) from None
        return
    result = db.execute(
        update(RowCopy)
        .where(RowCopy.segment_id == segment.sample_id, RowCopy.copy == copy, RowCopy.row_index == row_index,
               RowCopy.version == version)
        .values(version=version + 1, values_json=dump(values), accepted_json=dump(accepted),
                acknowledged_json=dump(acknowledged), updated_by=actor, updated_at=stamp)
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        raise Conflict(current_row(db, segment, copy, row_index, assigned))


def _audit_save(db: Session, actor: str, segment: Segment, copy: str, row_index: int, version: int,
                fields: Collection[str], current: CopyRow, updated: RowValues, new_accepted: list[str],
                new_acks: list[str]) -> None:
    """The audit entries of one save: adopted values, edited (or removed: new null) ``fields``, accepted fields,
    acknowledgements."""
    old_values = current["values"]
    if version == 0:
        audit_adopted(db, actor, segment, copy, row_index, old_values, fields)
    for name in fields:
        if dump(old_values.get(name)) != dump(updated.get(name)):
            audit(db, actor, "row.edit", segment.sample_id, copy, row_index, name, old_values.get(name), updated.get(name))
    old_accepted = sorted(current["accepted"])
    if new_accepted != old_accepted:
        audit(db, actor, "row.accept", segment.sample_id, copy, row_index, "accepted", old_accepted, new_accepted)
    old_acks = sorted(current["acknowledged"])
    if new_acks != old_acks:
        audit(db, actor, "row.acknowledge", segment.sample_id, copy, row_index, "acknowledged", old_acks, new_acks)


def audit_adopted(db: Session, actor: str, segment: Segment, copy: str, row_index: int, values: RowValues,
                  skip: Iterable[str]) -> None:
    """A final copy starts from the annotators' agreed values; storing its row for the first time makes
    those departures from the draft permanent, so the audit log shows them like any edit."""
    draft = segment.rows[row_index - 1]
    for name in FIELD_NAMES:
        if name not in skip and dump(draft.get(name)) != dump(values.get(name)):
            audit(db, actor, "row.adopt", segment.sample_id, copy, row_index, name, draft.get(name), values.get(name))


def save_in(db: Session, actor: str, segment: Segment, copy: str, current: CopyRow, fields: RowValues,
            siblings: list[RowValues] | None, assigned: list[str] | None) -> None:
    """One row's save inside a write transaction already open: checked, stored over its version, audited."""
    index, version = current["row_index"], current["version"]
    updated = check_edit(segment, current["values"], index, dict(fields), siblings)
    warnings = {b.key for b in row_checks(segment, updated) if b.severity == "warning"}
    new_acks = _acknowledgements(current["acknowledged"], None, warnings)
    new_accepted = sorted(set(current["accepted"]) | set(fields))
    _store_row(db, actor, segment, copy, index, version, assigned, values=updated, accepted=new_accepted,
               acknowledged=new_acks)
    _audit_save(db, actor, segment, copy, index, version, fields, current, updated, new_accepted, new_acks)


def _issue_problem(issue: DataIssue) -> FieldProblem:
    problem: FieldProblem = {"field": issue.field or "rows", "row_index": issue.row, "message": issue.message}
    if issue.rule:
        problem["rule"] = issue.rule
    return problem


def verify(db: Session, actor: str, segment: Segment, copy: str, assigned: list[str] | None = None) -> None:
    """Accept the copy as it stands: every row counts as reviewed. Refused while it has validation errors or
    a warning of the rulebook nobody acknowledged."""
    with writing(db, segment.sample_id):
        rows = copy_rows(db, segment, copy, assigned)
        issues = sample_issues(segment, [r["values"] for r in rows])
        if issues:
            raise FieldError([_issue_problem(i) for i in issues])
        open_warnings: list[FieldProblem] = [{"field": b.field, "row_index": row["row_index"], "rule": b.rule.id, "key": b.key,
                          "message": f"{b.message} (a warning: fix it or acknowledge it)"}
                         for row in rows for b in unacknowledged(segment, row["values"], row["acknowledged"])]
        if open_warnings:
            raise FieldError(open_warnings)
        stored = stored_rows(db, segment.sample_id, copy)
        everything = sorted(FIELD_NAMES)
        for row in rows:
            index = row["row_index"]
            if sorted(row["accepted"]) == everything:
                continue
            if index in stored:
                stored[index].accepted_json = dump(everything)
                stored[index].version += 1
            else:
                db.add(RowCopy(segment_id=segment.sample_id, copy=copy, row_index=index, version=1,
                               values_json=dump(row["values"]), accepted_json=dump(everything), updated_by=actor,
                               updated_at=now()))
                audit_adopted(db, actor, segment, copy, index, row["values"], ())
        set_state(db, actor, segment.sample_id, copy, "verified")
