"""Every write of the review tool goes through this module, and every write lands in the audit log here.

Rows are versioned per copy: a save names the version it started from and is refused with
:class:`Conflict` when the stored version moved on, so two people never silently overwrite each other.
The version check is the ``WHERE version = :seen`` of the UPDATE itself (atomic on every backend: on
PostgreSQL a concurrent UPDATE of the row waits for the other and then re-checks the condition), and a
row's first save is an INSERT the unique constraint lets only one writer make.

Writes that read before they write (verify, discard, a segment's first state, a new account) must not
interleave. On SQLite a process-wide lock serialises all writes (SQLite has one writer anyway; the lock
keeps writers from queueing in its busy handler's sleeps). On PostgreSQL a transaction-level advisory
lock per scope does it across processes, so several ``rescue review serve`` processes may share one
database: one lock per segment (writes to different segments run in parallel and share WAL flushes) and
one for accounts and one for assignments. Each transaction takes at most one, so none can deadlock.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from rescue.review import cuts, security
from rescue.review.fields import (
    FIELD_NAMES,
    TIME_FIELDS,
    FieldError,
    check_edit,
    row_checks,
    sample_issues,
    unacknowledged,
)
from rescue.review.models import (
    FINAL,
    ROLES,
    Assignment,
    AuditEntry,
    Comment,
    CopyCut,
    LoginSession,
    RowCopy,
    SegmentState,
    User,
    now,
)
from rescue.review.project import Project, Segment
from rescue.errors import (
    AccountDisabled as AccountDisabled,
    Conflict as Conflict,
    LayoutConflict as LayoutConflict,
    ReviewError as ReviewError,
)

_write_lock = threading.Lock()


@dataclass(frozen=True)
class Saved:
    """A row as one save left it."""

    version: int
    values: dict[str, Any]
    acknowledged: list[str]


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


ACCOUNTS, ASSIGNMENTS = "accounts", "assignments"  # the write scopes besides segments (whose ids have a "/")


def _advisory_key(scope: str) -> int:
    """A stable signed 64-bit key for a scope (advisory locks are per database; only this tool takes these)."""
    return int.from_bytes(hashlib.blake2b(f"rescue.review:{scope}".encode(), digest_size=8).digest(), "big", signed=True)


@contextmanager
def _writing(db: Session, scope: str | None) -> Iterator[None]:
    """One write transaction, committed at the end. ``scope`` (a segment id, ACCOUNTS or ASSIGNMENTS) names what
    it reads before it writes; None for plain inserts and deletes, which need no lock on PostgreSQL."""
    db.rollback()  # never write on top of a read transaction's old snapshot
    postgres = db.get_bind().dialect.name == "postgresql"
    with nullcontext() if postgres else _write_lock:
        try:
            if postgres and scope is not None:
                # Held until commit or rollback; under READ COMMITTED every read after it sees the latest writes.
                db.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _advisory_key(scope)})
            yield
            db.commit()
        except BaseException:
            db.rollback()
            raise


def _audit(db: Session, user: str, action: str, segment_id: str = "", copy: str = "", row_index: int | None = None,
           field: str = "", old: Any = None, new: Any = None) -> None:
    db.add(AuditEntry(at=now(), user=user, action=action, segment_id=segment_id, copy=copy, row_index=row_index,
                      field=field, old_json=_dump(old), new_json=_dump(new)))


# --- users and sessions --------------------------------------------------------------------------------------


def create_user(db: Session, actor: str, name: str, role: str, password: str) -> User:
    """Create an account (audited); ReviewError for a bad or taken name, an unknown role or a weak password."""
    if not security.NAME_PATTERN.match(name) or name == FINAL:
        raise ReviewError(f"user name {name!r}: use 1-64 letters, digits, '.', '_' or '-' (and not {FINAL!r})")
    if role not in ROLES:
        raise ReviewError(f"role {role!r}: choose one of {', '.join(ROLES)}")
    password_hash = security.hash_password(_checked_password(password))
    with _writing(db, ACCOUNTS):
        # Unique whatever the case: "Ann" and "ann" would be one person to every reader of the audit log.
        taken = db.scalar(select(User.name).where(func.lower(User.name) == name.lower()))
        if taken is not None:
            raise ReviewError(f"user {taken!r} already exists" + (f" (names are unique whatever their case: "
                                                                    f"{name!r} is taken)" if taken != name else ""))
        user = User(name=name, role=role, password_hash=password_hash, created_at=now())
        db.add(user)
        _audit(db, actor, "user.add", field="role", new={"name": name, "role": role})
    return user


def _checked_password(password: str) -> str:
    if len(password) < 8:
        raise ReviewError("password: at least 8 characters")
    return password


def list_users(db: Session) -> list[dict[str, Any]]:
    """Every account: name, role, when created, and whether and when disabled."""
    return [{"name": u.name, "role": u.role, "created_at": u.created_at, "disabled": bool(u.disabled_at),
             "disabled_at": u.disabled_at or None} for u in db.scalars(select(User).order_by(User.name))]


def _user(db: Session, name: str) -> User:
    user = db.scalar(select(User).where(User.name == name))
    if user is None:
        raise ReviewError(f"no user {name!r}")
    return user


def _end_sessions(db: Session, user: User) -> None:
    db.execute(delete(LoginSession).where(LoginSession.user_id == user.id))


def set_password(db: Session, actor: str, name: str, password: str) -> None:
    """A new password; every session of the account ends (whoever knew the old one is logged out)."""
    password_hash = security.hash_password(_checked_password(password))
    with _writing(db, ACCOUNTS):
        user = _user(db, name)
        user.password_hash = password_hash
        _end_sessions(db, user)
        _audit(db, actor, "user.passwd", field="password", new={"name": name})


def set_disabled(db: Session, actor: str, name: str, disabled: bool) -> None:
    """Disable an account (it can no longer log in and its sessions end; its copies, comments, assignments and
    audit stay as they are) or enable it again."""
    with _writing(db, ACCOUNTS):
        user = _user(db, name)
        if bool(user.disabled_at) == disabled:
            return
        user.disabled_at = now() if disabled else ""
        if disabled:
            _end_sessions(db, user)
        _audit(db, actor, "user.disable" if disabled else "user.enable", field="disabled", old=not disabled,
               new={"name": name, "disabled": disabled})


def login(db: Session, name: str, password: str) -> tuple[User, str, str] | None:
    """A new session for a right name and password; None otherwise. Raises AccountDisabled (for the right
    password only, so the answer tells a guesser nothing)."""
    user = db.scalar(select(User).where(User.name == name))
    if user is None:
        security.burn_time(password)
        return None
    if not security.verify_password(user.password_hash, password):
        return None
    if user.disabled_at:
        raise AccountDisabled(f"the account {name!r} is disabled; an admin can enable it again")
    token, csrf = security.new_token(), security.new_token()
    with _writing(db, None):
        db.add(LoginSession(token_hash=security.token_hash(token), user_id=user.id, csrf=csrf, created_at=now(),
                            expires_at=security.expiry()))
        _audit(db, name, "login")
    return user, token, csrf


def logout(db: Session, token: str) -> None:
    """End the login session of ``token``."""
    with _writing(db, None):
        db.execute(delete(LoginSession).where(LoginSession.token_hash == security.token_hash(token)))


# --- assignment ------------------------------------------------------------------------------------------------


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
    with _writing(db, ASSIGNMENTS):
        db.execute(delete(Assignment))
        for i, sample_id in enumerate(sorted(project.segments)):
            chosen = [names[(i * k + j) % len(names)] for j in range(k)]
            plan[sample_id] = chosen
            for name in chosen:
                db.add(Assignment(segment_id=sample_id, user_id=by_name[name].id))
        _audit(db, actor, "assign", field="k", new={"k": k, "annotators": names})
    return plan


def assignments(db: Session) -> dict[str, list[str]]:
    """Who is assigned to each segment, by segment id."""
    rows = db.execute(select(Assignment.segment_id, User.name).join(User, User.id == Assignment.user_id))
    plan: dict[str, list[str]] = {}
    for segment_id, name in rows:
        plan.setdefault(segment_id, []).append(name)
    return {k: sorted(v) for k, v in plan.items()}


# --- rows --------------------------------------------------------------------------------------------------------


def stored_rows(db: Session, segment_id: str, copy: str, only: int | None = None) -> dict[int, RowCopy]:
    """The saved rows of one copy of a segment (only row ``only`` when given), by row index."""
    query = select(RowCopy).where(RowCopy.segment_id == segment_id, RowCopy.copy == copy)
    found = db.scalars(query if only is None else query.where(RowCopy.row_index == only))
    return {r.row_index: r for r in found}


def segment_assignees(db: Session, segment_id: str) -> list[str]:
    """The annotators assigned to a segment."""
    rows = db.execute(select(User.name).join(Assignment, Assignment.user_id == User.id)
                      .where(Assignment.segment_id == segment_id))
    return sorted(name for (name,) in rows)


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


def draft_counterparts(segment: Segment, values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The draft row each row of a copy stands for: the same row where the copy keeps the draft's cut, else the
    draft row it overlaps longest in time (see :func:`rescue.review.cuts.align`); a row with no such draft
    row (speech the draft missed) stands for a blank row of its own span."""
    draft = segment.rows
    matched = cuts.align(values, draft)
    return [draft[m] if m is not None else cuts.blank_row(float(v.get("start_time") or 0), float(v.get("end_time") or 0))
            for v, m in zip(values, matched)]


def copy_values(db: Session, segment: Segment, copy: str) -> list[dict[str, Any]]:
    """The release-format rows of one copy."""
    return [row["values"] for row in copy_rows(db, segment, copy)]


def _base_rows(db: Session, segment: Segment, copy: str, assigned: list[str] | None = None,
               only: int | None = None) -> list[dict[str, Any]]:
    """What a copy starts from: the draft, and for the final copy the annotators' value wherever they all
    agree (for row ``only`` alone when given)."""
    rows = [dict(r) for r in segment.rows]
    if copy != FINAL:
        return rows
    if assigned is None:
        assigned = segment_assignees(db, segment.sample_id)
    others: list[dict[int, dict[str, Any]]] = []
    for name in annotator_copies(db, segment.sample_id, assigned):
        if copy_cut(db, segment.sample_id, name) is None:
            others.append({i: json.loads(r.values_json) for i, r in stored_rows(db, segment.sample_id, name, only).items()})
        else:  # a re-cut copy speaks for each draft row through the row overlapping it longest
            theirs = [json.loads(r.values_json) for _, r in sorted(stored_rows(db, segment.sample_id, name).items())]
            others.append({i: theirs[m] for i, m in enumerate(cuts.align(segment.rows, theirs), start=1) if m is not None})
    if not others:
        return rows
    for index, row in enumerate(rows, start=1):
        if only is not None and index != only:
            continue
        versions = [o[index] if index in o else segment.rows[index - 1] for o in others]
        for name in FIELD_NAMES:
            values = [v.get(name) for v in versions]
            if all(_dump(v) == _dump(values[0]) for v in values) and (name in row or values[0] is not None):
                row[name] = values[0]
    return rows


def copy_rows(db: Session, segment: Segment, copy: str, assigned: list[str] | None = None) -> list[dict[str, Any]]:
    """Every row of one copy: ``values`` (the full release-format row), ``version`` (0 = never saved) and
    ``accepted`` (the fields someone accepted or edited)."""
    stored = stored_rows(db, segment.sample_id, copy)
    cut = copy_cut(db, segment.sample_id, copy)
    count = cut.rows if cut is not None else len(segment.rows)
    base = _base_rows(db, segment, copy, assigned) if len(stored) < count else []
    out = []
    for index in range(1, count + 1):
        record = stored.get(index)
        if record is None:
            out.append({"row_index": index, "version": 0, "values": base[index - 1], "accepted": [],
                        "acknowledged": [], "updated_by": None, "updated_at": None})
        else:
            out.append(_stored(record))
    return out


def _stored(record: RowCopy) -> dict[str, Any]:
    return {"row_index": record.row_index, "version": record.version, "values": json.loads(record.values_json),
            "accepted": json.loads(record.accepted_json), "acknowledged": json.loads(record.acknowledged_json or "[]"),
            "updated_by": record.updated_by, "updated_at": record.updated_at}


def _current_row(db: Session, segment: Segment, copy: str, row_index: int, assigned: list[str] | None) -> dict[str, Any]:
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


def save_row(
    db: Session,
    actor: str,
    segment: Segment,
    copy: str,
    row_index: int,
    version: int,
    fields: dict[str, Any],
    accepted: list[str] | None = None,
    assigned: list[str] | None = None,
    acknowledged: list[str] | None = None,
) -> Saved:
    """Apply ``fields`` to one row of a copy if its stored version is still ``version``.

    ``acknowledged`` (when given) replaces the row's acknowledged warnings: keys ``rule@field`` of warnings the
    row has after the save. Raises Conflict (someone saved first), FieldError (a value the benchmark would
    reject, or an acknowledgement of something that is not a warning of the row) or ReviewError.
    """
    cut = copy_cut(db, segment.sample_id, copy)
    count = cut.rows if cut is not None else len(segment.rows)
    if not 1 <= row_index <= count:
        raise ReviewError(f"row {row_index} does not exist (1-{count})")
    bad = [name for name in accepted or [] if name not in FIELD_NAMES]
    if bad:
        raise FieldError([{"field": name, "message": "not an editable field"} for name in bad])
    # Checked before taking the write lock: the check depends only on this row (and, for a boundary move, its
    # neighbours' starts), and the UPDATE below refuses the save if the row moved on meanwhile (a cut gives
    # every row it moves a new version).
    current = _current_row(db, segment, copy, row_index, assigned)
    if current["version"] != version:
        raise Conflict(current)
    updated = _edited_row(db, segment, copy, row_index, fields, current["values"], cut is not None, assigned)
    warnings = {b.key for b in row_checks(segment, updated) if b.severity == "warning"}
    new_acks = _acknowledgements(current["acknowledged"], acknowledged, warnings)
    with _writing(db, segment.sample_id):
        if any(name in fields for name in TIME_FIELDS):
            # Order is a fact of the whole copy: checked again under the segment's write lock, so two saves of
            # neighbouring rows' times (two tabs of one annotator) are serialised, never both passed against
            # what each read before the other wrote.
            _check_times(segment, [r["values"] for r in copy_rows(db, segment, copy, assigned)], row_index, updated)
        new_accepted = sorted(set(current["accepted"]) | (set(fields) & set(FIELD_NAMES)) | set(accepted or []))
        _store_row(db, actor, segment, copy, row_index, version, assigned,
                   values=updated, accepted=new_accepted, acknowledged=new_acks)
        _audit_save(db, actor, segment, copy, row_index, version, fields, current, updated, new_accepted, new_acks)
        _reopen(db, actor, segment.sample_id, copy)
    return Saved(version + 1, updated, new_acks)


def _edited_row(db: Session, segment: Segment, copy: str, row_index: int, fields: dict[str, Any],
                values: dict[str, Any], cut: bool, assigned: list[str] | None) -> dict[str, Any]:
    """The row's ``values`` with ``fields`` applied, checked as the benchmark would (FieldError otherwise)."""
    # Checked before taking the write lock: the check depends only on this row (and, for a boundary move, its
    # neighbours' starts), and the UPDATE refuses the save if the row moved on meanwhile (a cut gives every row
    # it moves a new version).
    timed = any(name in fields for name in TIME_FIELDS)
    siblings = [r["values"] for r in copy_rows(db, segment, copy, assigned)] if cut or timed else None
    updated = check_edit(segment, values, row_index, dict(fields), siblings)
    if siblings is not None and timed:
        _check_times(segment, siblings, row_index, updated)
    return updated


def _check_times(segment: Segment, rows: list[dict[str, Any]], row_index: int, updated: dict[str, Any]) -> None:
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
               assigned: list[str] | None, *, values: dict[str, Any], accepted: list[str],
               acknowledged: list[str]) -> None:
    """Store the row's next version over ``version`` (0: its first); Conflict when someone saved first."""
    stamp = now()
    if version == 0:
        db.add(RowCopy(segment_id=segment.sample_id, copy=copy, row_index=row_index, version=1,
                       values_json=_dump(values), accepted_json=_dump(accepted),
                       acknowledged_json=_dump(acknowledged), updated_by=actor, updated_at=stamp))
        try:
            db.flush()
        except IntegrityError:  # someone stored the row first
            db.rollback()
            raise Conflict(_current_row(db, segment, copy, row_index, assigned)) from None
        return
    result = db.execute(
        update(RowCopy)
        .where(RowCopy.segment_id == segment.sample_id, RowCopy.copy == copy, RowCopy.row_index == row_index,
               RowCopy.version == version)
        .values(version=version + 1, values_json=_dump(values), accepted_json=_dump(accepted),
                acknowledged_json=_dump(acknowledged), updated_by=actor, updated_at=stamp)
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        raise Conflict(_current_row(db, segment, copy, row_index, assigned))


def _audit_save(db: Session, actor: str, segment: Segment, copy: str, row_index: int, version: int,
                fields: dict[str, Any], current: dict[str, Any], updated: dict[str, Any], new_accepted: list[str],
                new_acks: list[str]) -> None:
    """The audit entries of one save: adopted values, edited fields, accepted fields, acknowledgements."""
    old_values = current["values"]
    if version == 0:
        _audit_adopted(db, actor, segment, copy, row_index, old_values, fields)
    for name in fields:
        if _dump(old_values.get(name)) != _dump(updated.get(name)):
            _audit(db, actor, "row.edit", segment.sample_id, copy, row_index, name, old_values.get(name), updated.get(name))
    old_accepted = sorted(current["accepted"])
    if new_accepted != old_accepted:
        _audit(db, actor, "row.accept", segment.sample_id, copy, row_index, "accepted", old_accepted, new_accepted)
    old_acks = sorted(current["acknowledged"])
    if new_acks != old_acks:
        _audit(db, actor, "row.acknowledge", segment.sample_id, copy, row_index, "acknowledged", old_acks, new_acks)


def _audit_adopted(db: Session, actor: str, segment: Segment, copy: str, row_index: int, values: dict[str, Any],
                   skip: Iterable[str]) -> None:
    """A final copy starts from the annotators' agreed values; storing its row for the first time makes
    those departures from the draft permanent, so the audit log shows them like any edit."""
    draft = segment.rows[row_index - 1]
    for name in FIELD_NAMES:
        if name not in skip and _dump(draft.get(name)) != _dump(values.get(name)):
            _audit(db, actor, "row.adopt", segment.sample_id, copy, row_index, name, draft.get(name), values.get(name))


# --- re-cutting rows ------------------------------------------------------------------------------------------------
# A cut rewrites the copy's whole row list: every row is stored from then on (so the copy no longer follows the
# draft's numbering), rows whose number or content changed get one new version above every version the copy has
# held (so a save or a cut started from the old numbering is a conflict, never a write to the wrong row), and the
# cut's revision moves on.

Rows = list[dict[str, Any]]


def _recut(db: Session, actor: str, segment: Segment, copy: str, layout: int, versions: dict[int, int],
           action: str, change: Callable[[Rows], tuple[Rows, list[int | None], int]],
           assigned: list[str] | None) -> tuple[int, int]:
    """Apply ``change`` (rows -> new rows, the old 1-based row each new row comes from unchanged or None, and
    the row to report) to one copy; returns (new layout revision, that row)."""
    with _writing(db, segment.sample_id):
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
            if source == position and record is not None and record.values_json == _dump(values):
                continue  # the same row at the same place (its evidence references may have been renumbered)
            old = rows[source - 1] if source is not None else None
            accepted = _dump(old["accepted"]) if old is not None else "[]"
            acknowledged = _dump(old["acknowledged"]) if old is not None else "[]"  # the row's warnings move with it
            if record is None:
                db.add(RowCopy(segment_id=segment.sample_id, copy=copy, row_index=position, version=fresh,
                               values_json=_dump(values), accepted_json=accepted, acknowledged_json=acknowledged,
                               updated_by=actor, updated_at=stamp))
                if copy == FINAL and old is not None and old["version"] == 0:
                    _audit_adopted(db, actor, segment, copy, source or position, values, ())
            else:
                record.version, record.values_json, record.accepted_json = fresh, _dump(values), accepted
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
        _audit(db, actor, action, segment.sample_id, copy, reported, "rows",
               {"rows": len(rows), "changed": [rows[i - 1]["values"] for i in touched if 1 <= i <= len(rows)]},
               {"rows": len(new_rows), "changed": [new_rows[i - 1] for i in _new_positions(action, reported)
                                                   if 1 <= i <= len(new_rows)]})
        _reopen(db, actor, segment.sample_id, copy)
    return revision + 1, reported


def _check_layout(rows: list[dict[str, Any]], revision: int, layout: int, versions: dict[int, int]) -> None:
    """A cut starts from the copy's current cut (``layout``) and the current versions of the rows it touches."""
    if revision != layout:
        raise LayoutConflict({"layout": revision, "rows": len(rows)}, revision)
    for index, version in versions.items():
        if not 1 <= index <= len(rows):
            raise ReviewError(f"row {index} does not exist (1-{len(rows)})")
        if rows[index - 1]["version"] != version:
            raise LayoutConflict(rows[index - 1], revision)


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
    with _writing(db, segment.sample_id):
        cut = copy_cut(db, segment.sample_id, copy)
        rows = copy_rows(db, segment, copy, assigned)
        _check_layout(rows, cut.revision if cut is not None else 0, layout, versions)
        values = [r["values"] for r in rows]
        theirs = [r["values"] for r in copy_rows(db, segment, source, assigned)]
        written = []
        for row, match in zip(rows, cuts.align(values, theirs)):
            index = row["row_index"]
            if match is None or (only is not None and index not in only):
                continue
            fields = {name: theirs[match][name] for name in FIELD_NAMES
                      if name in theirs[match] and _dump(theirs[match][name]) != _dump(row["values"].get(name))}
            if not fields:
                continue
            if index not in versions:  # a row the taker never saw: their view is older than the copy
                raise LayoutConflict(row, cut.revision if cut is not None else 0)
            _save_in(db, actor, segment, copy, row, fields, values if cut is not None else None, assigned)
            written.append(index)
        _reopen(db, actor, segment.sample_id, copy)
    return written


def move_boundary(db: Session, actor: str, segment: Segment, copy: str, layout: int, row_index: int, version: int,
                  next_version: int, at: float, assigned: list[str] | None = None) -> int:
    """Move the boundary rows ``row_index`` and ``row_index + 1`` share (the first's end, the second's start) to
    ``at``, both in one transaction: checked like two time saves, each row's version first. Returns the layout."""
    with _writing(db, segment.sample_id):
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
        _save_in(db, actor, segment, copy, first, {"end_time": at}, probe, assigned)
        _save_in(db, actor, segment, copy, second, {"start_time": at}, probe, assigned)
        _reopen(db, actor, segment.sample_id, copy)
    return revision


def _save_in(db: Session, actor: str, segment: Segment, copy: str, current: dict[str, Any], fields: dict[str, Any],
             siblings: list[dict[str, Any]] | None, assigned: list[str] | None) -> None:
    """One row's save inside a write transaction already open: checked, stored over its version, audited."""
    index, version = current["row_index"], current["version"]
    updated = check_edit(segment, current["values"], index, dict(fields), siblings)
    warnings = {b.key for b in row_checks(segment, updated) if b.severity == "warning"}
    new_acks = _acknowledgements(current["acknowledged"], None, warnings)
    new_accepted = sorted(set(current["accepted"]) | set(fields))
    _store_row(db, actor, segment, copy, index, version, assigned, values=updated, accepted=new_accepted,
               acknowledged=new_acks)
    _audit_save(db, actor, segment, copy, index, version, fields, current, updated, new_accepted, new_acks)


def delete_row(db: Session, actor: str, segment: Segment, copy: str, layout: int, row_index: int, version: int,
               assigned: list[str] | None = None) -> tuple[int, int]:
    """Delete row ``row_index`` of a copy (a re-cut, audited); the new layout revision and the row reported."""
    def change(rows: Rows) -> tuple[Rows, list[int | None], int]:
        new = cuts.delete(rows, row_index)
        return new, [*range(1, row_index), *range(row_index + 1, len(rows) + 1)], row_index

    return _recut(db, actor, segment, copy, layout, {row_index: version}, "row.delete", change, assigned)


# --- segments ------------------------------------------------------------------------------------------------------


def segment_state(db: Session, segment_id: str, copy: str) -> SegmentState | None:
    """The state (open, verified, discarded) stored for one copy, None when never set."""
    return db.scalar(select(SegmentState).where(SegmentState.segment_id == segment_id, SegmentState.copy == copy))


def _set_state(db: Session, actor: str, segment_id: str, copy: str, status: str, reason: str = "", comment: str = "") -> None:
    state = segment_state(db, segment_id, copy)
    old = {"status": state.status, "reason": state.reason, "comment": state.comment} if state else {"status": "open"}
    if state is None:
        state = SegmentState(segment_id=segment_id, copy=copy, status=status, updated_by=actor)
        db.add(state)
    state.status, state.reason, state.comment, state.updated_by, state.updated_at = status, reason, comment, actor, now()
    _audit(db, actor, f"segment.{status}", segment_id, copy, None, "status", old,
           {"status": status, "reason": reason, "comment": comment})


def _reopen(db: Session, actor: str, segment_id: str, copy: str) -> None:
    """An edit after verification means the copy needs verifying again."""
    state = segment_state(db, segment_id, copy)
    if state is not None and state.status == "verified":
        _set_state(db, actor, segment_id, copy, "open")


def verify(db: Session, actor: str, segment: Segment, copy: str, assigned: list[str] | None = None) -> None:
    """Accept the copy as it stands: every row counts as reviewed. Refused while it has validation errors or
    a warning of the rulebook nobody acknowledged."""
    with _writing(db, segment.sample_id):
        rows = copy_rows(db, segment, copy, assigned)
        issues = sample_issues(segment, [r["values"] for r in rows])
        if issues:
            raise FieldError([{"field": i.field or "rows", "row_index": i.row, "message": i.message,
                               **({"rule": i.rule} if i.rule else {})} for i in issues])
        open_warnings = [{"field": b.field, "row_index": row["row_index"], "rule": b.rule.id, "key": b.key,
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
                stored[index].accepted_json = _dump(everything)
                stored[index].version += 1
            else:
                db.add(RowCopy(segment_id=segment.sample_id, copy=copy, row_index=index, version=1,
                               values_json=_dump(row["values"]), accepted_json=_dump(everything), updated_by=actor,
                               updated_at=now()))
                _audit_adopted(db, actor, segment, copy, index, row["values"], ())
        _set_state(db, actor, segment.sample_id, copy, "verified")


def discard(db: Session, actor: str, segment_id: str, copy: str, reason: str, comment: str) -> None:
    """Mark a copy discarded, with the reason and comment (audited)."""
    with _writing(db, segment_id):
        _set_state(db, actor, segment_id, copy, "discarded", reason, comment)


def reopen(db: Session, actor: str, segment_id: str, copy: str) -> None:
    """Mark a copy open again (audited)."""
    with _writing(db, segment_id):
        _set_state(db, actor, segment_id, copy, "open")


def add_comment(db: Session, actor: str, segment_id: str, row_index: int | None, text: str) -> Comment:
    """Add a comment to a segment or a row (audited)."""
    with _writing(db, None):  # only inserts
        entry = Comment(segment_id=segment_id, row_index=row_index, author=actor, text=text, created_at=now())
        db.add(entry)
        _audit(db, actor, "comment", segment_id, "", row_index, "comment", None, text)
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


def comments(db: Session, segment_id: str) -> list[dict[str, Any]]:
    """A segment's comments, oldest first."""
    found = db.scalars(select(Comment).where(Comment.segment_id == segment_id).order_by(Comment.id))
    return [{"id": c.id, "row_index": c.row_index, "author": c.author, "text": c.text, "created_at": c.created_at} for c in found]


def audit_log(db: Session, segment_id: str, row_index: int | None = None) -> list[dict[str, Any]]:
    """A segment's audit entries (one row's when ``row_index`` is given), oldest first."""
    query = select(AuditEntry).where(AuditEntry.segment_id == segment_id)
    if row_index is not None:
        query = query.where(AuditEntry.row_index == row_index)
    return [
        {"at": a.at, "user": a.user, "action": a.action, "copy": a.copy, "row_index": a.row_index, "field": a.field,
         "old": json.loads(a.old_json), "new": json.loads(a.new_json)}
        for a in db.scalars(query.order_by(AuditEntry.id))
    ]
