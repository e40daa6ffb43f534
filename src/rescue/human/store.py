"""What people did in a benchmark project: who takes which instance, their answers and timing, in the review
database (the same accounts, sessions and audit log as verification projects).

No look-ahead (docs/human.md): a person's first sight of an instance's page is stored (``BenchAnswer.shown_at``);
an instance is *locked* for that person from the first time they were shown another instance's page that
reveals what it hides (:meth:`~rescue.human.benchmark.Benchmark.reveals`). A locked instance takes no new or
changed answer, and its page, if it was not answered, shows nothing (so it reveals nothing further). Only
answers given before their lock count (:func:`counted_answers`)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from rescue.errors import AnswerLocked, Conflict, ReviewError
from rescue.human.benchmark import Benchmark, checked_answer
from rescue.review.crud._write import ACCOUNTS, ASSIGNMENTS, audit, writing
from rescue.review.db import stored_json
from rescue.review.models import Base, User, now
from rescue.human.shapes import BenchQueueEntry, BenchShown, GivenAnswer, LockView, Reveals

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


class BenchMember(Base):
    """The group a person takes the benchmark in (``rescue review user add ... --group clinicians``)."""

    __tablename__ = "bench_members"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user: Mapped[str] = mapped_column(String(64), unique=True)
    group: Mapped[str] = mapped_column(String(64))


GROUP_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
# The systems of a human run besides the people's own (human/NAME): a person may not be named as one of them.
RESERVED_NAMES = ("pooled", "average")


def check_person_name(name: str) -> None:
    """ReviewError for an account name a benchmark project's systems already use (``human/pooled`` ...)."""
    if name.lower() in RESERVED_NAMES:
        raise ReviewError(f"user name {name!r}: in a benchmark project human/{name.lower()} is the people's "
                          f"{'panel' if name.lower() == 'pooled' else 'average person'}; choose another name")


def check_group(group: str) -> None:
    """ReviewError for a group name that is not 1-40 letters, digits, '.', '_' or '-' (it becomes part of a
    system name, human/GROUP/panel) or that names a reserved system."""
    if not GROUP_PATTERN.fullmatch(group) or group.lower() in RESERVED_NAMES:
        raise ReviewError(f"--group {group[:60]!r}: use 1-40 letters, digits, '.', '_' or '-', starting with a "
                          f"letter or digit (not {' or '.join(RESERVED_NAMES)})")


def set_group(db: Session, actor: str, user: str, group: str) -> None:
    """Put ``user`` in ``group`` (audited); ReviewError for a group name :func:`check_group` refuses."""
    check_group(group)
    with writing(db, ACCOUNTS):
        found = db.scalar(select(BenchMember).where(BenchMember.user == user))
        old = found.group if found else None
        if found is None:
            db.add(BenchMember(user=user, group=group))
        else:
            found.group = group
        audit(db, actor, "bench.group", field="group", old=old, new={"user": user, "group": group})


def groups(db: Session) -> dict[str, str]:
    """Person -> their group, for those given one."""
    return {m.user: m.group for m in db.scalars(select(BenchMember).order_by(BenchMember.user))}


def assigned_keys(db: Session) -> dict[str, list[tuple[str, int]]]:
    """Person -> their assigned instances, in queue order."""
    found: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for name, key in db.execute(select(User.name, BenchAssignment.key).join(User, User.id == BenchAssignment.user_id)
                                .order_by(User.name, BenchAssignment.position)):
        found[name].append(_split_key(key))
    return dict(found)


def key_of(task: str, number: int) -> str:
    """The stored key of an instance."""
    return f"{task}/{number}"


def _split_key(key: str) -> tuple[str, int]:
    task, _, number = key.partition("/")
    return task, int(number)


def assign(db: Session, actor: str, bench: Benchmark, k: int | None = None,
           people: list[str] | None = None) -> dict[str, int]:
    """Give every instance to ``k`` people (the project's per-instance count by default): each task's instances
    spread evenly over the people (so every person gets every task), never two instances to one person where
    each reveals what the other hides (no order would let both count: RPP and SSP of one turn): such instances
    share the people between them (each to ``min(k, people // clashing)``, at least one), rather than go to
    one who could not answer them. Each person's queue walks
    every session forward (:func:`walk_order`). Replaces an earlier assignment; answers stay."""
    users = {u.name: u for u in db.scalars(select(User).order_by(User.name))}
    names = people or [n for n, u in users.items() if u.role == "annotator" and not u.disabled_at]
    unknown = [n for n in names if n not in users or users[n].disabled_at]
    if unknown:
        raise ReviewError(f"unknown or disabled account(s): {', '.join(unknown)}")
    k = bench.per_instance if k is None else k
    if not 1 <= k <= len(names):
        raise ReviewError(f"{k} people per instance needs at least {k} annotator accounts (found: "
                          f"{', '.join(names) or 'none'}); add them with `rescue review user add`")
    given: dict[str, list[tuple[str, int]]] = {name: [] for name in names}
    per_task: dict[tuple[str, str], int] = defaultdict(int)
    for task, number in bench.keys():
        fits = [n for n in names if not any(_clash(bench, (task, number), other) for other in given[n])]
        # Instances that clash share the people between them (RPP and SSP of one turn: each to its own people).
        clashing = 1 + sum(1 for other in bench.same_turn(task, number) if _clash(bench, (task, number), other))
        share = max(1, min(k, len(names) // clashing))
        # The least loaded in this task first, then overall, then by name: every person gets every task.
        for name in sorted(fits, key=lambda n: (per_task[(n, task)], len(given[n]), names.index(n)))[:share]:
            given[name].append((task, number))
            per_task[(name, task)] += 1
    with writing(db, ASSIGNMENTS):
        db.execute(delete(BenchAssignment))
        for name, mine in given.items():
            for position, (task, number) in enumerate(walk_order(bench, mine), start=1):
                db.add(BenchAssignment(key=key_of(task, number), user_id=users[name].id, position=position))
        audit(db, actor, "bench.assign", field="k", new={"k": k, "people": names})
    return {name: len(mine) for name, mine in given.items() if mine}


def _clash(bench: Benchmark, one: tuple[str, int], other: tuple[str, int]) -> bool:
    """Whether neither of two instances can be answered before the other's page reveals what it hides."""
    return bench.reveals(one, other) and bench.reveals(other, one)


def walk_order(bench: Benchmark, keys: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """``keys`` in the order a person takes them: each session walked forward (by the last row a page reaches,
    then the first row it hides), so that taken in order no page shows what an earlier-queued instance hides;
    the tasks take turns where the sessions allow it, so someone who stops early has answered every task."""
    walks: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for key in sorted(keys, key=lambda tn: (bench.reach(*tn), bench.hides_from(*tn), bench.tasks.index(tn[0]), tn[1])):
        walks[bench.sample_of(*key)].append(key)
    heads = list(walks.values())
    order: list[tuple[str, int]] = []
    turn = 0
    while heads:
        wanted = [bench.tasks[(turn + i) % len(bench.tasks)] for i in range(len(bench.tasks))]
        # The next task in turn that some session's next instance is of (sessions in turn, too).
        walk = min(heads, key=lambda w: (wanted.index(w[0][0]), heads.index(w)))
        order.append(walk.pop(0))
        heads.remove(walk)
        if walk:
            heads.append(walk)
        turn = bench.tasks.index(order[-1][0]) + 1
    return order


def queue(db: Session, user: str, bench: Benchmark) -> list[BenchQueueEntry]:
    """The person's instances in order, each with whether they answered it and whether it is locked (never
    anyone else's answers)."""
    rows = db.execute(select(BenchAssignment.key).join(User, User.id == BenchAssignment.user_id)
                      .where(User.name == user).order_by(BenchAssignment.position)).scalars().all()
    records = _records(db, user)
    seen = _Seen(bench, records)
    found: list[BenchQueueEntry] = []
    for key in rows:
        task, number = _split_key(key)
        found.append({"task": task, "number": number, "answered": records.get(key, (None, 0))[1] > 0,
                      "locked": seen.lock(task, number) is not None})
    return found


def _records(db: Session, user: str) -> dict[str, tuple[str, int]]:
    """Every instance the person was shown: key -> (first shown at, answer version)."""
    return {r.key: (r.shown_at, r.version) for r in db.scalars(select(BenchAnswer).where(BenchAnswer.user == user))}


class _Seen:
    """The pages a person was shown, by sample: an instance's lock is looked for among its own sample's pages only
    (a queue of thousands stays linear in its sessions' lengths, not quadratic in its size)."""

    def __init__(self, bench: Benchmark, records: dict[str, tuple[str, int]]):
        self.bench = bench
        self.by_sample: dict[str, list[tuple[str, str, tuple[str, int]]]] = defaultdict(list)
        for key, (at, _version) in records.items():
            if _known(bench, key):
                task, number = _split_key(key)
                self.by_sample[bench.sample_of(task, number)].append((at, key, (task, number)))

    def lock(self, task: str, number: int) -> LockView | None:
        """The first page the person was shown that reveals what the instance hides, and when (None: open)."""
        found = [(at, key) for at, key, shown in self.by_sample.get(self.bench.sample_of(task, number), [])
                 if self.bench.reveals(shown, (task, number))]
        if not found:
            return None
        at, key = min(found)
        return {"by": key, "at": at}


def _lock(bench: Benchmark, records: dict[str, tuple[str, int]], task: str, number: int) -> LockView | None:
    """The instance's lock for the person whose shown pages are ``records`` (:meth:`_Seen.lock`)."""
    return _Seen(bench, records).lock(task, number)


def _known(bench: Benchmark, key: str) -> bool:
    task, number = _split_key(key)
    return task in bench.instances and 1 <= number <= len(bench.instances[task])


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


def _answer_value(record: BenchAnswer) -> Any:
    """A stored answer read back as rescue stores it (:func:`rescue.review.db.stored_json`)."""
    return stored_json(record.value_json, f"review database: bench_answers.value_json of {record.user!r}, "
                       f"{record.key!r}")


def shown(db: Session, bench: Benchmark, user: str, task: str, number: int) -> BenchShown:
    """The person's answer so far and its lock. An open instance (or one answered before its lock) is shown: the
    first time is stored, which starts its clock and locks what its page reveals. A locked instance never
    answered is not shown (``shown`` false): its page would reveal more and its answer could not count."""
    key = key_of(task, number)
    with writing(db, f"bench:{user}"):
        records = _records(db, user)
        locked = _lock(bench, records, task, number)
        if locked is not None and records.get(key, (None, 0))[1] == 0:
            return {"value": None, "version": 0, "locked": locked, "shown": False}
        record = _answer_or_new(db, user, key)
    return {"value": _answer_value(record), "version": record.version, "locked": locked, "shown": True}


def reveals(db: Session, bench: Benchmark, user: str, task: str, number: int) -> Reveals:
    """What showing this instance's page would lock of the person's queue now: their instances it reveals
    something of that are still open, unanswered and answered (nothing when it was shown before or is locked)."""
    records = _records(db, user)
    if key_of(task, number) in records or _lock(bench, records, task, number) is not None:
        return {"unanswered": [], "answered": []}
    mine = [(q["task"], q["number"]) for q in queue(db, user, bench) if not q["locked"]]
    hit = [k for k in mine if bench.reveals((task, number), k)]
    answered = [key_of(*k) for k in hit if records.get(key_of(*k), (None, 0))[1] > 0]
    return {"unanswered": [key_of(*k) for k in hit if key_of(*k) not in answered], "answered": answered}


def save(db: Session, bench: Benchmark, user: str, task: str, number: int, value: Any, version: int) -> int:
    """Store the person's answer (checked against the task's shape and closed set) and audit it; ``version`` is
    the one the page last saw (:class:`~rescue.errors.Conflict`, with the stored answer, when it is not the stored
    one). Returns the new version."""
    key = key_of(task, number)
    with writing(db, f"bench:{user}"):
        locked = _lock(bench, _records(db, user), task, number)
        if locked is not None:  # whatever the value: nothing about a locked answer is taken
            raise AnswerLocked(f"this answer is final: what {task.upper()} {number} hides was shown to you on "
                               f"{locked['by'].replace('/', ' ').upper()} at {locked['at']}", locked["by"], locked["at"])
        checked = checked_answer(bench, task, number, value)
        record = _answer_or_new(db, user, key)
        if record.version != version:
            raise Conflict({"value": _answer_value(record), "version": record.version})
        old = _answer_value(record)
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
    for record in _answered_records(db):
        task, number = _split_key(record.key)
        found.append({"task": task, "number": number, "user": record.user, "value": _answer_value(record),
                      "seconds": record.seconds})
    return found


def counted_answers(db: Session, bench: Benchmark) -> tuple[list[GivenAnswer], int]:
    """The answers that count: each given (last changed) no later than its lock, to an instance of the project.
    The server refuses any other, so only a database written otherwise (an older rescue, a hand edit) holds
    some; returns the counted answers and how many were left out."""
    records: dict[str, dict[str, tuple[str, int]]] = defaultdict(dict)
    for record in db.scalars(select(BenchAnswer)):
        records[record.user][record.key] = (record.shown_at, record.version)
    seen = {user: _Seen(bench, mine) for user, mine in records.items()}
    counted: list[GivenAnswer] = []
    late = 0
    for record, answer in zip(_answered_records(db), all_answers(db), strict=True):
        locked = seen[record.user].lock(answer["task"], answer["number"]) \
            if _known(bench, record.key) else {"by": "", "at": ""}
        if locked is not None and record.answered_at > locked["at"]:
            late += 1
        else:
            counted.append(answer)
    return counted, late


def _answered_records(db: Session) -> list[BenchAnswer]:
    return list(db.scalars(select(BenchAnswer).where(BenchAnswer.version > 0).order_by(BenchAnswer.key, BenchAnswer.user)))


def progress(db: Session) -> dict[str, dict[str, int]]:
    """Per person, instances assigned and answered (counts only: what the admin's page shows)."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {"assigned": 0, "answered": 0})
    for (name,) in db.execute(select(User.name).join(BenchAssignment, BenchAssignment.user_id == User.id)):
        counts[name]["assigned"] += 1
    for record in db.scalars(select(BenchAnswer).where(BenchAnswer.version > 0)):
        counts[record.user]["answered"] += 1
    return dict(counts)
