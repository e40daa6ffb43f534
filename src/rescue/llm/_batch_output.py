"""A finished batch's output and error files, read line by line as untrusted, paid-for input.

Each line is read on its own: a line that is not UTF-8 JSON, not an object, too long, without a ``custom_id``
of this batch, or whose ``response`` is not a 200 chat completion is a failure of that one request (its reason
logged); every good answer is stored in the cache the moment its line is read, so a read that breaks off keeps
what came before. The first line of a ``custom_id`` wins; later ones are counted and passed over. The error
file only gives reasons: nothing in it is stored.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from rescue.errors import MalformedAnswer, TransientError
from rescue.data.text import visible_text
from rescue.llm import _secrets as secrets
from rescue.llm._batch_http import loads
from rescue.llm._client import OpenAIModel, _error_message
from rescue.llm._reliable import ReliableModel, _scrubbed
from rescue.llm._types import ChatRequest

MAX_LINE_BYTES = 32 * 1024 * 1024  # far above any completion a batch answers; a longer line is refused unread
LOGGED_LINES = 200  # reasons logged per batch (run.log); the rest only counted
REASON_CHARS = 300


async def lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[tuple[int, bytes | None]]:
    """(line number, bytes) for each line of the stream; None for a line longer than :data:`MAX_LINE_BYTES`,
    which is skipped, never held. A last line without its newline (a cut-off file) is given as it is."""
    buffer = bytearray()
    number, skipping = 1, False
    async for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if not skipping:
                buffer += chunk[start:end]
            yield number, None if skipping or len(buffer) > MAX_LINE_BYTES else bytes(buffer)
            buffer.clear()
            number, skipping, start = number + 1, False, end + 1
        if not skipping:
            buffer += chunk[start:]
            if len(buffer) > MAX_LINE_BYTES:
                buffer.clear()
                skipping = True
    if skipping or buffer:
        yield number, None if skipping else bytes(buffer)


def _reason(text: str) -> str:
    # Reasons quote the provider (an error message may echo the key): masked, cut, control characters shown.
    return visible_text(secrets.clip(text, REASON_CHARS))


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


@dataclass
class OutputReader:
    """Reads one batch's files into the cache: what it stored, and why each other request has no answer."""

    model: ReliableModel
    inner: OpenAIModel
    batch_id: str
    keys: list[str]
    by_key: dict[str, ChatRequest]  # the requests still wanted (not answered in the cache before)
    stored: set[str] = field(default_factory=set)
    reasons: dict[str, str] = field(default_factory=dict)
    logged: int = 0
    # Per file (output, errors), of its last read: lines unreadable, repeating a custom_id, naming another one.
    _counts: dict[str, dict[str, int]] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set)
    _ours: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._ours = set(self.keys)

    def _total(self, what: str) -> int:
        return sum(counts[what] for counts in self._counts.values())

    @property
    def unreadable(self) -> int:
        """Lines that could not be read."""
        return self._total("unreadable")

    @property
    def repeated(self) -> int:
        """Lines whose custom_id an earlier line of their file had."""
        return self._total("repeated")

    @property
    def unknown(self) -> int:
        """Lines naming a custom_id not in this batch."""
        return self._total("unknown")

    @property
    def wanted(self) -> list[str]:
        """This batch's requests the run still wants."""
        return [k for k in self.keys if k in self.by_key]

    @property
    def missing(self) -> list[str]:
        """Wanted requests without a stored answer."""
        return [k for k in self.wanted if k not in self.stored]

    async def read(self, chunks: AsyncIterator[bytes], kind: str) -> None:
        """Read the ``output`` or ``errors`` file; a read tried again starts over without storing twice."""
        self._seen = set()
        self._counts[kind] = {"unreadable": 0, "repeated": 0, "unknown": 0}
        async for number, raw in lines(chunks):
            self._line(kind, number, raw)

    def _log(self, kind: str, number: int, reason: str, key: str | None = None) -> None:
        if self.logged < LOGGED_LINES:
            self.logged += 1
            self.model.log.event("batch_line", model=self.model.name, batch_id=self.batch_id, file=kind,
                                 line=number, custom_id=key, reason=reason)

    def _line(self, kind: str, number: int, raw: bytes | None) -> None:
        if raw is not None and not raw.strip():
            return
        key, response, problem = _parts(raw)
        counts = self._counts[kind]
        if key is None:
            counts["unreadable"] += 1
            self._log(kind, number, problem or "no custom_id")
            return
        if key not in self._ours:
            counts["unknown"] += 1
            return
        if key in self._seen:
            counts["repeated"] += 1
            return
        self._seen.add(key)
        if key in self.stored or key not in self.by_key:  # read before this try, or answered before the batch
            return
        if problem is None and kind == "output":
            problem = self._store(key, response)
            if problem is None:
                return
        reason = problem or _failure(response)
        self.reasons.setdefault(key, reason)
        self._log(kind, number, reason, key)

    def _store(self, key: str, response: Any) -> str | None:
        """Store the answer ``response`` holds; why not, when it holds none."""
        if not isinstance(response, dict) or response.get("status_code") != 200:
            return _failure(response)
        try:
            answer = self.inner._answer(response.get("body"))
        except (MalformedAnswer, TransientError) as exc:
            return _reason(f"response.body: {exc}")
        answer = _scrubbed(answer)
        answer.meta["batch"] = self.batch_id
        model, request = self.model, self.by_key[key]
        assert model.cache is not None
        if answer.status not in ("ok", "refused", "budget_exhausted"):
            return _reason(answer.error or answer.status)
        if model.budget is not None:
            model.budget.charge(model.name, answer.usage, batch=True)
        if answer.status == "ok":
            model.cache.put(key, model=model.name, endpoint=str(model.cache_identity), purpose=request.purpose,
                            request=model._request_record(request), answer=answer)
        else:  # outcomes, recorded as the online path records them
            model.cache.put_failure(key, model=model.name, status=answer.status, error=answer.error)
        self.stored.add(key)
        return None

    def finish(self, ended: str) -> str | None:
        """Give every request without an answer its reason; the warning to show, None when all went well."""
        for key in self.missing:
            self.reasons.setdefault(key, f"no line for it in the batch's files (the batch ended {ended})")
        notes = []
        if self.missing:
            first = self.reasons[self.missing[0]]
            notes.append(f"{_plural(len(self.missing), 'request has', 'requests have')} no answer in it (first: "
                         f"{first}); left to the online pass (the reasons are in run.log)")
        if self.unreadable:
            notes.append(f"{_plural(self.unreadable, 'line', 'lines')} could not be read")
        if self.repeated:
            notes.append(f"{_plural(self.repeated, 'line repeats', 'lines repeat')} a custom_id; the first line of "
                         "each is kept")
        if self.unknown:
            notes.append(f"{_plural(self.unknown, 'line names', 'lines name')} a custom_id not in this batch; "
                         "passed over")
        return f"{self.model.name}: batch {self.batch_id}: " + "; ".join(notes) if notes else None


def _parts(raw: bytes | None) -> tuple[str | None, Any, str | None]:
    """(custom_id, response, why the line is no answer) of one line."""
    if raw is None:
        return None, None, f"longer than {MAX_LINE_BYTES:,} bytes; skipped unread"
    try:
        line = loads(raw)
    except ValueError as exc:
        return None, None, _reason(str(exc))
    if not isinstance(line, dict):
        return None, None, f"a JSON {type(line).__name__}, not an object"
    key = line.get("custom_id")
    if not isinstance(key, str):
        return None, None, f"custom_id is a {type(key).__name__}, not text"
    error = line.get("error")
    if error:  # null (or an empty object) on a line that has its answer
        return key, line.get("response"), _reason(f"error: {_error_text(error)}")
    return key, line.get("response"), None


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return " ".join(str(error.get(part)) for part in ("code", "message") if error.get(part) is not None)
    return str(error)


def _failure(response: Any) -> str:
    """Why ``response`` (a line's ``response``) is not an answer."""
    if not isinstance(response, dict):
        return f"response is a {type(response).__name__}, not an object"
    status = response.get("status_code")
    if not isinstance(status, int) or isinstance(status, bool):
        return f"response.status_code is a {type(status).__name__}, not a number"
    body = response.get("body")
    try:
        raw = json.dumps(body).encode()
    except (TypeError, ValueError):
        raw = b""
    return _reason(f"HTTP {status}: {_error_message(status, raw)}")

__all__ = ["MAX_LINE_BYTES", "OutputReader", "lines"]
