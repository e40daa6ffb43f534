"""Every request and answer, stored durably in SQLite (WAL mode) so that runs resume and rescore offline.

Keyed by the SHA-256 of the canonical JSON of (endpoint, model id, messages, generation settings); media parts
enter the key as the SHA-256 of their bytes, so the same image at another path is the same request. Each answer
is committed on its own as it arrives: with WAL and ``synchronous=NORMAL`` a commit survives a kill -9 of the
process, so an interrupted run loses only the requests that were in flight.

Runs that share a cache (``--cache-dir``) share its requests in flight: before a request is sent, the process
claims its key (a row of ``claims``: its owner, pid and the pid's start time); a process that finds the key
claimed by another one that is alive waits for that answer instead of sending the request again, and takes over
a claim whose process is gone. A claim is one small write per request (it is released in the answer's own).

Errors and empty answers are never served as answers. Failures (``request_error``, ``refused``) are kept in a separate table so
that a plain rerun does not ask them again (``--retry-errors`` does); a later success removes them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from secrets import token_hex
from typing import Any, NamedTuple, TypedDict

from pydantic import TypeAdapter

from rescue.atomic import check_target, process_alive, process_started
from rescue.data.readback import parse_json
from rescue.data.shapes import ChatMessage, JsonObject  # open here: a model's settings, rows as a cache holds them
from rescue.llm._types import ChatAnswer, MessageLike, Usage, WireMessage, key_messages
from rescue.errors import RunDirError
from rescue.errors import UnreadableEntry as UnreadableEntry

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    purpose TEXT NOT NULL,
    request TEXT NOT NULL,
    text TEXT,
    usage TEXT NOT NULL,
    meta TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started TEXT NOT NULL,
    created REAL NOT NULL
) WITHOUT ROWID;
"""


class RequestRecord(TypedDict):
    """The request a cached answer answers, stored beside it (the ``request`` column), as the key sees it."""

    messages: list[ChatMessage | WireMessage]  # media by content hash (key_messages), never by bytes
    max_tokens: int
    settings: JsonObject  # the model's cache_settings and the request's overrides: open, a model keys its own


class CachedAnswer(NamedTuple):
    """One stored answer as :meth:`ResponseCache.answers_of` reads it: usage and meta as stored (JSON objects, open:
    a cache may hold rows another rescue version wrote, and a model's meta holds what the model adds)."""

    key: str
    model: str
    purpose: str
    text: str
    usage: JsonObject
    meta: JsonObject
    created: float  # seconds since the epoch, when it was stored


# The owners of the open ResponseCache objects of this process: a claim of this process by another owner is live
# only while that object is open (a run that ended without releasing its claims, a full disk, leaves them behind).
_OPEN_OWNERS: set[str] = set()


@dataclass(frozen=True)
class Claimant:
    """The process that claimed a request (rescue.llm._cache's ``claims``): it is sending it now."""

    pid: int
    host: str


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the same value always gives the same text."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def request_key(endpoint: str, settings: JsonObject, messages: list[MessageLike]) -> str:
    """The key of a request: endpoint, settings and messages, media by content hash (never by path)."""
    payload = canonical_json({"endpoint": endpoint, "settings": settings, "messages": key_messages(messages)})
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def open_wal(path: Path, schema: str) -> sqlite3.Connection:
    """A SQLite file in WAL mode, autocommit (each INSERT is its own transaction, committed before its result is
    used), shared by several processes (busy timeout), with ``schema`` applied. The BERTScore cache uses it too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    check_target(path)  # SQLite writes through a link and blocks on a FIFO: only a regular file (or none) is opened
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA busy_timeout=30000")
    db.executescript(schema)
    return db


_USAGE = TypeAdapter(Usage)


class ResponseCache:
    """Answers and final failures by request key, in one SQLite file (WAL) shared by concurrent readers."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db = open_wal(self.path, SCHEMA)
        self.owner = token_hex(16)  # this cache object's claims
        _OPEN_OWNERS.add(self.owner)
        self._host = socket.gethostname()
        self._pid = os.getpid()
        self._started = process_started(self._pid)

    def close(self) -> None:
        """Release this object's claims and close the database."""
        _OPEN_OWNERS.discard(self.owner)
        try:
            self._db.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))
        except sqlite3.Error:
            pass  # a database that went away: the claims are taken over once this process has ended
        self._db.close()

    def claim(self, key: str) -> Claimant | None:
        """Claim ``key`` for this object: None when it is ours now (free, ours already, or held by a process that
        is gone), else the live process that holds it."""
        row = (key, self.owner, self._host, self._pid, self._started, time.time())
        query = "SELECT owner, host, pid, started FROM claims WHERE key = ?"
        held = self._db.execute(query, (key,)).fetchone()  # a read first: a waiting run asks again and again
        if held is None:
            if self._db.execute("INSERT OR IGNORE INTO claims VALUES (?, ?, ?, ?, ?, ?)", row).rowcount == 1:
                return None
            held = self._db.execute(query, (key,)).fetchone()
            if held is None:  # released in between
                return self.claim(key)
        owner, host, pid, started = held
        if owner == self.owner:
            return None
        ours = pid == self._pid and started == self._started  # this process: live while that object is open
        if host == self._host and ((ours and owner not in _OPEN_OWNERS) or (not ours and not process_alive(pid, started))):
            taken = self._db.execute("UPDATE claims SET owner = ?, host = ?, pid = ?, started = ?, created = ? "
                                     "WHERE key = ? AND owner = ?", (*row[1:], key, owner)).rowcount
            return None if taken == 1 else self.claim(key)
        return Claimant(int(pid), str(host))

    def claim_many(self, keys: list[str]) -> set[str]:
        """Claim each of ``keys`` (:meth:`claim`), in one transaction; those another live process holds."""
        with self._transaction():
            return {key for key in keys if self.claim(key) is not None}

    def release(self, keys: list[str] | str) -> None:
        """Release this object's claims of ``keys``."""
        if isinstance(keys, str):
            self._db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (keys, self.owner))
            return
        with self._transaction():
            self._db.executemany("DELETE FROM claims WHERE key = ? AND owner = ?", [(k, self.owner) for k in keys])

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self._db.in_transaction:  # SQLite rolls back itself after some errors (a full disk)
                self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def get(self, key: str) -> ChatAnswer | None:
        """The stored answer, None when there is none; :class:`UnreadableEntry` (the row removed) when one
        is stored but cannot be read any more (bytes that are not UTF-8, usage or meta that is not ours)."""
        try:
            row = self._db.execute("SELECT text, usage, meta, created FROM answers WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            # Read back as every file rescue wrote is (rescue.data.readback), and held to what put() stores.
            usage = _USAGE.validate_python(parse_json(row[1], "usage", UnreadableEntry))
            stored = parse_json(row[2], "meta", UnreadableEntry)
            if not isinstance(stored, dict):
                raise TypeError(f"the stored meta is a {type(stored).__name__}")
            # When it was answered: time-of-day prices bill it at that hour.
            meta = {**stored, "cached": True, "answered_at": row[3]}
            if not isinstance(row[0], str) or not row[0]:
                raise TypeError(f"the stored text is a {type(row[0]).__name__}")
        except (sqlite3.OperationalError, ValueError, TypeError, RecursionError, UnreadableEntry) as exc:
            if isinstance(exc, sqlite3.OperationalError) and "decode" not in str(exc):
                raise  # a locked or broken database is not one bad answer
            self._db.execute("DELETE FROM answers WHERE key = ?", (key,))
            raise UnreadableEntry(f"{type(exc).__name__}: {exc}") from None
        return ChatAnswer(row[0], "ok", "", usage, meta)

    def put(self, key: str, *, model: str, endpoint: str, purpose: str, request: RequestRecord,
            answer: ChatAnswer) -> None:
        """Store an answer with the request it answers (errors and empty answers are refused)."""
        if answer.status != "ok":
            raise ValueError("only answers are cached, never errors")
        if not answer.text:
            raise ValueError("an answer without content is never cached")
        usage = answer.usage.as_dict()
        meta = {k: v for k, v in answer.meta.items() if k not in ("cached", "answered_at")}
        with self._transaction():  # one commit: the answer in, an old failure and this object's claim out
            self._db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, model, endpoint, purpose, canonical_json(request), answer.text, canonical_json(usage),
                 canonical_json(meta), time.time()),
            )
            self._db.execute("DELETE FROM failures WHERE key = ?", (key,))
            self._db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))

    def put_many(self, entries: Iterable[tuple[str, str, str, ChatAnswer]]) -> None:
        """Store many answers, each (key, model, purpose, answer), in one transaction: a verifier rebuilding a
        run's cache from a bundle (the endpoint and request of each are the bundle's, not known here)."""
        rows = []
        for key, model, purpose, answer in entries:
            if answer.status != "ok" or not answer.text:
                raise ValueError("only answers with content are cached, never errors")
            meta = {k: v for k, v in answer.meta.items() if k not in ("cached", "answered_at")}
            rows.append((key, model, "bundle", purpose, "{}", answer.text, canonical_json(answer.usage.as_dict()),
                         canonical_json(meta), time.time()))
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            self._db.executemany("DELETE FROM failures WHERE key = ?", [(row[0],) for row in rows])

    def forget(self, key: str) -> None:
        """Remove the answer stored for ``key`` (nothing when there is none)."""
        self._db.execute("DELETE FROM answers WHERE key = ?", (key,))

    def get_failure(self, key: str) -> tuple[str, str] | None:
        """The stored final failure of ``key`` as (status, error), None when there is none."""
        row = self._db.execute("SELECT status, error FROM failures WHERE key = ?", (key,)).fetchone()
        return None if row is None else (row[0], row[1])

    def failed_since(self, key: str, since: float) -> tuple[str, str] | None:
        """The final failure of ``key`` as (status, error) when it was stored at ``since`` or later."""
        row = self._db.execute("SELECT status, error FROM failures WHERE key = ? AND created >= ?",
                               (key, since)).fetchone()
        return None if row is None else (row[0], row[1])

    def put_failure(self, key: str, *, model: str, status: str, error: str) -> None:
        """Store a final failure, so a rerun reports it without asking again unless told to retry."""
        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO failures VALUES (?, ?, ?, ?, ?)", (key, model, status, error, time.time())
            )
            self._db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))

    def answers_of(self, models: set[str]) -> Iterator[CachedAnswer]:
        """Every stored answer of ``models`` (by the name the session stored them under), oldest first: what a
        submission bundle carries (the request's key, never its body)."""
        placeholders = ",".join("?" * len(models))
        query = ("SELECT key, model, purpose, text, usage, meta, created FROM answers "
                 f"WHERE model IN ({placeholders}) ORDER BY created, key")
        for key, model, purpose, text, usage, meta, created in self._db.execute(query, sorted(models)):
            # Read back as every file rescue wrote is: a row edited by hand stops the bundle, named.
            where = f"{self.path}: answer {key}"
            stored = (parse_json(usage, f"{where}: field usage", RunDirError),
                      parse_json(meta, f"{where}: field meta", RunDirError))
            for name, part in zip(("usage", "meta"), stored):
                if not isinstance(part, dict):
                    raise RunDirError(f"{where}: field {name}: a JSON object expected (not what rescue stored)")
            yield CachedAnswer(key, model, purpose, text, stored[0], stored[1], created)

    def counts(self) -> dict[str, int]:
        """How many answers and failures are stored."""
        answers = self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        failures = self._db.execute("SELECT COUNT(*) FROM failures").fetchone()[0]
        return {"answers": answers, "failures": failures}
