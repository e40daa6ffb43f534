"""A scripted OpenAI-compatible chat server for tests and benchmarks.

It speaks real HTTP on 127.0.0.1 so the engine is exercised through the same client code path it uses
against a provider: retries, rate limits, timeouts and refusals are produced by the server, not mocked.

What it answers is decided per request by a *script*: a function ``(body) -> Reply`` (sync or async),
or a plain ``str``/``dict`` (its content). :class:`Reply` has constructors for every behaviour a real
provider shows: latency, 429 with Retry-After, 500, OpenAI/Azure and DashScope content-filter
rejections, ``finish_reason="content_filter"``, truncated and malformed JSON, hanging requests, bodies that
trickle in a byte at a time, answers and errors that quote the caller's API key, completions of the wrong
shape, huge answers and any Retry-After value.

    with serve(script=lambda body: Reply.json({"predictions": []}), latency=0.2) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
        ...
        assert server.request_count == 1
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import itertools
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

# JsonObject is open here: a client's request body and the scripted answers, as the API has them
from rescue.data.shapes import JsonObject

# A hanging request sleeps this long; the client's timeout fires first and the server cancels it on stop.
HANG_SECONDS = 3600.0


@dataclass
class Reply:
    """One scripted answer. ``status`` 200 gives a chat completion; anything else an error response.

    ``body`` replaces the JSON error body (or, with ``raw=True``, is sent verbatim as text: a proxy's HTML
    page, a cut-off body). ``delay`` is added to the server's base latency before answering.
    """

    content: str | None = ""
    status: int = 200
    finish_reason: str = "stop"
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    raw: bool = False
    delay: float = 0.0
    usage: JsonObject | None = None  # None: estimated from prompt and content lengths
    trickle: float = 0.0  # > 0: the body is sent one byte every this many seconds
    chunked: bool = False  # the body is streamed in chunks without a Content-Length
    # "{api_key}" in the content or body is replaced by the Bearer key the request came with.
    echo_key: bool = False
    # Thinking models: the reasoning text, sent as message.reasoning_content (or delta.reasoning_content when
    # streamed; ``reasoning_field="reasoning"`` for the OpenRouter style) and counted as reasoning tokens.
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"
    # Streamed answers (when the request says stream: true): faults of the event stream itself.
    chunk_delay: float = 0.0  # seconds between events
    cut_after: int | None = None  # stop after this many events: no finish_reason, no [DONE]
    reset: bool = False  # with cut_after: break the connection instead of closing it cleanly
    bad_chunk: bool = False  # one event is not JSON
    stream_error: str | None = None  # an error event in the middle of the stream (after a 200)
    ignore_stream: bool = False  # answer a streaming request with a plain JSON completion
    # Valid SSE that a reader must still get right, and deltas that are not part of the answer:
    other_choice: str | None = None  # deltas of choices[].index 1 with this text, interleaved with choice 0's
    multiline_data: bool = False  # each event's JSON pretty-printed, one data: line per line (joined by the reader)
    after_finish: str | None = None  # content deltas of choice 0 sent after its finish_reason
    newline: str = "\n"  # the line ending: "\r\n" and "\r" are valid SSE too
    comments: bool = False  # ": keep-alive" comments, event:/id:/retry: fields and empty data: lines between events
    no_done: bool = False  # no data: [DONE] at the end (the finish_reason and usage still come)
    served_model: str | None = None  # the answer's "model" (what the provider says it served); None: the request's

    @classmethod
    def text(cls, content: str, *, delay: float = 0.0) -> Reply:
        return cls(content=content, delay=delay)

    @classmethod
    def json(cls, value: Any, *, delay: float = 0.0) -> Reply:
        return cls(content=json.dumps(value, ensure_ascii=False), delay=delay)

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        *,
        code: str | None = None,
        type: str = "server_error",
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> Reply:
        """An error in OpenAI's shape: ``{"error": {"message", "type", "code", "param"}}``."""
        body = {"error": {"message": message, "type": type, "code": code, "param": None}}
        return cls(content=None, status=status, headers=dict(headers or {}), body=body, delay=delay)

    @classmethod
    def rate_limited(cls, retry_after: float = 1.0, *, delay: float = 0.0) -> Reply:
        # Retry-After is whole seconds in the HTTP spec; OpenAI also sends retry-after-ms for finer waits.
        headers = {"Retry-After": str(max(0, round(retry_after))), "retry-after-ms": str(int(retry_after * 1000))}
        return cls.error(
            429, "Rate limit reached. Please retry later.", code="rate_limit_exceeded",
            type="requests", headers=headers, delay=delay,
        )

    @classmethod
    def server_error(cls, status: int = 500, *, delay: float = 0.0) -> Reply:
        return cls.error(status, "The server had an error while processing your request.", delay=delay)

    @classmethod
    def content_filter(cls, *, delay: float = 0.0) -> Reply:
        """OpenAI/Azure: the prompt is rejected with 400 and ``code: content_filter``."""
        return cls.error(
            400,
            "The response was filtered due to the prompt triggering content management policy.",
            code="content_filter", type="invalid_request_error", delay=delay,
        )

    @classmethod
    def data_inspection_failed(cls, *, delay: float = 0.0) -> Reply:
        """DashScope (Alibaba Bailian): the input is rejected with 400 and ``code: data_inspection_failed``."""
        return cls.error(
            400, "Input data may contain inappropriate content.",
            code="data_inspection_failed", type="data_inspection_failed", delay=delay,
        )

    @classmethod
    def filtered(cls, content: str | None = None, *, delay: float = 0.0) -> Reply:
        """A 200 completion the provider cut off by its output filter: ``finish_reason="content_filter"``."""
        return cls(content=content, finish_reason="content_filter", delay=delay)

    @classmethod
    def truncated(cls, content: str, keep: float = 0.5, *, delay: float = 0.0) -> Reply:
        """The first ``keep`` share of ``content`` with ``finish_reason="length"``, as when max_tokens runs out."""
        return cls(content=content[: int(len(content) * keep)], finish_reason="length", delay=delay)

    @classmethod
    def malformed(cls, *, delay: float = 0.0) -> Reply:
        """Text that looks like JSON but does not decode (unquoted keys, trailing comma)."""
        return cls(content="{predictions: [{id: row1, answer: yes},]}", delay=delay)

    @classmethod
    def hang(cls) -> Reply:
        """Never answers in time: the client's timeout is what ends the request."""
        return cls(content="", delay=HANG_SECONDS)

    @classmethod
    def raw_body(cls, status: int, text: str, *, content_type: str = "text/html", delay: float = 0.0) -> Reply:
        """A body that is not an API response at all (a gateway's HTML error page, a cut-off JSON body)."""
        return cls(content=None, status=status, body=text, raw=True, headers={"content-type": content_type}, delay=delay)

    @classmethod
    def retry_after(cls, value: str, *, status: int = 429) -> Reply:
        """A 429 (or 503 ...) whose only hint is ``Retry-After: value``, verbatim (``"86400"``, ``"0"``, junk)."""
        reply = cls.error(status, "Slow down." if status == 429 else "Service unavailable.",
                          code="rate_limit_exceeded" if status == 429 else None)
        reply.headers = {"Retry-After": value}
        return reply

    @classmethod
    def trickling(cls, content: str, *, seconds_per_byte: float = 0.2) -> Reply:
        """A normal completion whose body arrives one byte every ``seconds_per_byte``: headers come at once,
        so only a deadline on the whole request ends it."""
        return cls(content=content, trickle=seconds_per_byte)

    @classmethod
    def huge(cls, size: int, *, chunked: bool = False) -> Reply:
        """A completion whose content is ``size`` bytes; ``chunked``: streamed without a Content-Length."""
        return cls(content="x" * size, chunked=chunked)

    @classmethod
    def quoting_key(cls, template: str = "Your key {api_key} was used.", *, status: int = 200) -> Reply:
        """An answer (or, with an error ``status``, an error message) that quotes the caller's own API key
        wherever ``template`` says ``{api_key}``."""
        if status == 200:
            return cls(content=template, echo_key=True)
        reply = cls.error(status, template, type="invalid_request_error")
        reply.echo_key = True
        return reply

    @classmethod
    def thinking(cls, content: str | None, reasoning: str, *, finish_reason: str = "stop",
                 field: str = "reasoning_content", delay: float = 0.0) -> Reply:
        """A thinking model's answer: ``reasoning`` apart from the ``content`` (None or "": thinking only)."""
        return cls(content=content, reasoning=reasoning, finish_reason=finish_reason, reasoning_field=field,
                   delay=delay)

    @classmethod
    def budget_spent(cls, reasoning: str = "Let me think about this step by step. " * 20) -> Reply:
        """The whole answer budget spent thinking: no content, ``finish_reason="length"``."""
        return cls(content=None, reasoning=reasoning, finish_reason="length")

    # Completions of the wrong shape, as some proxies and half-compatible servers send them. (A bad usage block
    # alone is not one: the answer is kept and its usage counted as unknown; ``Reply(usage=...)`` sends one.)
    MALFORMED_SHAPES: ClassVar[dict[str, object]] = {  # shape name -> the JSON sent (not always an object)
        "message_string": {"choices": [{"message": "hello", "finish_reason": "stop"}]},
        "content_number": {"choices": [{"message": {"role": "assistant", "content": 42}, "finish_reason": "stop"}]},
        "choices_string": {"choices": "none"},
        "choice_list": {"choices": [["not", "an", "object"]]},
        "body_list": [1, 2, 3],
        "finish_number": {"choices": [{"message": {"role": "assistant", "content": "{}"}, "finish_reason": 7}]},
    }

    @classmethod
    def malformed_completion(cls, shape: str) -> Reply:
        """A 200 with valid JSON that is not a chat completion: one of :attr:`MALFORMED_SHAPES`."""
        return cls.raw_body(200, json.dumps(cls.MALFORMED_SHAPES[shape]), content_type="application/json")


ScriptResult = Reply | str | JsonObject
Script = Callable[[JsonObject], ScriptResult | Awaitable[ScriptResult]]


def _as_reply(result: ScriptResult) -> Reply:
    if isinstance(result, Reply):
        return result
    if isinstance(result, str):
        return Reply.text(result)
    if isinstance(result, dict):
        return Reply.json(result)
    raise TypeError(f"a script must return Reply, str or dict, not {type(result).__name__}")


def request_key(body: JsonObject) -> str:
    """Identifies a request by its messages (a transcription by its audio), so a retry of the same request maps
    to the same key."""
    if "messages" not in body and isinstance(body.get("file"), dict):
        return str(body["file"].get("sha256"))
    messages = json.dumps(body.get("messages"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(messages.encode()).hexdigest()


def message_text(body: JsonObject) -> str:
    """All message contents of a request joined, for scripts that decide by what the prompt says."""
    parts: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):  # multimodal content parts
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------------------
# Script helpers


def constant(reply: ScriptResult) -> Script:
    return lambda body: reply


def sequence(*replies: ScriptResult) -> Script:
    """Answers in order, request by request across all requests; the last answer repeats."""
    if not replies:
        raise ValueError("sequence() needs at least one reply")
    lock = threading.Lock()
    position = itertools.count()

    def script(body: JsonObject) -> ScriptResult:
        with lock:
            index = next(position)
        return replies[min(index, len(replies) - 1)]

    return script


def fail_first(n: int, failure: ScriptResult, then: Script | ScriptResult, *, per_request: bool = True) -> Script:
    """``failure`` for the first ``n`` attempts, then ``then``.

    With ``per_request`` (default) attempts are counted per distinct request (same messages), which is
    what a client's retry loop sees; otherwise across all requests.
    """
    lock = threading.Lock()
    attempts: dict[str, int] = {}
    follow: Script = then if callable(then) else constant(then)

    def script(body: JsonObject) -> ScriptResult | Awaitable[ScriptResult]:
        key = request_key(body) if per_request else ""
        with lock:
            attempts[key] = attempts.get(key, 0) + 1
            count = attempts[key]
        return failure if count <= n else follow(body)

    return script


def default_script(body: JsonObject) -> ScriptResult:
    return Reply.json({"predictions": []})


def verbose_json(segments: list[JsonObject], words: list[JsonObject] | None = None, *,
                 duration: float | None = None, language: str = "english") -> JsonObject:
    """A transcription in OpenAI's ``verbose_json`` shape. ``segments``: ``{"start", "end", "text"}`` and,
    as diarizing servers (whisperX, speaches with diarization) add it, ``"speaker"``; ``words``: ``{"word",
    "start", "end"}`` (``timestamp_granularities[]=word``), speaker optional too."""
    full = []
    for n, segment in enumerate(segments):
        full.append({"id": n, "seek": 0, "tokens": [], "temperature": 0.0, "avg_logprob": -0.2,
                     "compression_ratio": 1.2, "no_speech_prob": 0.01, **segment})
    end = max([s["end"] for s in segments] + [w["end"] for w in words or []] + [0.0])
    answer: JsonObject = {"task": "transcribe", "language": language,
                              "duration": end if duration is None else duration,
                              "text": " ".join(str(s["text"]).strip() for s in segments), "segments": full}
    if words is not None:
        answer["words"] = words
    return answer


def default_transcription(body: JsonObject) -> ScriptResult:
    from rescue.llm._transcribe import wav_seconds

    seconds = wav_seconds(body["file"]["data"]) or 1.0
    return verbose_json([{"start": 0.0, "end": round(seconds, 3), "text": "Scripted transcription."}],
                        duration=seconds)


# ---------------------------------------------------------------------------------------------------------
# The app


@dataclass
class LoggedRequest:
    path: str
    body: JsonObject
    headers: dict[str, str]
    received_at: float  # time.monotonic()
    peer: str = ""  # the client's host:port: one value per TCP connection it used


@dataclass
class BatchBehaviour:
    """How the scripted batch endpoint behaves: ``polls`` status reads before a batch ends, then ``outcome``:
    ``completed`` (every line answered by the script; non-200 replies go to the error file), ``expired``
    (only the first ``expire_after`` lines answered, the rest in the error file as ``batch_expired``) or
    ``failed`` (nothing run: the batch's own ``errors``)."""

    polls: int = 1
    outcome: str = "completed"
    expire_after: int = 0
    # Faults of the batch-API routes, each for its next ``times`` calls (:class:`BatchFault`).
    faults: list[BatchFault] = field(default_factory=list)
    # Rewrites of a finished batch's output and error files (bytes in, bytes out): lines that are not JSON,
    # cut off, of the wrong shape, repeated, not UTF-8 ... as a provider's file might hold them.
    output: Callable[[bytes], bytes] | None = None
    errors: Callable[[bytes], bytes] | None = None


BATCH_ROUTES = ("upload", "list_files", "content", "create", "list_batches", "status")


@dataclass
class BatchFault:
    """A fault of one batch-API route (one of :data:`BATCH_ROUTES`) for its next ``times`` calls.

    ``after`` (the default): the route does its work first (the file is stored, the batch created) and the
    fault replaces its answer, the ambiguous failure a client cannot tell from one where nothing happened;
    ``after=False``: nothing is done. The answer is then an error ``status`` (500 ...), or ``body`` (bytes sent
    with 200 instead of the real answer, or a function of the real answer's bytes), or the real answer cut to its first ``cut`` bytes; after what was
    sent, ``drop`` breaks the connection and ``hang`` waits until the client gives up (or the server stops).
    """

    route: str
    times: int = 1
    after: bool = True
    status: int | None = None
    body: bytes | Callable[[bytes], bytes] | None = None
    cut: int | None = None
    drop: bool = False
    hang: bool = False
    calls: int = 0  # how often it struck

    def __post_init__(self) -> None:
        if self.route not in BATCH_ROUTES:
            raise ValueError(f"route {self.route!r} is not one of {', '.join(BATCH_ROUTES)}")

    @classmethod
    def lagging(cls, route: str, times: int) -> BatchFault:
        """An eventually consistent list: the next ``times`` calls of ``list_batches`` or ``list_files`` answer an
        empty page, whatever exists (as a list that has not caught up with a create or upload yet)."""
        if route not in ("list_batches", "list_files"):
            raise ValueError("only a list route lags: list_batches or list_files")
        return cls(route, times=times, body=EMPTY_PAGE)


EMPTY_PAGE = b'{"object": "list", "data": [], "first_id": null, "last_id": null, "has_more": false}'


class ServerState:
    """What the app reads (script, latency) and records (requests, in-flight counts); thread-safe."""

    def __init__(self, script: Script | ScriptResult | None, latency: float, api_key: str | None, model_ids: list[str],
                 transcribe: Script | ScriptResult | None = None):
        self.script: Script = default_script if script is None else (script if callable(script) else constant(script))
        self.transcribe: Script = default_transcription if transcribe is None else (
            transcribe if callable(transcribe) else constant(transcribe))
        self.latency = latency
        self.api_key = api_key
        self.model_ids = model_ids
        self._lock = threading.Lock()
        self._requests: list[LoggedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        # Set from the server's loop; stop() wakes sleeping (latency, hanging) requests through it so
        # shutdown does not wait for them.
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stopping: asyncio.Event | None = None
        # The batch API (/v1/files, /v1/batches): uploaded files, batches, and how batches behave.
        self.files: dict[str, tuple[str, bytes]] = {}  # id -> (purpose, content)
        self.file_info: dict[str, JsonObject] = {}  # id -> the file object of an upload (files listed)
        self.batches: dict[str, JsonObject] = {}
        self.batch_behaviour = BatchBehaviour()
        self.batch_bodies: list[JsonObject] = []  # every request a batch ran (not counted as online requests)
        self.ids = itertools.count(1)
        self.paths: list[tuple[str, str]] = []  # (method, raw path) of every request received, any route or none
        self.headers: list[dict[str, str]] = []  # the headers of each of them (names lower-case), in that order

    async def sleep(self, seconds: float) -> bool:
        """Wait ``seconds``; False when the server is stopping first."""
        if self.stopping is None:
            self.loop = asyncio.get_running_loop()
            self.stopping = asyncio.Event()
        try:
            await asyncio.wait_for(self.stopping.wait(), seconds)
        except TimeoutError:
            return True
        return False

    def wake_all(self) -> None:
        if self.loop is not None and self.stopping is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.stopping.set)

    def log(self, entry: LoggedRequest) -> None:
        with self._lock:
            self._requests.append(entry)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def record_path(self, method: str, path: str, headers: dict[str, str]) -> None:
        with self._lock:
            self.paths.append((method, path))
            self.headers.append(headers)

    def recorded_paths(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self.paths)

    def recorded_headers(self) -> list[dict[str, str]]:
        with self._lock:
            return list(self.headers)

    @property
    def requests(self) -> list[LoggedRequest]:
        with self._lock:
            return list(self._requests)

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()
            self.max_in_flight = self.in_flight


def _estimate_tokens(text: str) -> int:
    # About four characters per token in English; enough for cost and usage bookkeeping to be non-trivial.
    return max(1, len(text) // 4) if text else 0


def _usage(body: JsonObject, reply: Reply) -> JsonObject:
    if reply.usage is not None:
        return reply.usage
    prompt_tokens = _estimate_tokens(message_text(body))
    reasoning_tokens = _estimate_tokens(reply.reasoning or "")
    completion_tokens = _estimate_tokens(reply.content or "") + reasoning_tokens
    usage: JsonObject = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    if reply.reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return usage


def _completion(body: JsonObject, reply: Reply) -> JsonObject:
    message: JsonObject = {"role": "assistant", "content": reply.content}
    if reply.reasoning is not None:
        message[reply.reasoning_field] = reply.reasoning
    return {
        "id": f"chatcmpl-test-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.served_model or body.get("model", "test-model"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": _usage(body, reply),
    }


def _dumps(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in scripted content goes out as the JSON escape \ud800
        return json.dumps(value)
    return text


def _pieces(text: str, size: int = 16) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse_events(body: JsonObject, reply: Reply) -> list[str]:
    """The completion as server-sent events, as OpenAI-style providers stream it: a role delta, reasoning
    deltas, content deltas, a finish chunk, a usage chunk (``stream_options.include_usage``) and ``[DONE]``;
    then the stream faults and SSE variants the reply asks for."""
    base = {"id": f"chatcmpl-test-{time.monotonic_ns()}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": body.get("model", "test-model")}

    def chunk(delta: JsonObject, finish: str | None = None, index: int = 0) -> str:
        return _dumps({**base, "choices": [{"index": index, "delta": delta, "finish_reason": finish}]})

    payloads = [chunk({"role": "assistant", "content": ""})]
    payloads += [chunk({reply.reasoning_field: piece, "content": None}) for piece in _pieces(reply.reasoning or "")]
    for n, piece in enumerate(_pieces(reply.content or "")):
        payloads.append(chunk({"content": piece}))
        if reply.other_choice is not None and n < len(_pieces(reply.other_choice)):
            payloads.append(chunk({"content": _pieces(reply.other_choice)[n]}, index=1))
    if reply.bad_chunk:
        payloads.insert(len(payloads) // 2 + 1, '{"choices": [{"delta": {"content": "x"')
    if reply.stream_error is not None:
        error = {"error": {"message": reply.stream_error, "type": "server_error", "code": None}}
        payloads.insert(len(payloads) // 2 + 1, json.dumps(error))
    payloads.append(chunk({}, reply.finish_reason))
    if reply.other_choice is not None:
        payloads.append(chunk({}, "stop", index=1))
    if reply.after_finish is not None:
        payloads += [chunk({"content": piece}) for piece in _pieces(reply.after_finish)]
    if (body.get("stream_options") or {}).get("include_usage"):
        payloads.append(json.dumps({**base, "choices": [], "usage": _usage(body, reply)}))
    if not reply.no_done:
        payloads.append("[DONE]")
    return [_event(payload, reply) for payload in payloads]


def _event(payload: str, reply: Reply) -> str:
    """One payload as an SSE event: its data: lines (several when the reply spreads it), the fields and comments
    a reader skips, and the reply's line ending."""
    text = payload
    if reply.multiline_data and payload.startswith("{"):
        try:
            text = json.dumps(json.loads(payload), indent=1, ensure_ascii=False)
        except ValueError:  # the bad chunk stays as it is
            pass
    lines = [f"data: {line}" for line in text.split("\n")]
    if reply.comments:
        lines = [": keep-alive", "event: message", "id: 1", "retry: 1000", *lines]
    event = "\n".join(lines) + "\n\n"
    if reply.comments:
        event = ": ping\n\ndata:\n\n" + event
    return event.replace("\n", reply.newline)


class _StreamReset(Exception):
    """Raised inside a streamed body: the server drops the connection mid-answer."""


async def _sse(state: ServerState, events: list[str], reply: Reply, key: str) -> Any:
    if reply.cut_after is None and reply.trickle <= 0 and reply.chunk_delay <= 0:
        # No fault of the stream itself: every event in one write (the client still parses them one by one),
        # so the server's own cost does not weigh on a benchmark of the client.
        text = "".join(events)
        yield (text.replace("{api_key}", key) if reply.echo_key else text).encode()
        return
    for n, event in enumerate(events):
        if reply.cut_after is not None and n >= reply.cut_after:
            if reply.reset:
                raise _StreamReset("connection dropped mid-stream")
            return
        data = event.replace("{api_key}", key).encode() if reply.echo_key else event.encode()
        if reply.trickle > 0:
            async for byte in _stream(state, data, reply.trickle):
                yield byte
        else:
            yield data
        if reply.chunk_delay > 0 and not await state.sleep(reply.chunk_delay):
            return


async def _stream(state: ServerState, data: bytes, seconds_per_byte: float) -> Any:
    if seconds_per_byte <= 0:
        for start in range(0, len(data), 65536):
            yield data[start : start + 65536]
        return
    for start in range(len(data)):
        yield data[start : start + 1]
        if not await state.sleep(seconds_per_byte):
            return


def create_app(state: ServerState) -> FastAPI:
    """The scripted server's routes over ``state``: models, chat completions (streamed or not), files and
    batches (the batch API), audio transcriptions."""
    app = FastAPI(title="rescue scripted OpenAI-compatible server")

    app.add_middleware(_PathLog, state=state)

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        denied = _unauthorised(state, request)
        return denied if denied is not None else _models(state)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        return await _chat_completions(state, request)

    _batch_routes(app, state)

    @app.post("/v1/audio/transcriptions")
    async def transcriptions(request: Request) -> Response:
        """OpenAI's transcription upload: multipart ``file`` plus form fields. The script sees the fields (lists
        for repeated ones such as ``timestamp_granularities[]``) and ``file``: ``filename``, ``content_type``,
        ``size``, ``sha256`` and the bytes as ``data``. A dict or :func:`verbose_json` answer is sent as the body;
        a :class:`Reply` with an error status as that error (429, 500 ...)."""
        return await _transcriptions(state, request)

    return app


class _PathLog:
    """Records the method, raw path and headers of every HTTP request (plain ASGI: streamed and hanging answers
    pass as they are)."""

    def __init__(self, app: Any, state: ServerState):
        self.app, self.state = app, state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            raw = scope.get("raw_path") or scope["path"].encode()
            headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
            self.state.record_path(scope["method"], raw.decode("latin-1"), headers)
        await self.app(scope, receive, send)


def _unauthorised(state: ServerState, request: Request) -> JSONResponse | None:
    if state.api_key is None:
        return None
    if request.headers.get("authorization") != f"Bearer {state.api_key}":
        body = {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                          "code": "invalid_api_key", "param": None}}
        return JSONResponse(body, status_code=401)
    return None


def _models(state: ServerState) -> Response:
    return JSONResponse({"object": "list", "data": [
        {"id": model_id, "object": "model", "created": 0, "owned_by": "rescue-test"} for model_id in state.model_ids
    ]})


def _peer(request: Request) -> str:
    return f"{request.client.host}:{request.client.port}" if request.client else ""


async def _scripted(state: ServerState, script: Script, body: JsonObject) -> Reply | None:
    """The script's reply to ``body``, after the server's latency and the reply's delay; None when the server
    shut down while waiting."""
    result = script(body)
    if inspect.isawaitable(result):
        result = await result
    reply = _as_reply(result)
    wait = state.latency + reply.delay
    if wait > 0 and not await state.sleep(wait):
        return None
    return reply


def _shutting_down() -> JSONResponse:
    return JSONResponse({"error": {"message": "server shutting down", "type": "server_error",
                                   "code": None, "param": None}}, status_code=503)


async def _reply_to(state: ServerState, request: Request, script: Script, body: JsonObject) -> Reply | Response:
    """The script's reply, or the response sent instead: a wrong key (401), the server shutting down (503)."""
    denied = _unauthorised(state, request)
    if denied is not None:
        return denied
    reply = await _scripted(state, script, body)
    return _shutting_down() if reply is None else reply


async def _chat_completions(state: ServerState, request: Request) -> Response:
    try:
        body = await request.json()
    except json.JSONDecodeError:
        return JSONResponse({"error": {"message": "request body is not JSON", "type": "invalid_request_error",
                                       "code": None, "param": None}}, status_code=400)
    state.log(LoggedRequest("/v1/chat/completions", body, dict(request.headers), time.monotonic(), _peer(request)))
    try:
        reply = await _reply_to(state, request, state.script, body)
        if not isinstance(reply, Reply):
            return reply
        given = request.headers.get("authorization", "").removeprefix("Bearer ")
        return _chat_response(state, body, reply, given)
    finally:
        state.done()


def _chat_response(state: ServerState, body: JsonObject, reply: Reply, given: str) -> Response:
    """The reply as the endpoint sends it: a stream of events, a body sent slowly or in chunks, or at once."""
    if body.get("stream") and reply.status == 200 and not reply.raw and not reply.ignore_stream:
        return StreamingResponse(_sse(state, _sse_events(body, reply), reply, given), status_code=200,
                                 headers={"content-type": "text/event-stream", **reply.headers})
    if reply.raw:
        payload = str(reply.body)
    elif reply.status != 200:
        payload = _dumps(reply.body)
    else:
        payload = _dumps(_completion(body, reply))
    if reply.echo_key:
        payload = payload.replace("{api_key}", given)
    headers = {"content-type": "application/json", **reply.headers}
    if reply.trickle > 0 or reply.chunked:
        return StreamingResponse(_stream(state, payload.encode(), reply.trickle), status_code=reply.status,
                                 headers=headers)
    return Response(payload, status_code=reply.status, headers=headers)


def _batch_routes(app: FastAPI, state: ServerState) -> None:
    """The batch API: files (upload, list, content) and batches (create, list, status), each open to the
    scripted faults of :class:`BatchFault`."""

    routes: list[tuple[str, str, str, Callable[[Request], Response | Awaitable[Response]]]] = [
        ("POST", "/v1/files", "upload", lambda request: _upload_file(state, request)),
        ("GET", "/v1/files", "list_files", lambda request: _list_files(state, request.query_params)),
        ("GET", "/v1/files/{file_id}/content", "content",
         lambda request: _file_content(state, request.path_params["file_id"])),
        ("POST", "/v1/batches", "create", lambda request: _create_batch(state, request)),
        ("GET", "/v1/batches", "list_batches", lambda request: _list_batches(state, request.query_params)),
        ("GET", "/v1/batches/{batch_id}", "status", lambda request: _get_batch(state, request.path_params["batch_id"])),
    ]
    for method, path, name, work in routes:
        app.add_api_route(path, _route(state, name, work), methods=[method])


def _route(state: ServerState, name: str, work: Callable[[Request], Response | Awaitable[Response]]) -> Any:
    async def answer(request: Request) -> Response:
        return await _faulty(state, request, name, lambda: work(request))

    return answer


async def _faulty(state: ServerState, request: Request, route: str,
                  work: Callable[[], Response | Awaitable[Response]]) -> Response:
    """The route's answer (401 without the server's key), or the scripted fault that strikes this call (its
    work done first when ``after``)."""
    denied = _unauthorised(state, request)
    if denied is not None:
        return denied
    fault = next((f for f in state.batch_behaviour.faults if f.route == route and f.calls < f.times), None)
    if fault is None:
        result = work()
        return await result if inspect.isawaitable(result) else result
    fault.calls += 1
    real: Response | None = None
    if fault.after:
        result = work()
        real = await result if inspect.isawaitable(result) else result
    if fault.status is not None:
        return _api_error(fault.status, f"scripted fault of {route}")
    payload = bytes(real.body) if real is not None else b""
    if fault.body is not None:
        payload = fault.body(payload) if callable(fault.body) else fault.body
    payload = payload if fault.cut is None else payload[: fault.cut]
    if not (fault.drop or fault.hang):
        return Response(payload, media_type="application/json")
    return StreamingResponse(_broken(state, payload, fault.hang), media_type="application/json")


async def _broken(state: ServerState, payload: bytes, hang: bool) -> Any:
    if payload:
        yield payload
    if hang:
        await state.sleep(HANG_SECONDS)
        return
    raise _StreamReset("connection dropped by a scripted fault")


def _page(items: list[JsonObject], query: Any) -> JSONResponse:
    """One page of a list route, as OpenAI pages them: newest first, ``limit`` (1-100) after the id ``after``."""
    try:
        limit = min(100, max(1, int(query.get("limit", 20))))
    except ValueError:
        return _api_error(400, "limit must be a number")
    ids = [item["id"] for item in items]
    after = query.get("after")
    start = ids.index(after) + 1 if after in ids else 0
    page = items[start : start + limit]
    return JSONResponse({"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                         "last_id": page[-1]["id"] if page else None, "has_more": start + limit < len(items)})


def _list_files(state: ServerState, query: Any) -> Response:
    purpose = query.get("purpose")
    files = [info for info in reversed(state.file_info.values()) if purpose in (None, info["purpose"])]
    return _page(files, query)


def _list_batches(state: ServerState, query: Any) -> Response:
    return _page([_public(batch) for batch in reversed(state.batches.values())], query)


async def _upload_file(state: ServerState, request: Request) -> Response:
    parts = {name: (filename, data) for name, filename, _type, data in
             _multipart_parts(request.headers.get("content-type", ""), await request.body())}
    if "file" not in parts:
        return _api_error(400, "a multipart body with a 'file' field is required")
    file_id = f"file-test-{next(state.ids)}"
    purpose = parts.get("purpose", (None, b""))[1].decode()
    filename, data = parts["file"]
    state.files[file_id] = (purpose, data)
    state.file_info[file_id] = {"id": file_id, "object": "file", "bytes": len(data), "purpose": purpose,
                                "filename": filename or "upload", "created_at": int(time.time())}
    return JSONResponse(state.file_info[file_id])


def _file_content(state: ServerState, file_id: str) -> Response:
    if file_id not in state.files:
        return _api_error(404, f"No such file: {file_id}")
    return Response(state.files[file_id][1], media_type="application/octet-stream")


async def _create_batch(state: ServerState, request: Request) -> Response:
    body = await request.json()
    file_id = body.get("input_file_id")
    if file_id not in state.files:
        return _api_error(400, f"input_file_id {file_id!r} is not an uploaded file")
    if body.get("endpoint") != "/v1/chat/completions":
        return _api_error(400, "endpoint must be /v1/chat/completions")
    metadata = body.get("metadata")
    if metadata is not None and not _metadata_ok(metadata):
        return _api_error(400, "metadata: at most 16 pairs, keys of up to 64 characters, text values of up to 512")
    lines = [json.loads(line) for line in state.files[file_id][1].splitlines() if line.strip()]
    batch_id = f"batch_test_{next(state.ids)}"
    state.batches[batch_id] = {
        "id": batch_id, "object": "batch", "endpoint": body["endpoint"], "input_file_id": file_id,
        "completion_window": body.get("completion_window", "24h"), "status": "validating",
        "output_file_id": None, "error_file_id": None, "created_at": int(time.time()), "errors": None,
        "request_counts": {"total": len(lines), "completed": 0, "failed": 0}, "metadata": metadata,
        "_lines": lines, "_polls": 0,
    }
    return JSONResponse(_public(state.batches[batch_id]))


def _metadata_ok(metadata: Any) -> bool:
    """OpenAI's limits on a batch's metadata."""
    return isinstance(metadata, dict) and len(metadata) <= 16 and all(
        isinstance(k, str) and len(k) <= 64 and isinstance(v, str) and len(v) <= 512 for k, v in metadata.items())


async def _get_batch(state: ServerState, batch_id: str) -> Response:
    batch = state.batches.get(batch_id)
    if batch is None:
        return _api_error(404, f"No batch found with id '{batch_id}'.")
    if batch["status"] in ("validating", "in_progress"):
        batch["_polls"] += 1
        if batch["_polls"] < state.batch_behaviour.polls:
            batch["status"] = "in_progress"
            total = batch["request_counts"]["total"]
            batch["request_counts"]["completed"] = total * batch["_polls"] // state.batch_behaviour.polls
        else:
            await _finish_batch(state, batch)
    return JSONResponse(_public(batch))


def _transcription_body(parts: list[tuple[str, str | None, str, bytes]]) -> JsonObject:
    """The form fields (lists for repeated ``NAME[]`` ones) and the first file, as the script sees them."""
    body: JsonObject = {}
    for name, _filename, _type, value in parts:
        if name == "file":
            continue
        text = value.decode("utf-8", "replace")
        if name.endswith("[]"):
            body.setdefault(name, []).append(text)
        else:
            body[name] = text
    _name, filename, content_type, data = next(part for part in parts if part[0] == "file")
    body["file"] = {"filename": filename, "content_type": content_type, "size": len(data),
                    "sha256": hashlib.sha256(data).hexdigest(), "data": data}
    return body


async def _transcriptions(state: ServerState, request: Request) -> Response:
    parts = _multipart_parts(request.headers.get("content-type", ""), await request.body())
    if not any(part[0] == "file" for part in parts):
        return _api_error(400, "expected multipart/form-data with a file")
    body = _transcription_body(parts)
    state.log(LoggedRequest("/v1/audio/transcriptions", body, dict(request.headers), time.monotonic(),
                            _peer(request)))
    try:
        reply = await _reply_to(state, request, state.transcribe, body)
        if not isinstance(reply, Reply):
            return reply
        if reply.raw:
            payload = str(reply.body)
        elif reply.status != 200:
            payload = _dumps(reply.body)
        else:
            payload = reply.content or ""
        return Response(payload, status_code=reply.status, headers={"content-type": "application/json",
                                                                     **reply.headers})
    finally:
        state.done()


def _api_error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error", "code": None,
                                   "param": None}}, status_code=status)


def _public(batch: JsonObject) -> JsonObject:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def _multipart_parts(content_type: str, body: bytes) -> list[tuple[str, str | None, str, bytes]]:
    """Every part of a multipart/form-data body (the standard library's MIME parser) in order: (name, filename, content type, bytes); repeated
    names (``timestamp_granularities[]``) each have their own."""
    from email import message_from_bytes
    from email.policy import HTTP

    message = message_from_bytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body, policy=HTTP)
    parts: list[tuple[str, str | None, str, bytes]] = []
    for part in message.iter_parts() if message.is_multipart() else []:
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            parts.append((name, part.get_filename(), part.get_content_type(), payload))
    return parts


async def _finish_batch(state: ServerState, batch: JsonObject) -> None:
    """Run the batch's lines through the script, as the provider would, and end it as the behaviour says."""
    behaviour = state.batch_behaviour
    lines = batch["_lines"]
    if behaviour.outcome == "failed":
        batch["status"] = "failed"
        batch["errors"] = {"object": "list", "data": [{"code": "invalid_request", "message": "scripted failure",
                                                       "line": 1}]}
        return
    answered = lines if behaviour.outcome != "expired" else lines[: behaviour.expire_after]
    output, errors = [], []
    for n, line in enumerate(lines):
        entry: JsonObject = {"id": f"batch_req_{n}", "custom_id": line.get("custom_id"), "error": None}
        if n >= len(answered):
            entry["response"] = None
            entry["error"] = {"code": "batch_expired",
                              "message": "This request could not be executed before the completion window expired."}
            errors.append(entry)
            continue
        body = line.get("body") or {}
        state.batch_bodies.append(body)
        result = state.script(body)
        if inspect.isawaitable(result):
            result = await result
        reply = _as_reply(result)
        if reply.status == 200 and not reply.raw:
            entry["response"] = {"status_code": 200, "request_id": f"req_{n}", "body": _completion(body, reply)}
            output.append(entry)
        else:
            payload = reply.body if not reply.raw else {"error": {"message": str(reply.body)}}
            entry["response"] = {"status_code": reply.status, "request_id": f"req_{n}", "body": payload}
            errors.append(entry)
    for name, entries, rewrite in (("output_file_id", output, behaviour.output),
                                   ("error_file_id", errors, behaviour.errors)):
        if entries:
            file_id = f"file-test-{next(state.ids)}"
            content = "".join(_dumps(e) + "\n" for e in entries).encode()
            state.files[file_id] = ("batch_output", content if rewrite is None else rewrite(content))
            batch[name] = file_id
    batch["request_counts"] = {"total": len(lines), "completed": len(output), "failed": len(errors)}
    batch["status"] = "expired" if behaviour.outcome == "expired" else "completed"


# ---------------------------------------------------------------------------------------------------------
# Running it


class Server:
    """A running scripted server. Change ``script`` or ``latency`` between requests; read ``requests``."""

    def __init__(self, state: ServerState, host: str, port: int):
        self._state = state
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def script(self) -> Script:
        return self._state.script

    @script.setter
    def script(self, value: Script | ScriptResult) -> None:
        self._state.script = value if callable(value) else constant(value)

    @property
    def transcribe(self) -> Script:
        return self._state.transcribe

    @transcribe.setter
    def transcribe(self, value: Script | ScriptResult) -> None:
        self._state.transcribe = value if callable(value) else constant(value)

    @property
    def latency(self) -> float:
        return self._state.latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        self._state.latency = seconds

    @property
    def requests(self) -> list[LoggedRequest]:
        return self._state.requests

    @property
    def request_count(self) -> int:
        return len(self._state.requests)

    @property
    def bodies(self) -> list[JsonObject]:
        return [r.body for r in self._state.requests]

    @property
    def in_flight(self) -> int:
        return self._state.in_flight

    @property
    def max_in_flight(self) -> int:
        """The most requests the server held at once since start (or the last ``reset``)."""
        return self._state.max_in_flight

    def reset(self) -> None:
        self._state.reset()

    @property
    def batch_behaviour(self) -> BatchBehaviour:
        """How batches end (:class:`BatchBehaviour`); change it between batches."""
        return self._state.batch_behaviour

    @property
    def batch_bodies(self) -> list[JsonObject]:
        """Every request a batch ran (online requests are in :attr:`requests`)."""
        return list(self._state.batch_bodies)

    @property
    def batches(self) -> dict[str, JsonObject]:
        """Every batch created, by id, as the API shows it."""
        return {k: _public(v) for k, v in self._state.batches.items()}

    @property
    def uploads(self) -> dict[str, JsonObject]:
        """Every file uploaded, by id, as the files list shows it."""
        return dict(self._state.file_info)

    @property
    def paths(self) -> list[tuple[str, str]]:
        """(method, path as sent, undecoded) of every request received, on any route or none (a 404)."""
        return self._state.recorded_paths()

    @property
    def headers(self) -> list[dict[str, str]]:
        """The headers (names lower-case) of each request of :attr:`paths`, in the same order."""
        return self._state.recorded_headers()


def _bind_ephemeral(host: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    return sock


@contextmanager
def serve(
    script: Script | ScriptResult | None = None,
    *,
    latency: float = 0.0,
    api_key: str | None = None,
    model_ids: list[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    start_timeout: float = 60.0,  # generous: a loaded machine (a CI run beside other work) can stall a thread
    transcribe: Script | ScriptResult | None = None,
) -> Iterator[Server]:
    """Run the server in a background thread (its own event loop) until the block exits.

    ``port=0`` takes a free ephemeral port. ``api_key`` set: requests without that Bearer key get 401.
    ``transcribe`` answers ``/v1/audio/transcriptions`` (default: one segment spanning the uploaded WAV).
    """
    state = ServerState(script, latency, api_key, model_ids or ["test-model"], transcribe)
    sock = _bind_ephemeral(host) if port == 0 else None
    config = uvicorn.Config(
        create_app(state),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        backlog=4096,
        # Hanging requests must not hold up the end of a test.
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock] if sock else None}, name="rescue-openai-test-server", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the test server did not start on {host} within {start_timeout} s")
        time.sleep(0.01)
    bound_port = sock.getsockname()[1] if sock else port
    try:
        yield Server(state, host, bound_port)
    finally:
        state.wake_all()
        server.should_exit = True
        thread.join(timeout=10)
        if sock is not None:
            sock.close()


def main() -> None:
    """``python -m rescue.testing [PORT]``: serve the default script until interrupted."""
    import sys

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    with serve(port=port) as server:
        print(f"serving {server.base_url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
