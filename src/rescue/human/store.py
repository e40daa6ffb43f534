"""What people did in a benchmark project: who takes which instance, their answers and timing, in the review
database (the same accounts, sessions and audit log as verification projects)."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from rescue.errors import Conflict, ReviewError
from rescue.human.benchmark import Benchmark, checked_answer
from rescue.review.crud._write import ASSIGNMENTS, audit, writing
from rescue.review.models import Base, User, now
from rescue.human.shapes import BenchQueueEntry, BenchShown, GivenAnswer

AUDIT_ANSWER = "bench.answer"


class BenchAssignment(Base):
    """One person assigned one instance (``key``: ``task/number``)."""

    __tablename__ = "bench_assignments"
    __table_args__ = (UniqueConstraint("key", "user_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(64), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)  # the order the person takes their instances in


class BenchAnswer(Base):
    """One person's answer to one instance: its value, version, when first shown and when answered."""

    __tablename__ = "bench_answers"
    __table_args__ = (UniqueConstraint("key", "user"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(64), index=True)
    user: Mapped[str] = mapped_column(String(64), index=True)
    value_json: Mapped[str] = mapped_column(Text, default="null")
    version: Mapped[int] = mapped_column(Integer, default=0)  # 0: shown, not answered yet
    shown_at: Mapped[str] = mapped_column(String(40), default=now)
    answered_at: Mapped[str] = mapped_column(String(40), default="")
    seconds: Mapped[float | None] = mapped_column(nullable=True)  # from first shown to first answer


def key_of(task: str, number: int) -> str:
    """The stored key of an instance."""
    return f"{task}/{number}"


def _split_key(key: str) -> tuple[str, int]:
    task, _, number = key.partition("/")
    return task, int(number)


def assign(db: Session, actor: str, bench: Benchmark, k: int | None = None,
           people: list[str] | None = None) -> dict[str, int]:
    """Give every instance to ``k`` people (the project's per-instance count by default), spreading the load
    evenly; each person's instances interleave the tasks. Replaces an earlier assignment; answers stay."""
    users = {u.name: u for u in db.scalars(select(User).order_by(User.name))}
    names = people or [n for n, u in users.items() if u.role == "annotator" and not u.disabled_at]
    unknown = [n for n in names if n not in users or users[n].disabled_at]
    if unknown:
        raise ReviewError(f"unknown or disabled account(s): {', '.join(unknown)}")
    k = bench.per_instance if k is None else k
    if not 1 <= k <= len(names):
        raise ReviewError(f"{k} people per instance needs at least {k} annotator accounts (found: "
                          f"{', '.join(names) or 'none'}); add them with `rescue review user add`")
    load: dict[str, int] = defaultdict(int)
    # Interleave the tasks (one of each in turn), so a person who stops early has answered every task.
    order = sorted(bench.keys(), key=lambda tn: (tn[1], bench.tasks.index(tn[0])))
    with writing(db, ASSIGNMENTS):
        db.execute(delete(BenchAssignment))
        for i, (task, number) in enumerate(order):
            chosen = [names[(i * k + j) % len(names)] for j in range(k)]
            for name in chosen:
                load[name] += 1
                db.add(BenchAssignment(key=key_of(task, number), user_id=users[name].id, position=load[name]))
        audit(db, actor, "bench.assign", field="k", new={"k": k, "people": names})
    return dict(load)


def queue(db: Session, user: str) -> list[BenchQueueEntry]:
    """The person's instances in order, each with whether they answered it (never anyone else's answers)."""
    rows = db.execute(select(BenchAssignment.key).join(User, User.id == BenchAssignment.user_id)
                      .where(User.name == user).order_by(BenchAssignment.position)).scalars().all()
    answered = {a.key for a in db.scalars(select(BenchAnswer).where(BenchAnswer.user == user, BenchAnswer.version > 0))}
    found: list[BenchQueueEntry] = []
    for key in rows:
        task, number = _split_key(key)
        found.append({"task": task, "number": number, "answered": key in answered})
    return found


def assigned(db: Session, user: str, task: str, number: int) -> bool:
    """Whether the instance is in the person's queue."""
    return db.scalar(select(BenchAssignment.id).join(User, User.id == BenchAssignment.user_id)
                     .where(User.name == user, BenchAssignment.key == key_of(task, number))) is not None


def _answer(db: Session, user: str, key: str) -> BenchAnswer | None:
    return db.scalar(select(BenchAnswer).where(BenchAnswer.user == user, BenchAnswer.key == key))


def _answer_or_new(db: Session, user: str, key: str) -> BenchAnswer:
    """The person's stored answer, or a new unanswered one shown now (the first sight starts the clock)."""
    record = _answer(db, user, key)
    if record is None:
        record = BenchAnswer(key=key, user=user, value_json="null", version=0, shown_at=now(), answered_at="")
        db.add(record)
    return record


def shown(db: Session, user: str, task: str, number: int) -> BenchShown:
    """Note that the person was shown the instance (the first time starts its clock); their answer so far."""
    key = key_of(task, number)
    with writing(db, f"bench:{user}"):
        record = _answer_or_new(db, user, key)
    return {"value": json.loads(record.value_json), "version": record.version}


def save(db: Session, bench: Benchmark, user: str, task: str, number: int, value: Any, version: int) -> int:
    """Store the person's answer (checked against the task's shape and closed set) and audit it; ``version`` is
    the one the page last saw (:class:`~rescue.errors.Conflict`, with the stored answer, when it is not the stored
    one). Returns the new version."""
    checked = checked_answer(bench, task, number, value)
    key = key_of(task, number)
    with writing(db, f"bench:{user}"):
        record = _answer_or_new(db, user, key)
        if record.version != version:
            raise Conflict({"value": json.loads(record.value_json), "version": record.version})
        old = json.loads(record.value_json)
        at = now()
        if not record.answered_at:
            record.seconds = round(_seconds(record.shown_at, at), 3)
        record.answered_at = at
        record.version += 1
        record.value_json = json.dumps(checked, ensure_ascii=False, sort_keys=True)
        audit(db, user, AUDIT_ANSWER, segment_id=key, copy=user, field="answer", old=old, new=checked)
        return record.version


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def all_answers(db: Session) -> list[GivenAnswer]:
    """Every given answer: task, number, person, value and seconds to answer (for the export)."""
    found: list[GivenAnswer] = []
    for record in db.scalars(select(BenchAnswer).where(BenchAnswer.version > 0).order_by(BenchAnswer.key, BenchAnswer.user)):
        task, number = _split_key(record.key)
        found.append({"task": task, "number": number, "user": record.user, "value": json.loads(record.value_json),
                      "seconds": record.seconds})
    return found


def progress(db: Session) -> dict[str, dict[str, int]]:
    """Per person, instances assigned and answered (counts only: what the admin's page shows)."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {"assigned": 0, "answered": 0})
    for (name,) in db.execute(select(User.name).join(BenchAssignment, BenchAssignment.user_id == User.id)):
        counts[name]["assigned"] += 1
    for record in db.scalars(select(BenchAnswer).where(BenchAnswer.version > 0)):
        counts[record.user]["answered"] += 1
    return dict(counts)
