"""Provider batch APIs: a run's requests sent as OpenAI-compatible batches, at about half the online price.

The form OpenAI, DashScope, Gemini's OpenAI-compatible endpoint, Together and Groq accept: the requests as a
JSONL file (``POST /files``, purpose ``batch``), one line per request (``custom_id``, ``method``, ``url``,
``body``), a batch over it (``POST /batches``), its status polled (``GET /batches/{id}``) until it ends, then
its output and error files read (``GET /files/{id}/content``).

Every request is keyed as the online path keys it (:meth:`ReliableModel.key`) and the key is its
``custom_id``, so an answer that comes back through a batch is stored in the run's cache exactly where the
online path looks: the run then reads it as a cached answer. Requests already answered (or finally failed)
in the cache are not sent. The batch ids go to ``batches.json`` in the run directory as soon as a batch is
created, so a killed run polls the same batches when it is started again instead of submitting them again.
What a batch could not answer (its error file, an expired or failed batch) is left out of the cache and falls
back to the online path.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rescue.atomic import write_atomic
from rescue.llm import secrets
from rescue.llm.client import ERROR_CHARS, MalformedAnswer, OpenAIModel, TransientError, _error_message
from rescue.llm.reliable import ReliableModel, _scrubbed
from rescue.llm.types import ChatRequest
from rescue.llm.providers import tls_context
from rescue.errors import BatchError as BatchError

LEDGER = "batches.json"
TERMINAL = ("completed", "expired", "failed", "cancelled")
# OpenAI's limits for one batch: 50,000 requests and a 200 MB input file (kept under it).
MAX_LINES = 50_000
MAX_BYTES = 190 * 1024 * 1024


@dataclass
class BatchEntry:
    """One submitted batch, as ``batches.json`` keeps it."""

    model: str
    purpose: str
    batch_id: str
    input_file_id: str
    keys: list[str]
    status: str = "submitted"
    collected: bool = False
    answered: int = 0
    failed: int = 0


@dataclass
class BatchOutcome:
    """What the batch phase did for one model: requests it sent or resumed, answers stored, failures left."""

    submitted: int = 0  # requests in batches created by this call
    resumed: int = 0  # requests in batches of an earlier (killed) run, polled again
    skipped: int = 0  # already answered in the cache: not sent
    answered: int = 0
    failed: int = 0  # left to the online path
    batches: list[str] = field(default_factory=list)


class BatchLedger:
    """``DIR/batches.json``: every batch a run submitted, written whole (atomically) after each change."""

    def __init__(self, path: Path):
        self.path = path
        self.entries: list[BatchEntry] = []
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.entries = [BatchEntry(**entry) for entry in data["batches"]]
            except (ValueError, KeyError, TypeError) as exc:
                raise BatchError(f"{path}: not a batch ledger rescue wrote ({exc}); remove it to submit again") from None

    def save(self) -> None:
        """Write the ledger (batches.json) atomically."""
        write_atomic(self.path, json.dumps({"batches": [asdict(e) for e in self.entries]}, indent=1) + "\n")

    def of(self, model: str, purpose: str) -> list[BatchEntry]:
        """The ledger's batches of ``model`` for ``purpose``."""
        return [e for e in self.entries if e.model == model and e.purpose == purpose]


class BatchEndpoint:
    """The files and batches routes of one OpenAI-compatible endpoint, with the model's key and timeout."""

    def __init__(self, model: OpenAIModel):
        import httpx

        self.model = model
        endpoint = model.endpoint
        self.client = httpx.AsyncClient(base_url=endpoint.base_url + "/", timeout=model.settings.timeout,
                                        headers={"Authorization": f"Bearer {endpoint.api_key}"}, verify=tls_context())

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        import httpx

        try:
            response = await self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise TransientError("connection", secrets.clip(f"{type(exc).__name__}: {exc}", ERROR_CHARS)) from None
        if response.status_code >= 500 or response.status_code == 429:
            raise TransientError("server_error", f"HTTP {response.status_code} from {path}")
        if response.status_code != 200:
            message = secrets.clip(_error_message(response.status_code, response.content), ERROR_CHARS)
            raise BatchError(f"{self.model.name}: the batch API refused {method} {path} "
                             f"(HTTP {response.status_code}): {message}")
        return response

    async def upload(self, content: bytes) -> str:
        """Upload a JSONL file of requests for a batch; its file id."""
        response = await self._call("POST", "files", data={"purpose": "batch"},
                                    files={"file": ("requests.jsonl", content, "application/jsonl")})
        return str(response.json()["id"])

    async def create(self, file_id: str) -> dict[str, Any]:
        """Start a batch over an uploaded file (24 h window); the batch object."""
        response = await self._call("POST", "batches", json={"input_file_id": file_id, "endpoint":
                                                               "/v1/chat/completions", "completion_window": "24h"})
        return dict(response.json())

    async def status(self, batch_id: str) -> dict[str, Any]:
        """The batch object as the endpoint reports it now."""
        return dict((await self._call("GET", f"batches/{batch_id}")).json())

    async def content(self, file_id: str) -> bytes:
        """The bytes of a file (a finished batch's output or errors)."""
        return bytes((await self._call("GET", f"files/{file_id}/content")).content)


Progress = Callable[[str, int, int, int], None]  # batch id, completed, failed, total


def _retrying(attempts: int = 5) -> Callable[..., Any]:
    """A batch-API call retried on transient faults (a poll must survive a dropped connection)."""

    def wrap(call: Callable[..., Any]) -> Callable[..., Any]:
        async def run(*args: Any, **kwargs: Any) -> Any:
            for attempt in range(attempts):
                try:
                    return await call(*args, **kwargs)
                except TransientError:
                    if attempt == attempts - 1:
                        raise
                    await asyncio.sleep(min(30.0, 0.5 * 2**attempt))
            return None

        return run

    return wrap


async def run_in_batches(model: ReliableModel, requests: Sequence[ChatRequest], ledger: BatchLedger, *,
                         purpose: str = "predict", poll_interval: float = 30.0,
                         on_progress: Progress | None = None) -> BatchOutcome:
    """Answer ``requests`` of ``model`` through its endpoint's batch API, into the model's cache."""
    inner = model.inner
    if not isinstance(inner, OpenAIModel) or model.cache is None:
        raise BatchError(f"{model.name}: --batch needs an OpenAI-compatible endpoint and a cache")
    by_key: dict[str, ChatRequest] = {}
    outcome = BatchOutcome()
    for request in requests:
        key = model.key(request)
        if key is None or key in by_key:
            continue
        recorded = model.cache.get_failure(key)
        if model.cache.get(key) is not None or (recorded is not None and recorded[0] != "request_error"):
            outcome.skipped += 1
            continue
        by_key[key] = request
    earlier = ledger.of(model.name, purpose)
    covered = {k for entry in earlier for k in entry.keys}
    api = BatchEndpoint(inner)
    try:
        pending = [e for e in earlier if not e.collected]
        outcome.resumed = sum(len(e.keys) for e in pending)
        todo = [k for k in by_key if k not in covered]
        for chunk in _chunks(inner, todo, by_key):
            content = b"".join(line for _, line in chunk)
            file_id = await _retrying()(api.upload)(content)
            created = await _retrying()(api.create)(file_id)
            entry = BatchEntry(model.name, purpose, str(created["id"]), file_id, [k for k, _ in chunk],
                               str(created.get("status", "submitted")))
            ledger.entries.append(entry)
            ledger.save()  # before waiting: a killed run finds it and polls it
            pending.append(entry)
            outcome.submitted += len(chunk)
        outcome.batches = [e.batch_id for e in pending]
        await asyncio.gather(*(_follow(api, model, inner, entry, by_key, ledger, poll_interval, on_progress, outcome)
                               for entry in pending))
    finally:
        await api.aclose()
    return outcome


def _chunks(inner: OpenAIModel, keys: list[str], by_key: dict[str, ChatRequest]) -> list[list[tuple[str, bytes]]]:
    chunks: list[list[tuple[str, bytes]]] = []
    current: list[tuple[str, bytes]] = []
    size = 0
    for key in keys:
        body = inner.batch_body(by_key[key])
        line = (json.dumps({"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body},
                           ensure_ascii=False) + "\n").encode("utf-8")
        if current and (len(current) >= MAX_LINES or size + len(line) > MAX_BYTES):
            chunks.append(current)
            current, size = [], 0
        current.append((key, line))
        size += len(line)
    if current:
        chunks.append(current)
    return chunks


async def _follow(api: BatchEndpoint, model: ReliableModel, inner: OpenAIModel, entry: BatchEntry,
                  by_key: dict[str, ChatRequest], ledger: BatchLedger, poll_interval: float,
                  on_progress: Progress | None, outcome: BatchOutcome) -> None:
    """Poll one batch until it ends, then store its answers; what it could not answer is left to the online path."""
    while True:
        batch = await _retrying()(api.status)(entry.batch_id)
        entry.status = str(batch.get("status", ""))
        counts = batch.get("request_counts") or {}
        if on_progress is not None:
            on_progress(entry.batch_id, int(counts.get("completed") or 0), int(counts.get("failed") or 0),
                        int(counts.get("total") or len(entry.keys)))
        if entry.status in TERMINAL:
            break
        await asyncio.sleep(poll_interval)
    answered = 0
    if batch.get("output_file_id"):
        content = await _retrying()(api.content)(str(batch["output_file_id"]))
        for raw in content.splitlines():
            if raw.strip() and _store(model, inner, json.loads(raw), by_key, entry.batch_id):
                answered += 1
    entry.answered = answered
    entry.failed = len(entry.keys) - answered
    entry.collected = True
    ledger.save()
    model.log.event("batch", model=model.name, batch_id=entry.batch_id, status=entry.status, requests=len(entry.keys),
                    answered=answered, left_to_online=entry.failed, at=round(time.time(), 3))
    outcome.answered += answered
    outcome.failed += entry.failed


def _store(model: ReliableModel, inner: OpenAIModel, line: dict[str, Any], by_key: dict[str, ChatRequest],
           batch_id: str) -> bool:
    """One output line into the cache, as the online path would have stored its answer."""
    key = line.get("custom_id")
    request = by_key.get(str(key))
    response = line.get("response") or {}
    if request is None or response.get("status_code") != 200:
        return False
    try:
        answer = inner._answer(response.get("body"))
    except (MalformedAnswer, TransientError):  # no usable answer: the online path asks it
        return False
    answer = _scrubbed(answer)
    answer.meta["batch"] = batch_id
    assert model.cache is not None
    if model.budget is not None:
        model.budget.charge(model.name, answer.usage, batch=True)
    if answer.status == "ok":
        model.cache.put(str(key), model=model.name, endpoint=str(model.cache_identity), purpose=request.purpose,
                        request=model._request_record(request), answer=answer)
        return True
    if answer.status in ("refused", "budget_exhausted"):  # outcomes, recorded like the online path records them
        model.cache.put_failure(str(key), model=model.name, status=answer.status, error=answer.error)
        return True
    return False


__all__ = ["LEDGER", "BatchEndpoint", "BatchError", "BatchLedger", "BatchOutcome", "run_in_batches"]
