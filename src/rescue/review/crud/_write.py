"""The one write transaction of the review tool and its audit writer.

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
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from sqlalchemy import text
from sqlalchemy.orm import Session

from rescue.review.models import AuditEntry, now

write_lock = threading.Lock()


def dump(value: object) -> str:
    """A value as stored and compared: one spelling per value (sorted keys), so equal values are equal text."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


ACCOUNTS, ASSIGNMENTS = "accounts", "assignments"  # the write scopes besides segments (whose ids have a "/")


def advisory_key(scope: str) -> int:
    """A stable signed 64-bit key for a scope (advisory locks are per database; only this tool takes these)."""
    return int.from_bytes(hashlib.blake2b(f"rescue.review:{scope}".encode(), digest_size=8).digest(), "big", signed=True)


@contextmanager
def writing(db: Session, scope: str | None) -> Iterator[None]:
    """One write transaction, committed at the end. ``scope`` (a segment id, ACCOUNTS or ASSIGNMENTS) names what
    it reads before it writes; None for plain inserts and deletes, which need no lock on PostgreSQL."""
    db.rollback()  # never write on top of a read transaction's old snapshot
    postgres = db.get_bind().dialect.name == "postgresql"
    with nullcontext() if postgres else write_lock:
        try:
            if postgres and scope is not None:
                # Held until commit or rollback; under READ COMMITTED every read after it sees the latest writes.
                db.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": advisory_key(scope)})
            yield
            db.commit()
        except BaseException:
            db.rollback()
            raise


def audit(db: Session, user: str, action: str, segment_id: str = "", copy: str = "", row_index: int | None = None,
          field: str = "", old: object = None, new: object = None) -> None:
    """One audit entry, added to the open transaction: it is written with the change it records, or not at all."""
    db.add(AuditEntry(at=now(), user=user, action=action, segment_id=segment_id, copy=copy, row_index=row_index,
                      field=field, old_json=dump(old), new_json=dump(new)))
