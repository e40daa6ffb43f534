"""An OpenAI-compatible chat endpoint as a :class:`~rescue.llm.Model`, over aiohttp (subclasses that send
a request of their own, such as transcription's upload, over httpx).

The request is a plain ``POST {base_url}/chat/completions`` with a Bearer key, read as a stream so that two
bounds hold whatever the endpoint does: ``timeout`` bounds the whole request (connect, headers and a body
that trickles in a byte at a time), and ``max_answer_bytes`` bounds what is read (a 50 MB answer is an
error, not 50 MB in memory). The openai SDK's non-streaming calls can bound neither. With ``stream`` the
request asks for server-sent events (``stream_options.include_usage``): the answer and the reasoning are
assembled from the deltas, usage comes from the final chunk, and both bounds hold for the whole stream.

Reasoning (``reasoning_content``, DeepSeek/Qwen/vLLM; ``reasoning``, OpenRouter/Ollama) is never read as the
answer: it travels in ``meta["reasoning"]``. An answer whose budget ran out before any content
(``finish_reason: "length"``) is status ``budget_exhausted``, not an empty answer to retry.

Retrying is the :mod:`rescue.llm._reliable` layer's job, so that every retry is visible, counted and paced
by the shared adaptive limiter. This module only classifies what happened: an answer, a refusal (content
filter), a transient failure worth retrying (:class:`TransientError`), a permanent one (a ``request_error``
answer), or :class:`FatalError` when no request can ever succeed. Every text it hands on has the
configured keys masked (:mod:`rescue.llm._secrets`) before it is cut.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

# JsonObject is open here: request bodies with a provider's extras, a provider's answers before they are checked
from rescue.data.shapes import JsonObject
from rescue.llm import _secrets as secrets
from rescue.llm._limits import DEFAULT_MAX_ANSWER_BYTES
from rescue.llm._providers import Endpoint, thinking_extra, tls_context
from rescue.llm._types import ChatAnswer, ChatRequest, Usage, wire_messages
from rescue.errors import (
    FatalError as FatalError,
    MalformedAnswer as MalformedAnswer,
    TransientError as TransientError,
)

if TYPE_CHECKING:
    import aiohttp
    import httpx

# Provider codes and phrases that mean "the prompt (or answer) was rejected by a content filter".
REFUSAL_MARKERS = (
    "content_filter",
    "content_policy",
    "data_inspection_failed",
    "inappropriate content",
    "content management policy",
    "safety system",
)

# Error texts quoted from an endpoint are cut to this many characters (after masking).
ERROR_CHARS = 500


class KeyedSettings(TypedDict):
    """The generation settings that change an answer, as they enter the cache key (:meth:`GenerationSettings.key_fields`)."""

    temperature: float
    max_tokens: int | None
    json_mode: bool
    extra_body: JsonObject  # the provider's own extras: open by design
    seed: int | None


@dataclass(frozen=True)
class GenerationSettings:
    """Per-model generation settings; all but ``timeout`` and ``max_answer_bytes`` are part of the cache key."""

    temperature: float = 0.0
    max_tokens: int | None = None  # None: the request's own max_tokens
    json_mode: bool = True  # response_format={"type": "json_object"} where the provider supports it
    extra_body: JsonObject = field(default_factory=dict)  # provider extras, e.g. {"enable_thinking": false}
    seed: int | None = None
    timeout: float = 240.0  # seconds for a whole request, body included (the authors' value)
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES  # a larger response body is an error, never stored
    # Server-sent events; None: the preset's default (on where its provider wants thinking requests streamed).
    # Not keyed: a streamed answer is the same answer.
    stream: bool | None = None
    store_reasoning: bool = True  # keep the reasoning text with the answer (its tokens are counted either way)
    # --thinking on|off|low|medium|high: turned into the provider's own extras, which are keyed.
    thinking: str | None = None

    def key_fields(self) -> KeyedSettings:
        """The settings that change an answer, as they enter the cache key."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "json_mode": self.json_mode,
            "extra_body": self.extra_body,
            "seed": self.seed,
        }


_SERVED_MODEL_MAX = 200  # characters of a provider's model name kept; a longer "name" is not one


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds; HTTP dates are ignored)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


def _is_refusal(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in REFUSAL_MARKERS)


def _error_message(status: int, body: bytes) -> str:
    """An endpoint's error body as one readable line: its ``error.message`` when it is OpenAI-shaped."""
    text = body.decode("utf-8", errors="replace")
    if text.lstrip().startswith("data:"):  # an error sent as an event of a stream: its data is the body
        text = "\n".join(line.removeprefix("data:").strip() for line in text.strip().splitlines()
                         if line.startswith("data:") and line.removeprefix("data:").strip() != "[DONE]")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text.strip()
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            parts = [str(error.get("message") or "")]
            if error.get("code"):
                parts.append(f"(code {error['code']})")
            return " ".join(p for p in parts if p)
        if isinstance(error, str):
            return error
    return text.strip()


def _count(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise MalformedAnswer(f"{where} is {value!r}, not a token count")
    return int(value)


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    if not isinstance(raw, dict):
        raise MalformedAnswer(f"usage is a {type(raw).__name__}, not an object")
    details = raw.get("prompt_tokens_details")
    if details is None:
        details = {}
    if not isinstance(details, dict):
        raise MalformedAnswer(f"usage.prompt_tokens_details is a {type(details).__name__}, not an object")
    # OpenAI reports cached prompt tokens in the details; DeepSeek as prompt_cache_hit_tokens.
    cached = details.get("cached_tokens")
    if cached is None:
        cached = raw.get("prompt_cache_hit_tokens")
    completion = raw.get("completion_tokens_details")
    if completion is None:
        completion = {}
    if not isinstance(completion, dict):
        raise MalformedAnswer(f"usage.completion_tokens_details is a {type(completion).__name__}, not an object")
    output = _count(raw.get("completion_tokens"), "usage.completion_tokens")
    reasoning = _count(completion.get("reasoning_tokens"), "usage.completion_tokens_details.reasoning_tokens")
    return Usage(
        input_tokens=_count(raw.get("prompt_tokens"), "usage.prompt_tokens"),
        # completion_tokens includes the reasoning tokens (OpenAI's convention, followed by DeepSeek, Qwen,
        # vLLM); an endpoint that counts them apart would otherwise have its thinking priced at nothing.
        output_tokens=max(output, reasoning),
        cached_input_tokens=_count(cached, "usage cached tokens"),
        image_tokens=_count(details.get("image_tokens"), "usage.prompt_tokens_details.image_tokens"),
        video_tokens=_count(details.get("video_tokens"), "usage.prompt_tokens_details.video_tokens"),
        reasoning_tokens=reasoning,
    )


def _read_usage(raw: Any) -> tuple[Usage, str | None]:
    """The usage of a kept answer, or (unknown, why) when its usage block cannot be read: the answer is good,
    only the bookkeeping is not, so it is counted as unknown and never paid for again."""
    try:
        return _usage(raw), None
    except MalformedAnswer as exc:
        return Usage(unknown=1), secrets.clip(str(exc), ERROR_CHARS)


def _content(message: Any) -> str | None:
    if not isinstance(message, dict):
        raise MalformedAnswer(f"choices[0].message is a {type(message).__name__}, not an object")
    text = message.get("content")
    if text is None or isinstance(text, str):
        return text
    if isinstance(text, list):  # content parts
        if not all(isinstance(part, dict) for part in text):
            raise MalformedAnswer("choices[0].message.content holds parts that are not objects")
        return "".join(part["text"] for part in text if isinstance(part.get("text"), str))
    raise MalformedAnswer(f"choices[0].message.content is a {type(text).__name__}, not text")


REASONING_FIELDS = ("reasoning_content", "reasoning")  # DeepSeek, Qwen, vLLM; OpenRouter, Ollama, Groq


def _reasoning(message: JsonObject, where: str) -> str:
    """The reasoning text of a message or delta ("" when none), from whichever field the provider uses."""
    for name in REASONING_FIELDS:
        value = message.get(name)
        if value is None:
            continue
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and isinstance(value.get("content"), str):  # some gateways nest it
            return str(value["content"])
        raise MalformedAnswer(f"{where}.{name} is a {type(value).__name__}, not text")
    return ""


class _StreamReader:
    """Server-sent events of a streamed chat completion, assembled as they arrive, read as the answer is read
    without streaming: choice 0 only, up to its ``finish_reason``.

    Lines end in LF, CRLF or CR and may span network chunks. An event is the ``data:`` lines up to a blank line,
    joined by newlines (the SSE rule: one JSON chunk may be spread over several lines); ``data: [DONE]`` ends the
    stream; comments (``: keep-alive``), other fields (``event:``, ``id:``, ``retry:``) and events without data
    are skipped. Deltas of another ``choices[].index`` (``n`` > 1, or a proxy that fans out) are not this answer,
    nor is content of choice 0 sent after its ``finish_reason``; a later usage chunk is still read. A body that
    holds no event at all is read as what it is: a JSON error keeps the provider's message."""

    def __init__(self) -> None:
        self.pending: list[bytes] = []
        self.data: list[bytes] = []  # the data lines of the event being read
        self.stray: list[bytes] = []  # lines outside any SSE field, while no event has come (a JSON error body)
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.finish = ""
        self.usage: Any = None
        self.done = False
        self.chunks = 0

    def feed(self, data: bytes) -> None:
        if self.done:
            return
        if b"\n" not in data and b"\r" not in data:
            self.pending.append(data)  # a list: an event of megabytes in many chunks is joined once
            return
        text = b"".join([*self.pending, data]) if self.pending else data
        # A CR at the end may be the first half of a CRLF split across two network chunks.
        held = text.endswith(b"\r")
        lines = (text[:-1] if held else text).replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        tail = lines.pop()  # an unfinished line waits for the next chunk
        self.pending = [tail + b"\r"] if held else [tail] if tail else []
        for line in lines:
            if self.done:
                return
            self._line(line)

    def close(self) -> None:
        """The end of the body: a last line without its newline and a last event without its blank line count."""
        last = b"".join(self.pending).rstrip(b"\r")
        self.pending = []
        if not self.done:
            if last:
                self._line(last)
            self._dispatch()
        if not self.chunks and not self.done and self.stray:
            self._not_a_stream(b"\n".join(self.stray))

    def _line(self, line: bytes) -> None:
        if not line:
            self._dispatch()
        elif line.startswith(b"data:"):
            value = line[5:]
            self.data.append(value[1:] if value.startswith(b" ") else value)
        elif not self.chunks and not line.startswith((b":", b"event:", b"id:", b"retry:")):
            self.stray.append(line)

    def _dispatch(self) -> None:
        """The event whose data lines were read: joined, as SSE says; lines that are each a whole chunk (a
        server that ends events with one newline, not two) are read one by one."""
        data, self.data = self.data, []
        if not data:
            return
        joined = b"\n".join(data)
        if len(data) > 1 and not _is_json(joined) and all(_is_json(part) for part in data):
            for part in data:
                if not self.done:
                    self._payload(part)
            return
        self._payload(joined)

    def _payload(self, payload: bytes) -> None:
        chunk = self._chunk(payload)
        if chunk is None:
            return
        if chunk.get("error") is not None:  # an error sent in the stream, after a 200
            _stream_error(chunk["error"])
        choices = chunk.get("choices")
        if choices is None:
            choices = []
        if not isinstance(choices, list):
            raise MalformedAnswer("a stream chunk's choices is not a list")
        if chunk.get("usage") is not None:
            self.usage = chunk["usage"]
        for position, choice in enumerate(choices):
            if _choice_index(choice, position) == 0:
                self._choice(choice)

    def _chunk(self, payload: bytes) -> JsonObject | None:
        """The JSON object of one event; None for an empty one or ``[DONE]``."""
        payload = payload.strip()
        if payload == b"[DONE]":
            self.done = True
            return None
        if not payload:
            return None
        try:
            chunk = json.loads(payload)
        except (ValueError, RecursionError):
            text = payload.decode("utf-8", errors="replace")
            raise TransientError("bad_response", f"unreadable stream chunk: {secrets.clip(text, 200)!r}") from None
        self.chunks += 1
        if not isinstance(chunk, dict):
            raise MalformedAnswer(f"a stream chunk is a JSON {type(chunk).__name__}, not an object")
        return chunk

    def _choice(self, choice: JsonObject) -> None:
        """The text, reasoning and finish reason of a chunk's choice 0, until it has finished."""
        delta = choice.get("delta")
        if delta is None:
            delta = choice.get("message") or {}
        if not isinstance(delta, dict):
            raise MalformedAnswer(f"a stream chunk's delta is a {type(delta).__name__}, not an object")
        piece = delta.get("content")
        if piece is not None and not isinstance(piece, str):
            raise MalformedAnswer(f"a stream chunk's delta.content is a {type(piece).__name__}, not text")
        reasoning = _reasoning(delta, "delta")
        finish = choice.get("finish_reason")
        if finish is not None and not isinstance(finish, str):
            raise MalformedAnswer(f"finish_reason is a {type(finish).__name__}, not text")
        if self.finish:  # the answer ended at its finish_reason: what follows is not part of it
            return
        if piece:
            self.content.append(piece)
        if reasoning:
            self.reasoning.append(reasoning)
        if finish:
            self.finish = finish

    def _not_a_stream(self, body: bytes) -> None:
        """A body sent with the stream's content type that holds no event: a JSON error (its message kept), a
        plain completion, or something else, which is an unreadable answer quoted in the error."""
        text = body.decode("utf-8", errors="replace")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and data.get("error") is not None:
            _stream_error(data["error"])
        if isinstance(data, dict) and isinstance(data.get("choices"), list):
            raise _PlainCompletion(data)
        raise TransientError("bad_response", f"the stream holds no event: {secrets.clip(text.strip(), 200)!r}")


def _is_json(part: bytes) -> bool:
    try:
        json.loads(part)
    except (ValueError, RecursionError):
        return part.strip() == b"[DONE]"
    return True


def _choice_index(choice: Any, position: int) -> int:
    """Which answer a streamed choice belongs to: its ``index``, or its place in the list when it has none."""
    if not isinstance(choice, dict):
        raise MalformedAnswer(f"a stream chunk's choices[{position}] is a {type(choice).__name__}, not an object")
    index = choice.get("index")
    if index is None:
        return position
    if isinstance(index, bool) or not isinstance(index, int):
        raise MalformedAnswer(f"a stream chunk's choices[{position}].index is {index!r}, not a number")
    return index


class _PlainCompletion(Exception):  # noqa: N818 - a signal, not an error
    """A whole chat completion sent with the stream's content type: read as a completion."""

    def __init__(self, data: JsonObject):
        super().__init__("a plain completion")
        self.data = data


def _stream_error(error: Any) -> None:
    """An error sent inside a stream: a refusal when it says so, else a server error to retry."""
    message = str(error.get("message") or error) if isinstance(error, dict) else str(error)
    message = secrets.clip(message, ERROR_CHARS)
    if _is_refusal(message) or (isinstance(error, dict) and _is_refusal(str(error.get("code") or ""))):
        raise _StreamRefusal(message)
    raise TransientError("server_error", f"error in the stream: {message}")


class _StreamRefusal(Exception):
    """A content-filter error sent inside a stream."""


# Response headers the chat client reads: a larger header, or more of them, is an endpoint to fix, not a fault to
# retry (real providers send 20-40 headers of well under 1 KiB).
MAX_HEADER_BYTES = 64 * 1024
MAX_HEADERS = 256
_HEADER_LIMIT_MARKERS = re.compile(r"too long|too many headers|got more than", re.IGNORECASE)


def _chat_url(base_url: str) -> str:
    """``{base_url}/chat/completions``, the base's query (Azure's api-version) kept after the path; user info is
    left out, as the key goes in the Authorization header (an aiohttp request cannot carry both)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base_url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/") + "/chat/completions", parts.query, ""))


def _encode(body: JsonObject) -> bytes:
    """The request body as JSON bytes (compact, as httpx sent it); a lone surrogate in a prompt goes out escaped."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode("ascii")


def _env_proxy(url: str) -> dict[str, Any]:
    """The proxy the environment names for ``url`` (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, any
    case), as the arguments of an aiohttp request: ``proxy``, and ``proxy_headers`` carrying the credentials of a
    ``http://user:password@host:port`` proxy URL (taken out of the URL); none: empty. Read with the standard
    library's ``getproxies`` and ``proxy_bypass``, as requests and httpx read them."""
    import base64
    from urllib.parse import unquote, urlsplit
    from urllib.request import getproxies, proxy_bypass

    target = urlsplit(url)
    proxies = getproxies()
    proxy = proxies.get(target.scheme) or proxies.get("all")
    host_port = f"{target.hostname}:{target.port}" if target.port else str(target.hostname)
    if not proxy or (target.hostname and proxy_bypass(host_port)):
        return {}
    if "://" not in proxy:  # "127.0.0.1:3128", as curl takes it
        proxy = f"http://{proxy}"
    parts = urlsplit(proxy)
    if parts.username is None:
        return {"proxy": proxy}
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    secret = base64.b64encode(f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()).decode()
    return {"proxy": f"{parts.scheme}://{netloc}{parts.path}", "proxy_headers": {"Proxy-Authorization": f"Basic {secret}"}}


def _is_aiohttp_error(exc: Exception) -> bool:
    import aiohttp

    return isinstance(exc, aiohttp.ClientError)


class OpenAIModel:
    """One model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    max_concurrency: int | None = None

    def __init__(self, endpoint: Endpoint, settings: GenerationSettings | None = None, *, name: str | None = None):
        self.endpoint = endpoint
        self.name = name or endpoint.spec
        secrets.register(endpoint.api_key)
        base = GenerationSettings() if settings is None else settings
        # Provider extras (a preset's defaults) under --thinking's, under the model's own settings.
        thinking = {} if base.thinking is None else thinking_extra(endpoint, base.thinking)
        extra = {**endpoint.extra_body, **thinking, **base.extra_body}
        json_mode = base.json_mode and endpoint.json_mode
        stream = base.stream
        if stream is None:
            stream = bool(endpoint.stream_when_thinking) and (
                extra.get("enable_thinking") is True or base.thinking not in (None, "off"))
        # A provider that takes no seed is sent none, and none enters the cache key (what is not sent is no setting).
        seed = base.seed if endpoint.seed else None
        self.settings = dataclasses.replace(base, json_mode=json_mode, extra_body=extra, stream=stream, seed=seed)
        # httpx clients of one connection each, free to take a request; every one made, to close them.
        self._free_clients: list[httpx.AsyncClient] = []
        self._clients: set[httpx.AsyncClient] = set()
        # Set when the endpoint rejects response_format once: later requests go without it.
        self._json_mode_rejected = False
        self._http: aiohttp.ClientSession | None = None  # the aiohttp session of chat requests
        self._http_loop: asyncio.AbstractEventLoop | None = None  # the event loop it belongs to
        self._proxy: dict[str, Any] = {}  # proxy and proxy_headers from the environment (HTTPS_PROXY, NO_PROXY ...)
        self._request_headers: dict[str, str] = {}  # each chat request's: the key (never the session's: see _session)
        self._url = _chat_url(endpoint.base_url)

    @property
    def takes_seed(self) -> bool:
        """Whether this endpoint's requests carry a seed (its provider takes one)."""
        return self.endpoint.seed

    # The identity the cache keys on: where the model lives, not how this process reaches it.
    @property
    def cache_identity(self) -> str:
        # Keys in the URL (user info, query) are secrets: the identity is stored and shown, so it goes without them.
        """The endpoint's URL without credentials: where answers come from, as the cache key sees it."""
        return secrets.redact_url(self.endpoint.base_url) or self.endpoint.base_url

    def cache_settings(self) -> JsonObject:
        """The model id and generation settings, as the cache key sees them."""
        return {"model": self.endpoint.model_id, **self.settings.key_fields()}

    def _take_client(self) -> httpx.AsyncClient:
        """A client for one request, its own until :meth:`_give_back`: one connection per request in flight.

        One shared pool of N connections re-checks every pooled connection, polling each idle one, each time
        it hands a request a connection or takes one back. When answers arrive faster than a busy machine
        lets them be processed, most connections sit idle in that bookkeeping and its cost grows with the
        backlog; a pool of one connection keeps it constant. The limiter still decides how many are in use."""
        if self._free_clients:
            return self._free_clients.pop()
        import httpx

        client = httpx.AsyncClient(
            base_url=self.endpoint.base_url + "/",
            headers={"Authorization": f"Bearer {self.endpoint.api_key}", "Accept": "application/json"},
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            timeout=self.settings.timeout,
            verify=tls_context(),
        )
        self._clients.add(client)
        return client

    def _give_back(self, client: httpx.AsyncClient) -> None:
        if client in self._clients:  # not closed by aclose() meanwhile
            self._free_clients.append(client)

    async def aclose(self) -> None:
        """Close every HTTP client this model opened."""
        clients, self._clients, self._free_clients = self._clients, set(), []
        for client in clients:
            await client.aclose()
        session, self._http = self._http, None
        if session is not None:
            await session.close()

    def _body(self, request: ChatRequest) -> JsonObject:
        overrides = request.overrides()
        body: JsonObject = {
            "model": self.endpoint.model_id,
            "messages": wire_messages(request.messages),
            "temperature": overrides.get("temperature", self.settings.temperature),
            "max_tokens": self.settings.max_tokens or request.max_tokens,
        }
        if request.budget_factor is not None:
            body["max_tokens"] = math.ceil(body["max_tokens"] * request.budget_factor)
        seed = overrides.get("seed", self.settings.seed)
        if seed is not None and self.takes_seed:
            body["seed"] = seed
        if overrides.get("json_mode", self.settings.json_mode) and not self._json_mode_rejected:
            body["response_format"] = {"type": "json_object"}
        # Provider extras go to the top level of the body, as the SDK's extra_body does.
        body.update(self.settings.extra_body)
        if self.settings.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def batch_body(self, request: ChatRequest) -> JsonObject:
        """The body of ``request`` as a line of a batch file: the online body, never streamed."""
        body = self._body(request)
        body.pop("stream", None)
        body.pop("stream_options", None)
        return body

    async def complete(self, request: ChatRequest) -> ChatAnswer:
        """Send one chat completion request; an answer or a failure, never an exception for an endpoint's error."""
        if type(self)._complete_with is not OpenAIModel._complete_with:
            # A subclass that sends a request of its own (transcription's multipart upload) does so over httpx.
            client = self._take_client()
            try:
                return await self._complete_with(client, request)
            finally:
                self._give_back(client)
        return await self._chat(request)

    async def _complete_with(self, client: httpx.AsyncClient, request: ChatRequest) -> ChatAnswer:
        """One request over ``client`` (an httpx client): what subclasses that send their own request override."""
        return await self._chat(request)

    def _session(self) -> aiohttp.ClientSession:
        """The aiohttp session every chat request of this model goes through (made on first use, in the running
        event loop): of the HTTP stacks measured on rescue's own requests it costs the least CPU per request
        (benchmarks/README.md, (a)). Its connector has no limit of its own: the
        limiter decides how many requests are in flight, and idle connections are kept for the next."""
        loop = asyncio.get_running_loop()
        if self._http is None or self._http.closed or self._http_loop is not loop:
            # A session serves the loop it was made in: a model asked again from another asyncio.run gets one anew.
            import aiohttp

            self._http_loop = loop

            connector = aiohttp.TCPConnector(limit=0, ssl=tls_context(), keepalive_timeout=30)
            # The environment's proxy is looked up once here: with trust_env aiohttp looks it up, and reads
            # ~/.netrc, in a worker thread for every request (two thread hops a request, and a netrc entry for
            # the host would clash with the Bearer header).
            self._proxy = _env_proxy(self._url)
            self._request_headers = {"Authorization": f"Bearer {self.endpoint.api_key}"}
            if self._url.startswith("http://"):  # the request itself goes to the proxy: it carries the proxy's
                # credentials (aiohttp sends proxy_headers only in an https tunnel's CONNECT)
                self._request_headers.update(self._proxy.get("proxy_headers", {}))
            self._http = aiohttp.ClientSession(
                connector=connector, trust_env=False, auto_decompress=True,
                timeout=aiohttp.ClientTimeout(total=None),  # the whole request is bounded by asyncio.timeout
                # The key is no default header of the session: aiohttp copies the session's headers to a proxy,
                # its Authorization as Proxy-Authorization (the key would reach every proxy). Each request has it.
                headers={"Accept": "application/json", "Content-Type": "application/json"},
                max_line_size=MAX_HEADER_BYTES, max_field_size=MAX_HEADER_BYTES, max_headers=MAX_HEADERS)
        return self._http

    async def _chat(self, request: ChatRequest) -> ChatAnswer:
        import aiohttp

        body = self._body(request)
        try:
            async with asyncio.timeout(self.settings.timeout):  # the whole stream, not each chunk
                # No redirects, as before: a provider answering 3xx to a POST is an error to see, not to follow.
                async with self._session().post(self._url, data=_encode(body), allow_redirects=False,
                                                headers=self._request_headers, **self._proxy) as response:
                    status, headers = response.status, response.headers
                    read = await self._read(response, bool(body.get("stream")))
        except (TimeoutError, aiohttp.ClientError) as exc:
            return self._transport_failure(exc)
        if isinstance(read, ChatAnswer):
            return read
        if isinstance(read, _StreamReader):
            return self._streamed(read)
        return self._body_answer(status, read, headers)

    async def _read(self, response: aiohttp.ClientResponse, stream: bool) -> ChatAnswer | _StreamReader | bytes:
        """The response read within ``max_answer_bytes``: a stream's events, a body's bytes, or the answer that
        says why it was not read to the end (too large, malformed, refused in the stream)."""
        limit = self.settings.max_answer_bytes
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return self._too_large(int(declared))
        events: _StreamReader | None = None
        if response.status == 200 and stream and "text/event-stream" in response.headers.get("content-type", ""):
            events = _StreamReader()
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > limit:
                return self._too_large(size, more=True)
            if events is None:
                chunks.append(chunk)
                continue
            try:
                events.feed(chunk)
            except MalformedAnswer as exc:
                return self._malformed(exc)
            except _StreamRefusal as exc:
                return ChatAnswer(None, "refused", f"refused (in the stream): {exc}")
            # Read on to the body's end even after [DONE]: a body left unread closes the connection
            # instead of returning it to the pool (a new TCP connection for every request).
        return events if events is not None else b"".join(chunks)

    def _body_answer(self, status: int, raw: bytes, headers: Mapping[str, str]) -> ChatAnswer:
        """The answer a whole (not streamed) body gives: an error status, or the completion it holds."""
        if status != 200:
            return self._status_error(status, raw, headers)
        try:
            data = json.loads(raw)
        except RecursionError:  # nested deeper than any completion: valid JSON, perhaps, but no answer
            return ChatAnswer(None, "request_error", "malformed_answer: the body is nested too deeply to read",
                              meta={"error_class": "malformed_answer"})
        except ValueError:  # a 200 whose body was cut off or is not JSON
            text = raw.decode("utf-8", errors="replace")
            raise TransientError("bad_response", f"unreadable body: {secrets.clip(text, 200)!r}") from None
        try:
            return self._answer(data)
        except MalformedAnswer as exc:
            return self._malformed(exc)

    def _transport_failure(self, exc: Exception) -> ChatAnswer:
        """What a request that raised a timeout or an httpx or aiohttp error means: a :class:`TransientError` to retry, or
        an answer that says why no retry helps. Shared by every request this client makes (chat, transcription)."""
        import httpx

        if _is_aiohttp_error(exc):
            return self._aiohttp_failure(exc)
        try:
            raise exc
        except TimeoutError:
            raise TransientError("timeout", f"no complete answer within {self.settings.timeout:g} s") from None
        except httpx.TimeoutException:
            raise TransientError("timeout", f"no complete answer within {self.settings.timeout:g} s") from None
        except httpx.RemoteProtocolError as exc:
            if "Receive buffer too long" not in str(exc):
                raise TransientError("connection", secrets.clip(f"RemoteProtocolError: {exc} ({self.cache_identity})",
                                                                ERROR_CHARS)) from None
            # The same headers come back on every retry: an error to fix at the endpoint, not a fault to wait out.
            return ChatAnswer(None, "request_error",
                              "response_headers_too_large: the endpoint's response headers are larger than the HTTP "
                              "client accepts (httpx/h11 reads at most 100 KiB of headers: 'Receive buffer too long'); "
                              "not retried", meta={"error_class": "response_headers_too_large"})
        except httpx.HTTPError as exc:
            detail = str(exc) or type(exc).__name__
            raise TransientError("connection", secrets.clip(f"{type(exc).__name__}: {detail} ({self.cache_identity})",
                                                            ERROR_CHARS)) from None

    def _aiohttp_failure(self, exc: Exception) -> ChatAnswer:
        """What an aiohttp error means: headers it will not read are an answer (the same on every retry), every
        other failure to connect, send or read is a transient fault."""
        import aiohttp

        if isinstance(exc, aiohttp.ClientResponseError) and _HEADER_LIMIT_MARKERS.search(str(exc.message)):
            return ChatAnswer(None, "request_error",
                              f"response_headers_too_large: the endpoint's response headers are larger than the HTTP "
                              f"client accepts (at most {MAX_HEADERS} headers of {MAX_HEADER_BYTES // 1024} KiB "
                              f"each: {secrets.clip(str(exc.message), 120)}); not retried",
                              meta={"error_class": "response_headers_too_large"})
        if isinstance(exc, aiohttp.ServerTimeoutError):
            raise TransientError("timeout", f"no complete answer within {self.settings.timeout:g} s") from None
        detail = str(exc) or type(exc).__name__
        raise TransientError("connection", secrets.clip(f"{type(exc).__name__}: {detail} ({self.cache_identity})",
                                                        ERROR_CHARS)) from None

    @staticmethod
    def _malformed(exc: MalformedAnswer) -> ChatAnswer:
        return ChatAnswer(None, "request_error", secrets.clip(f"malformed_answer: {exc}", ERROR_CHARS),
                          meta={"error_class": "malformed_answer"})

    def _streamed(self, events: _StreamReader) -> ChatAnswer:
        try:
            events.close()
        except MalformedAnswer as exc:
            return self._malformed(exc)
        except _StreamRefusal as exc:
            return ChatAnswer(None, "refused", f"refused (in the stream): {exc}")
        except _PlainCompletion as plain:
            try:
                return self._answer(plain.data)
            except MalformedAnswer as exc:
                return self._malformed(exc)
        if not events.done and not events.finish:
            # The connection closed cleanly, but the answer never said it was finished: a cut stream.
            raise TransientError("connection", f"the stream ended before the answer did ({events.chunks} chunks, "
                                 f"no finish_reason, no [DONE]) ({self.endpoint.base_url})")
        usage, unreadable = _read_usage(events.usage)
        return self._outcome("".join(events.content), "".join(events.reasoning), events.finish, usage, unreadable)

    def _too_large(self, size: int, *, more: bool = False) -> ChatAnswer:
        limit = self.settings.max_answer_bytes
        amount = f"over {size:,}" if more else f"{size:,}"
        return ChatAnswer(None, "request_error",
                          f"answer_too_large: the answer is {amount} bytes, above the limit of {limit:,} "
                          f"(--max-answer-bytes); not stored", meta={"error_class": "answer_too_large"})

    def _status_error(self, status: int, body: bytes, headers: Mapping[str, str]) -> ChatAnswer:
        message = secrets.clip(_error_message(status, body), ERROR_CHARS)
        wait = retry_after_seconds(headers)
        if status == 429:
            raise TransientError("rate_limit", f"HTTP 429: {message}", wait)
        if status >= 500 or status in (408, 409):
            raise TransientError("server_error", f"HTTP {status}: {message}", wait)
        if _is_refusal(message):
            return ChatAnswer(None, "refused", f"refused (HTTP {status}): {message}")
        if status == 400 and "response_format" in message and not self._json_mode_rejected:
            # An endpoint without JSON mode: ask again without it (the prompt already demands JSON).
            self._json_mode_rejected = True
            raise TransientError("bad_request", "HTTP 400: response_format not supported, retrying without it")
        if status in (401, 403, 404):
            raise FatalError(f"http_{status}", f"HTTP {status}: {message}")
        return ChatAnswer(None, "request_error", f"HTTP {status}: {message}")

    def _answer(self, data: Any) -> ChatAnswer:
        if not isinstance(data, dict):
            raise MalformedAnswer(f"the body is a JSON {type(data).__name__}, not an object")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise MalformedAnswer("the completion has no choices")
        choice = choices[0]
        if not isinstance(choice, dict):
            raise MalformedAnswer(f"choices[0] is a {type(choice).__name__}, not an object")
        message = choice.get("message")
        text = _content(message)
        reasoning = _reasoning(message if isinstance(message, dict) else {}, "choices[0].message")
        finish = choice.get("finish_reason") or ""
        if not isinstance(finish, str):
            raise MalformedAnswer(f"finish_reason is a {type(finish).__name__}, not text")
        usage, unreadable = _read_usage(data.get("usage"))
        answer = self._outcome(text, reasoning, finish, usage, unreadable)
        served = data.get("model")
        if isinstance(served, str) and served and len(served) <= _SERVED_MODEL_MAX:
            # The name the provider answered as (an alias resolves to a dated snapshot): a submission shows it.
            answer.meta["served_model"] = secrets.scrub(served)
        return answer

    def _outcome(self, text: str | None, reasoning: str, finish: str, usage: Usage,
                 usage_unknown: str | None = None) -> ChatAnswer:
        """What a complete answer (streamed or not) means: an answer, a refusal, a spent budget, or nothing."""
        text = secrets.scrub(text) if text else text
        meta: JsonObject = {"finish_reason": finish}
        if usage_unknown is not None:
            meta["usage_unknown"] = usage_unknown
        if reasoning and self.settings.store_reasoning:
            meta["reasoning"] = secrets.scrub(reasoning)
        if finish == "content_filter":
            return ChatAnswer(text, "refused", "refused: finish_reason=content_filter", usage, meta)
        if not text or not text.strip():
            if finish == "length":
                thought = f", {usage.reasoning_tokens:,} of them reasoning" if usage.reasoning_tokens else \
                    (" thinking" if reasoning else "")
                return ChatAnswer(None, "budget_exhausted",
                                  f"budget_exhausted: the answer budget ran out ({usage.output_tokens:,} output "
                                  f"tokens{thought}) before any answer (finish_reason=length)", usage,
                                  {**meta, "error_class": "budget_exhausted"})
            if reasoning:
                # The model stopped on its own after thinking only: asking again at temperature 0 pays for the
                # same thoughts, so it is a failure of this request, not a transient fault.
                return ChatAnswer(None, "request_error",
                                  f"thinking_only: the model reasoned but gave no answer "
                                  f"(finish_reason={finish or 'none'})", usage, {**meta, "error_class": "thinking_only"})
            # Nothing to parse is no answer: asked again like any transient fault, never cached.
            raise TransientError("empty_answer", f"the answer has no content (finish_reason={finish or 'none'})")
        return ChatAnswer(text, "ok", "", usage, meta)
