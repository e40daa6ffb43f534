"""Every request and answer, stored durably in SQLite (WAL mode) so that runs resume and rescore offline.

Keyed by the SHA-256 of the canonical JSON of (endpoint, model id, messages, generation settings); media parts
enter the key as the SHA-256 of their bytes, so the same image at another path is the same request. Each answer
is committed on its own as it arrives: with WAL and ``synchronous=NORMAL`` a commit survives a kill -9 of the
process, so an interrupted run loses only the requests that were in flight.

Errors and empty answers are never served as answers. Failures (``request_error``, ``refused``) are kept in a separate table so
that a plain rerun does not ask them again (``--retry-errors`` does); a later success removes them.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from pydantic import TypeAdapter

from rescue.atomic import check_target
from rescue.data.readback import parse_json
from rescue.data.shapes import JsonObject
from rescue.llm._types import ChatAnswer, MessageLike, Usage, key_messages
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
"""


class CachedAnswer(NamedTuple):
    """One stored answer as :meth:`ResponseCache.answers_of` reads it: usage and meta as stored (JSON objects)."""

    key: str
    model: str
    purpose: str
    text: str
    usage: JsonObject
    meta: JsonObject
    created: float  # seconds since the epoch, when it was stored


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

    def close(self) -> None:
        """Close the database."""
        self._db.close()

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

    def put(self, key: str, *, model: str, endpoint: str, purpose: str, request: JsonObject, answer: ChatAnswer) -> None:
        """Store an answer with the request it answers (errors and empty answers are refused)."""
        if answer.status != "ok":
            raise ValueError("only answers are cached, never errors")
        if not answer.text:
            raise ValueError("an answer without content is never cached")
        usage = answer.usage.as_dict()
        meta = {k: v for k, v in answer.meta.items() if k not in ("cached", "answered_at")}
        self._db.execute(
            "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key, model, endpoint, purpose, canonical_json(request), answer.text, canonical_json(usage),
             canonical_json(meta), time.time()),
        )
        self._db.execute("DELETE FROM failures WHERE key = ?", (key,))

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

    def put_failure(self, key: str, *, model: str, status: str, error: str) -> None:
        """Store a final failure, so a rerun reports it without asking again unless told to retry."""
        self._db.execute(
            "INSERT OR REPLACE INTO failures VALUES (?, ?, ?, ?, ?)", (key, model, status, error, time.time())
        )

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
