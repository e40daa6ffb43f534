"""Provider batch APIs: a run's requests sent as OpenAI-compatible batches, at about half the online price.

The form OpenAI, DashScope, Gemini's OpenAI-compatible endpoint, Together and Groq accept: the requests as a
JSONL file (``POST /files``, purpose ``batch``), one line per request (``custom_id``, ``method``, ``url``,
``body``), a batch over it (``POST /batches``), its status polled (``GET /batches/{id}``) until it ends, then
its output and error files read (``GET /files/{id}/content``; rescue.llm._batch_output).

Every request is keyed as the online path keys it (:meth:`ReliableModel.key`) and the key is its
``custom_id``, so an answer that comes back through a batch is stored in the run's cache exactly where the
online path looks: the run then reads it as a cached answer. Requests already answered (or finally failed)
in the cache are not sent. What a batch could not answer is left out of the cache and falls back to the
online path.

A batch is paid for, so none is made twice. ``batches.json`` beside the cache (the run directory, or the
``--cache-dir`` several runs share) names its ledger (a random id, written before anything is sent) and records
each chunk of requests before its file is uploaded, before its batch is created, and when either answered. Upload
and create are not idempotent and never simply sent again: each batch carries metadata naming the ledger and its
chunk. An upload or create whose answer leaves it unknown whether it happened (a 5xx, a dropped connection, a
timeout, an answer that is not a file or batch, a kill while it was sent) is recorded in the ledger as
*unsettled*, with the time it began; from then on nothing is uploaded or created for that chunk until the
endpoint's list (batches, or files) shows ours, which is adopted. The list is read again with backoff for at most
``settle`` seconds from the time recorded (:data:`SETTLE_WINDOW` by default; a rerun waits out the rest of the
same window), and when the window is over without it, the run stops (:class:`BatchUnsettled`, exit 3) saying what
it waits for. Runs that share a ledger take :class:`LedgerLock` for their batch phase: a second run waits for the
first (and says so), then reads what it answered from the shared cache and adopts what it left. A
``batches.json`` an earlier run left in the run directory (before it used ``--cache-dir``) is merged into the
shared ledger under that lock (:meth:`BatchLedger.merge`), so its batches are adopted too, then removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from secrets import token_hex
from typing import Annotated, Any, Literal, TypeVar, overload

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from rescue.atomic import write_atomic
from rescue.data.readback import read_json_file
from rescue.errors import BatchError as BatchError
from rescue.errors import BatchUnsettled, TransientError
from rescue.files import DirectoryLock, LockedError
from rescue.llm._batch_http import BatchEndpoint, BatchObject, FileObject, Page, is_id, parse, shown_id
from rescue.llm._batch_output import OutputReader
from rescue.llm._client import OpenAIModel
from rescue.llm._limits import DEFAULT_BATCH_SETTLE
from rescue.llm._reliable import ReliableModel
from rescue.llm._types import ChatRequest

LEDGER = "batches.json"
RUN_ID = r"^[A-Za-z0-9_-]*$"  # a ledger's id (token_hex): it names metadata and an upload's file name
TERMINAL = ("completed", "expired", "failed", "cancelled")
# OpenAI's limits for one batch: 50,000 requests and a 200 MB input file (kept under it).
MAX_LINES = 50_000
MAX_BYTES = 190 * 1024 * 1024
ATTEMPTS = 4  # tries of a status read, a list page or a file read
MAX_PAGES = 500  # pages of a list read before giving up (a list that never ends)
CLOCK_SLACK = 86_400.0  # items made this long before the call looked for are not looked at (clock skew)
# Seconds an unsettled upload or create is waited for, counted from when it began (ledger: unsettled_since): the
# endpoint's list is read again after 1, 2, 4 ... seconds, at most --batch-poll apart (--batch-settle sets it).
SETTLE_WINDOW = DEFAULT_BATCH_SETTLE
SETTLE_FIRST_PAUSE = 1.0
DONE = {"upload": "uploaded", "create": "created"}


def _ledger_id(value: str) -> str:
    if value and not is_id(value):
        raise ValueError(f"not a batch or file id ({shown_id(value)})")
    return value


LedgerId = Annotated[str, AfterValidator(_ledger_id)]  # "" (not made yet) or an id (rescue.llm._batch_http)


class BatchEntry(BaseModel):
    """One chunk of requests, as ``batches.json`` keeps it: uploaded (``input_file_id``), then created
    (``batch_id``), then read (``collected``)."""

    model_config = ConfigDict(strict=True)
    model: str
    purpose: str
    # The ledger that made it, where that is not this one (merged from a run directory): its batch's metadata
    # and its upload's name carry that ledger's id, so an ambiguous call of that run is still recognised.
    run: str = Field(default="", max_length=64, pattern=RUN_ID)
    batch_id: LedgerId
    input_file_id: LedgerId
    keys: list[str]
    chunk: str = ""  # the sha256 of its keys: the batch's metadata names it
    status: str = "submitted"
    collected: bool = False
    answered: int = Field(default=0, ge=0)
    failed: int = Field(default=0, ge=0)
    # An upload or create that may have happened unseen: which, since when (seconds since the epoch), and why.
    unsettled: Literal["", "upload", "create"] = ""
    unsettled_since: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    unsettled_why: str = Field(default="", max_length=2000)
    upload_name: str = Field(default="", max_length=256)  # the file name an unsettled upload is looked for by
    upload_bytes: int = Field(default=0, ge=0)


class _LedgerFile(BaseModel):
    model_config = ConfigDict(strict=True)
    run: str = Field(default="", max_length=64, pattern=RUN_ID)
    started: float | int = 0.0
    batches: list[BatchEntry]


@dataclass
class BatchOutcome:
    """What the batch phase did for one model: requests it sent or resumed, answers stored, failures left."""

    submitted: int = 0  # requests in batches created by this call
    resumed: int = 0  # requests in batches of an earlier (killed) run, polled again
    skipped: int = 0  # already answered in the cache: not sent
    answered: int = 0
    failed: int = 0  # left to the online path
    batches: list[str] = field(default_factory=list)


def _field(error: ValidationError) -> str:
    first = error.errors()[0]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
    return f"{where or 'the file'}: {first['msg']}"


class BatchLedger:
    """``DIR/batches.json``: the run's id and every chunk it uploaded or submitted, written whole (atomically)
    after each change; checked field by field when read."""

    def __init__(self, path: Path):
        self.path = path
        self.entries: list[BatchEntry] = []
        self.run = token_hex(16)
        self.started = time.time()
        self.existed = path.exists()
        self.unsaved_run = True  # the run's id is not in the file yet
        if self.existed:
            self._read()

    def _read(self) -> None:
        fix = "fix it, or remove it to submit its requests again (batches it names are then not read)"
        try:  # read as every file rescue wrote is (rescue.data.readback): deep, huge, non-finite or cut, named
            data = read_json_file(self.path, lambda message: BatchError(
                f"{message}; not a batch ledger rescue wrote: {fix}"))
            ledger = _LedgerFile.model_validate(data)
        except ValidationError as exc:
            raise BatchError(f"{self.path}: {_field(exc)}; not a batch ledger rescue wrote: {fix}") from None
        except OSError as exc:
            raise BatchError(f"{self.path}: cannot be read ({exc.strerror})") from None
        self.entries = ledger.batches
        self.unsaved_run = not ledger.run  # a ledger of an earlier version: named from now on
        self.run = ledger.run or self.run
        self.started = float(ledger.started) or self.started

    def save(self) -> None:
        """Write the ledger (batches.json) atomically."""
        data = {"run": self.run, "started": self.started, "batches": [e.model_dump() for e in self.entries]}
        write_atomic(self.path, json.dumps(data, indent=1) + "\n")
        self.unsaved_run = False

    def run_of(self, entry: BatchEntry) -> str:
        """The id of the ledger that made ``entry`` (its batch's ``rescue_run``)."""
        return entry.run or self.run

    def merge(self, path: Path) -> int:
        """Take in the entries of another ledger (``path``: a run directory's, left by a run before it shared a
        cache), read as untrusted as this one is (exit 2 naming the file and field, nothing merged), then save
        this ledger and remove ``path``; the number of entries taken in. An entry this ledger holds already (the
        same batch, file, or the chunk of the same run: a merge that was killed before the removal) is not taken
        twice, so a kill at any step loses nothing and adopts nothing twice. A batch read into the run
        directory's cache is read again into this one (its output costs nothing): it is taken as uncollected."""
        other = BatchLedger(path)
        added = 0
        for entry in other.entries:
            entry.run = other.run_of(entry)
            held = next((e for e in self.entries if self._same(e, entry)), None)
            if held is not None:
                if (bool(entry.batch_id), bool(entry.input_file_id)) > (bool(held.batch_id), bool(held.input_file_id)):
                    self.entries[self.entries.index(held)] = entry  # that run went further since
                continue
            if entry.batch_id and entry.collected:
                entry.collected = False
            self.entries.append(entry)
            added += 1
        self.save()  # first: a kill before the removal below merges again, finding each entry held
        path.unlink(missing_ok=True)
        return added

    def _same(self, held: BatchEntry, entry: BatchEntry) -> bool:
        return bool((held.batch_id and held.batch_id == entry.batch_id)
                    or (held.input_file_id and held.input_file_id == entry.input_file_id)
                    or (held.chunk and held.chunk == entry.chunk and self.run_of(held) == self.run_of(entry)
                        and (held.model, held.purpose) == (entry.model, entry.purpose)))

    def of(self, model: str, purpose: str) -> list[BatchEntry]:
        """The ledger's batches of ``model`` for ``purpose``."""
        return [e for e in self.entries if e.model == model and e.purpose == purpose]


_T = TypeVar("_T")
Progress = Callable[[str, int, int, int], None]  # batch id, completed, failed, total
Warn = Callable[[str], None]


class LedgerLock(DirectoryLock):
    """``FOLDER/.batches.lock``: held by the one process whose batch phase reads and writes ``FOLDER/batches.json``
    (the cache's folder: runs with the same ``--cache-dir`` share it), released when it ends or dies."""

    NAME = ".batches.lock"


@contextlib.asynccontextmanager
async def held_ledger(folder: Path, say: Warn, left: Path | None = None,
                      on_merged: Warn | None = None) -> AsyncIterator[BatchLedger]:
    """``folder``'s ledger, read once its lock is held: while another process holds it (its batch phase over the
    same cache), wait for it, having said so once through ``say``. Waiting can be interrupted. ``left``: a
    ledger an earlier run left elsewhere (the run directory's, when ``folder`` is a shared ``--cache-dir``),
    merged into this one under the lock (:meth:`BatchLedger.merge`) when it exists, said through ``on_merged``."""
    folder.mkdir(parents=True, exist_ok=True)
    lock = LedgerLock(folder)
    pause, said = 0.05, False
    while True:
        try:
            lock.acquire()
            break
        except LockedError as exc:
            if not said:
                said = True
                who = f"process {exc.pid}" if exc.pid is not None else "another process"
                say(f"--batch: {who} is sending the batches of the cache in {folder} ({LEDGER}); waiting for it "
                    "to finish: what it answered is then read from the shared cache, and a batch it left is adopted")
            await asyncio.sleep(pause)
            pause = min(2.0, pause * 2)
    try:
        ledger = BatchLedger(folder / LEDGER)
        if left is not None and left.exists() and left.resolve() != ledger.path.resolve():
            merged = ledger.merge(left)
            if merged and on_merged is not None:
                on_merged(f"--batch: {merged} batches an earlier run recorded in {left} are now in {ledger.path} "
                    "(adopted, never made again); that file is removed")
        yield ledger
    finally:
        lock.release()


def _wanted(model: ReliableModel, requests: Sequence[ChatRequest], outcome: BatchOutcome) -> dict[str, ChatRequest]:
    """The requests to ask, by key: those neither answered nor finally failed in the cache."""
    assert model.cache is not None
    by_key: dict[str, ChatRequest] = {}
    for request in requests:
        key = model.key(request)
        if key is None or key in by_key:
            continue
        recorded = model.cache.get_failure(key)
        if model.cache.get(key) is not None or (recorded is not None and recorded[0] != "request_error"):
            outcome.skipped += 1
            continue
        by_key[key] = request
    return by_key


async def run_in_batches(model: ReliableModel, requests: Sequence[ChatRequest], ledger: BatchLedger, *,
                         purpose: str = "predict", poll_interval: float = 30.0, on_progress: Progress | None = None,
                         on_warning: Warn | None = None, max_lines: int = MAX_LINES,
                         max_bytes: int = MAX_BYTES, settle: float = SETTLE_WINDOW) -> BatchOutcome:
    """Answer ``requests`` of ``model`` through its endpoint's batch API, into the model's cache; ``settle``:
    seconds an ambiguous upload or create is waited for (:data:`SETTLE_WINDOW`)."""
    inner = model.inner
    if not isinstance(inner, OpenAIModel) or model.cache is None:
        raise BatchError(f"{model.name}: --batch needs an OpenAI-compatible endpoint and a cache")
    outcome = BatchOutcome()
    by_key = _wanted(model, requests, outcome)
    # Requests a run sharing the cache is asking online now are left to it (the online pass reads or waits for
    # their answers); the rest are claimed until this phase ends, so that such a run waits for them in turn.
    held = model.cache.claim_many(list(by_key))
    for key in held:
        del by_key[key]
    try:
        return await _run_in_batches(model, inner, ledger, by_key, outcome, purpose=purpose,
                                     poll_interval=poll_interval, on_progress=on_progress, on_warning=on_warning,
                                     max_lines=max_lines, max_bytes=max_bytes, settle=settle)
    finally:
        model.cache.release(list(by_key))


async def _run_in_batches(model: ReliableModel, inner: OpenAIModel, ledger: BatchLedger, by_key: dict[str, ChatRequest], outcome: BatchOutcome, *, purpose: str,
                          poll_interval: float, on_progress: Progress | None, on_warning: Warn | None, max_lines: int,
                          max_bytes: int, settle: float) -> BatchOutcome:
    earlier = ledger.of(model.name, purpose)
    covered = {k for entry in earlier for k in entry.keys}
    if by_key and ledger.unsaved_run:
        ledger.save()  # the run's id, before anything is sent: a rerun after a crash knows what is its own
    flow = _Flow(BatchEndpoint(inner), model, inner, ledger, by_key, poll_interval,
                 on_warning or (lambda text: None), on_progress, outcome, settle)
    try:
        pending = [e for e in earlier if not e.collected]
        for entry in pending:
            if entry.input_file_id and not entry.batch_id and not entry.unsettled:
                # A ledger of an earlier version: its create may have been sent before the run stopped.
                entry.unsettled, entry.unsettled_since = "create", time.time()
                entry.unsettled_why = "an earlier run stopped before its create was answered"
        outcome.resumed = sum(len(e.keys) for e in pending if e.input_file_id)
        lines = {}
        for chunk in _chunks(inner, [k for k in by_key if k not in covered], by_key, max_lines, max_bytes):
            keys = [k for k, _ in chunk]
            entry = BatchEntry(model=model.name, purpose=purpose, batch_id="", input_file_id="", keys=keys,
                               chunk=hashlib.sha256("\n".join(keys).encode()).hexdigest(), status="new")
            lines[entry.chunk] = b"".join(line for _, line in chunk)
            pending.append(entry)
        for entry in [e for e in pending if not e.batch_id]:
            if entry.unsettled == "upload" and entry.chunk not in lines:  # an earlier run's: made again if needed
                lines[entry.chunk] = b"".join(line for chunk in _chunks(
                    inner, [k for k in entry.keys if k in by_key], by_key, len(entry.keys), 2**62) for _, line in chunk)
            await flow.submit(entry, lines.get(entry.chunk))
        # A batch of requests this run does not ask and the cache has not answered (another run's, sharing the
        # ledger) is left to a run that asks them: read here, its answers would have nowhere to go.
        cache = model.cache
        assert cache is not None  # run_in_batches checked it
        followed = [e for e in pending if e.batch_id and not e.collected and (
            any(k in by_key for k in e.keys) or all(cache.get(k) is not None for k in e.keys))]
        outcome.batches = [e.batch_id for e in followed]
        await asyncio.gather(*(flow.follow(entry) for entry in followed))
    finally:
        await flow.api.aclose()
    return outcome


def _chunks(inner: OpenAIModel, keys: list[str], by_key: dict[str, ChatRequest], max_lines: int,
            max_bytes: int) -> list[list[tuple[str, bytes]]]:
    chunks: list[list[tuple[str, bytes]]] = []
    current: list[tuple[str, bytes]] = []
    size = 0
    for key in keys:
        body = inner.batch_body(by_key[key])
        line = (json.dumps({"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body},
                           ensure_ascii=False) + "\n").encode("utf-8")
        if current and (len(current) >= max_lines or size + len(line) > max_bytes):
            chunks.append(current)
            current, size = [], 0
        current.append((key, line))
        size += len(line)
    if current:
        chunks.append(current)
    return chunks


class _CannotTell(Exception):
    """The endpoint's batches or files could not be listed: whether one of ours exists is unknown."""


@dataclass
class _Flow:
    """Submitting, following and reading the batches of one model."""

    api: BatchEndpoint
    model: ReliableModel
    inner: OpenAIModel
    ledger: BatchLedger
    by_key: dict[str, ChatRequest]
    poll_interval: float
    warn: Warn
    on_progress: Progress | None
    outcome: BatchOutcome
    settle: float = SETTLE_WINDOW

    async def _pause(self, attempt: int) -> None:
        await asyncio.sleep(min(30.0, max(self.poll_interval, 0.01) * 2**attempt))

    def _event(self, entry: BatchEntry, what: str, **fields: Any) -> None:
        self.model.log.event("batch_step", model=self.model.name, chunk=entry.chunk, step=what,
                             at=round(time.time(), 3), **fields)

    def _record(self, entry: BatchEntry) -> None:
        if entry not in self.ledger.entries:
            self.ledger.entries.append(entry)
        self.ledger.save()

    def _left_online(self, entry: BatchEntry, status: str, why: str) -> None:
        """Nothing was created for ``entry``: its requests go to the online pass."""
        entry.status, entry.collected, entry.failed = status, True, len(entry.keys)
        self._record(entry)
        wanted = sum(1 for k in entry.keys if k in self.by_key)
        self.outcome.failed += wanted
        self._event(entry, status, reason=why)
        self.warn(f"{self.model.name}: no batch for {len(entry.keys)} requests ({why}); they go online")

    # --- listing what exists ---------------------------------------------------------------------------------

    async def _listed(self, route: str, since: float) -> list[Any]:
        """The items of ``batches`` or ``files`` made since ``since`` (seconds since the epoch, less a day of
        clock skew), newest first."""
        items: list[Any] = []
        after: str | None = None
        for _ in range(MAX_PAGES):
            page = await self._page(route, after)
            items += page.data
            if not page.has_more or not page.data:
                return items
            last = page.data[-1] if isinstance(page.data[-1], dict) else {}
            created = last.get("created_at")
            if isinstance(created, int | float) and created < since - CLOCK_SLACK:
                return items  # older than the call looked for: none of ours further on
            cursor = page.last_id or last.get("id")
            if not isinstance(cursor, str) or cursor == after:
                raise _CannotTell(f"the list of {route} pages on without end")
            after = cursor
        raise _CannotTell(f"the list of {route} runs past {MAX_PAGES} pages")

    async def _page(self, route: str, after: str | None) -> Page:
        for attempt in range(ATTEMPTS):
            try:
                return await self.api.page(route, after)
            except TransientError as exc:
                if attempt == ATTEMPTS - 1:
                    raise _CannotTell(f"listing {route}: {exc}") from None
                await self._pause(attempt)
        raise AssertionError("unreachable")

    async def _ours(self, entry: BatchEntry) -> BatchObject | None:
        """Our batch of ``entry`` at the endpoint: by the metadata naming run and chunk, or by its input file."""
        for item in await self._listed("batches", entry.unsettled_since or self.ledger.started):
            try:
                batch = parse(BatchObject, item, "a listed batch")
            except TransientError:
                continue
            meta = batch.metadata or {}
            if (meta.get("rescue_run") == self.ledger.run_of(entry) and meta.get("rescue_chunk") == entry.chunk) or (
                    entry.input_file_id and batch.input_file_id == entry.input_file_id):
                return batch
        return None

    async def _our_file(self, entry: BatchEntry) -> str | None:
        """Our uploaded file of ``entry`` at the endpoint: by its name and size."""
        for item in await self._listed("files", entry.unsettled_since or self.ledger.started):
            try:
                found = parse(FileObject, item, "a listed file")
            except TransientError:
                continue
            if found.filename == entry.upload_name and found.bytes in (None, entry.upload_bytes):
                return found.id
        return None

    # --- upload and create, each at most once ---------------------------------------------------------------

    def _unsettle(self, entry: BatchEntry, step: Literal["upload", "create"], why: str) -> None:
        """Record, before it is sent and again after an ambiguous answer, that ``step`` of ``entry`` may have
        happened unseen; the time it began is kept (a rerun waits out the same window)."""
        if entry.unsettled != step:
            entry.unsettled, entry.unsettled_since = step, time.time()
        entry.unsettled_why = why[:2000]
        self._record(entry)

    @staticmethod
    def _settled(entry: BatchEntry) -> None:
        entry.unsettled, entry.unsettled_since, entry.unsettled_why = "", 0.0, ""

    async def submit(self, entry: BatchEntry, content: bytes | None) -> None:
        """Upload ``entry``'s requests (unless uploaded before) and create its batch; after an ambiguous upload or
        create, adopt ours once the endpoint lists it (or stop, :meth:`_settle`). Chunks the endpoint refused go
        online."""
        fresh = not entry.input_file_id
        if fresh and content == b"":  # an earlier run's chunk whose requests are all answered by now
            entry.status, entry.collected = "answered_elsewhere", True
            return self._record(entry)
        if fresh:
            file_id = await self._upload(entry, content)
            if file_id is None:
                return
            entry.input_file_id, entry.status = file_id, "uploaded"
            self._settled(entry)
        await self._create(entry, new=fresh)

    async def _upload(self, entry: BatchEntry, content: bytes | None) -> str | None:
        """The id of ``entry``'s uploaded file: uploaded now, or adopted once the files list shows an upload
        whose answer was lost. One the list has not shown by the end of the window is uploaded again: a file
        costs nothing until a batch is created over it, and rescue creates one only over a file whose id it
        holds, so a lost upload is never billed."""
        while True:
            if entry.unsettled == "upload":  # an upload of an earlier try or run may have arrived: look first
                found = await self._settle(entry, self._our_file, stop=False)
                if found is not None:
                    self._event(entry, "file_adopted", file_id=found)
                    return found
                self.warn(f"{self.model.name}: {entry.upload_name} was not listed in the {self.settle:g} s window; "
                          "uploaded again (a copy that arrived unseen is never used)")
                self._settled(entry)
            if entry.unsettled == "create" or content is None:  # a ledger edited by hand: never guess
                raise BatchError(f"{self.ledger.path}: chunk {entry.chunk[:16]} names no input file but a "
                                 f"{entry.unsettled or 'missing'} step; remove that entry to submit its requests again")
            entry.upload_name = f"rescue-{self.ledger.run_of(entry)[:16]}-{entry.chunk[:16]}.jsonl"
            entry.upload_bytes = len(content)
            self._unsettle(entry, "upload", "sent, no answer yet")
            try:
                file_id = await self.api.upload(content, entry.upload_name)
            except TransientError as exc:
                self._unsettle(entry, "upload", f"upload: {exc}")
                self._event(entry, "upload_ambiguous", reason=str(exc))
                continue
            except BatchError as exc:
                self._settled(entry)
                self._left_online(entry, "upload_refused", str(exc))
                return None
            self._event(entry, "uploaded", file_id=file_id)
            return file_id

    async def _create(self, entry: BatchEntry, new: bool) -> None:
        """Create ``entry``'s batch once; after an ambiguous create (in this run or an earlier one), adopt ours
        when the batches list shows it. ``new``: uploaded by this call (its batch counts as submitted)."""
        if entry.unsettled == "create":
            found = await self._settle(entry, self._ours)
            self._event(entry, "batch_adopted", batch_id=found.id)
            return self._created(entry, found, new=new)
        self._unsettle(entry, "create", "sent, no answer yet")  # with the file id: one write before the create
        try:
            batch = await self.api.create(entry.input_file_id, {
                "rescue_run": self.ledger.run_of(entry), "rescue_chunk": entry.chunk, "rescue_model": self.model.name[:512],
                "rescue_purpose": entry.purpose[:512]})
        except TransientError as exc:
            self._unsettle(entry, "create", f"create: {exc}")
            self._event(entry, "create_ambiguous", reason=str(exc))
            found = await self._settle(entry, self._ours)
            self._event(entry, "batch_adopted", batch_id=found.id)
            return self._created(entry, found, new=new)
        except BatchError as exc:
            self._settled(entry)
            return self._left_online(entry, "create_refused", str(exc))
        return self._created(entry, batch, new=new)

    def _what(self, entry: BatchEntry) -> str:
        if entry.unsettled == "upload":
            return (f"the file {entry.upload_name} ({entry.upload_bytes} bytes, {len(entry.keys)} requests) in "
                    "the endpoint's files (GET /files)")
        return (f"the batch of {len(entry.keys)} requests over file {entry.input_file_id} (metadata rescue_chunk "
                f"{entry.chunk[:16]}...) in the endpoint's batches (GET /batches)")

    @overload
    async def _settle(self, entry: BatchEntry, look: Callable[[BatchEntry], Awaitable[_T | None]]) -> _T: ...

    @overload
    async def _settle(self, entry: BatchEntry, look: Callable[[BatchEntry], Awaitable[_T | None]],
                      stop: bool) -> _T | None: ...

    async def _settle(self, entry: BatchEntry, look: Callable[[BatchEntry], Awaitable[_T | None]],
                      stop: bool = True) -> _T | None:
        """What ``look`` finds of ours once the endpoint's list shows it, read again with backoff until the
        settle window (counted from ``entry.unsettled_since``) is over; then :class:`BatchUnsettled`, or None
        when not ``stop``."""
        since = min(entry.unsettled_since, time.time())
        deadline = since + self.settle
        step, looks, said, failure = entry.unsettled, 0, False, ""
        while True:
            try:
                found = await look(entry)
            except (_CannotTell, BatchError) as exc:
                found, failure = None, str(exc)
            looks += 1
            if found is not None:
                self._settled(entry)
                return found
            left = deadline - time.time()
            if left <= 0:
                break
            if not said:
                said = True
                self._event(entry, "settle_wait", unsettled=step, since=round(since, 3), window_s=self.settle)
                self.warn(f"{self.model.name}: the {step} of {len(entry.keys)} requests may have happened unseen "
                          f"({entry.unsettled_why}); nothing else is {DONE[step]} for them until the endpoint lists "
                          f"it: waiting up to {left:.0f} s more for {self._what(entry)}")
            await asyncio.sleep(min(left, self.poll_interval, SETTLE_FIRST_PAUSE * 2 ** min(looks - 1, 16)))
        self._event(entry, "unsettled", unsettled=step, since=round(since, 3), looks=looks, reason=failure)
        if not stop:
            return None
        began = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(since))
        last = f"; the last list failed: {failure}" if failure else ""
        raise BatchUnsettled(
            f"{self.model.name}: waiting for {self._what(entry)}: the {step} sent at {began} "
            f"({entry.unsettled_why}) may have happened, and the list has not shown it in the {self.settle:g} s "
            f"window since ({looks} looks in this run{last}). Nothing was {DONE[step]} twice. Rerun to look again; "
            f"if the provider's console shows none, remove the entry of chunk {entry.chunk[:16]} from "
            f"{self.ledger.path} to create it (without --batch these requests go online, and a batch that was made "
            "still runs and bills)")

    def _created(self, entry: BatchEntry, batch: BatchObject, new: bool) -> None:
        entry.batch_id, entry.status = batch.id, batch.status
        self._settled(entry)
        self._record(entry)  # before waiting: a killed run finds it and polls it
        if new:
            self.outcome.submitted += len(entry.keys)

    # --- following a batch and reading what it answered -----------------------------------------------------

    async def follow(self, entry: BatchEntry) -> None:
        """Poll one batch until it ends, then store its answers; what it could not answer is left online."""
        reader = OutputReader(self.model, self.inner, entry.batch_id, entry.keys, self.by_key)
        batch = await self._until_done(entry)
        if isinstance(batch, str):
            return self._abandon(entry, reader, f"cannot be read ({batch})")
        for file_id, kind in ((batch.output_file_id, "output"), (batch.error_file_id, "errors")):
            failure = await self._read(reader, file_id, kind) if file_id else None
            if failure is not None:
                return self._abandon(entry, reader, f"has an {kind} file that cannot be read ({failure})")
        warning = reader.finish(entry.status)
        if warning:
            self.warn(warning)
        entry.answered, entry.failed, entry.collected = len(reader.stored), len(reader.missing), True
        self.ledger.save()
        self.model.log.event("batch", model=self.model.name, batch_id=entry.batch_id, status=entry.status,
                             requests=len(entry.keys), answered=entry.answered, left_to_online=entry.failed,
                             unreadable_lines=reader.unreadable, repeated_lines=reader.repeated,
                             unknown_lines=reader.unknown, at=round(time.time(), 3))
        self.outcome.answered += entry.answered
        self.outcome.failed += entry.failed
        return None

    async def _until_done(self, entry: BatchEntry) -> BatchObject | str:
        """The batch once it ended, or why its status could not be read."""
        unread = 0
        while True:
            try:
                batch = await self.api.status(entry.batch_id)
            except (TransientError, BatchError) as exc:
                unread += 1
                if isinstance(exc, BatchError) or unread >= ATTEMPTS:
                    return str(exc)
                await self._pause(unread)
                continue
            unread = 0
            entry.status = batch.status
            counts = batch.request_counts
            if self.on_progress is not None and counts is not None and counts.completed is not None:
                self.on_progress(entry.batch_id, counts.completed, counts.failed or 0,
                                 counts.total if counts.total is not None else len(entry.keys))
            if batch.status in TERMINAL:
                return batch
            await asyncio.sleep(self.poll_interval)

    async def _read(self, reader: OutputReader, file_id: str, kind: str) -> str | None:
        """Read one of the batch's files into the cache; why it could not be read whole, None when it was."""
        why = ""
        for attempt in range(ATTEMPTS):
            try:
                await reader.read(self.api.content(file_id), kind)
                return None
            except (TransientError, BatchError) as exc:
                why = str(exc)
                if isinstance(exc, BatchError):
                    break
                await self._pause(attempt)
        return why

    def _abandon(self, entry: BatchEntry, reader: OutputReader, what: str) -> None:
        """Stop following a batch in this run: what it answered stays stored, the rest goes online; the ledger
        keeps it uncollected so that a rerun polls it again."""
        self.ledger.save()
        self.outcome.answered += len(reader.stored)
        self.outcome.failed += len(reader.missing)
        self.model.log.event("batch", model=self.model.name, batch_id=entry.batch_id, status="unreadable",
                             requests=len(entry.keys), answered=len(reader.stored),
                             left_to_online=len(reader.missing), reason=what, at=round(time.time(), 3))
        self.warn(f"{self.model.name}: batch {entry.batch_id} {what}; its {len(reader.missing)} "
                  "unanswered requests go online (the batch may still run at the endpoint; a rerun polls it again)")


__all__ = ["LEDGER", "SETTLE_WINDOW", "BatchEndpoint", "BatchEntry", "BatchError", "BatchLedger", "BatchOutcome",
           "LedgerLock", "held_ledger", "run_in_batches"]
