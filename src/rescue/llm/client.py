"""An OpenAI-compatible chat endpoint as a :class:`~rescue.llm.types.Model`, over httpx.

The request is a plain ``POST {base_url}/chat/completions`` with a Bearer key, read as a stream so that two
bounds hold whatever the endpoint does: ``timeout`` bounds the whole request (connect, headers and a body
that trickles in a byte at a time), and ``max_answer_bytes`` bounds what is read (a 50 MB answer is an
error, not 50 MB in memory). The openai SDK's non-streaming calls can bound neither.

Retrying is the :mod:`rescue.llm.reliable` layer's job, so that every retry is visible, counted and paced
by the shared adaptive limiter. This module only classifies what happened: an answer, a refusal (content
filter), a transient failure worth retrying (:class:`TransientError`), a permanent one (a ``request_error``
answer), or :class:`FatalError` when no request can ever succeed. Every text it hands on has the
configured keys masked (:mod:`rescue.llm.secrets`) before it is cut.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass, field
from typing import Any

from rescue.llm import secrets
from rescue.llm.providers import Endpoint
from rescue.llm.types import ChatAnswer, ChatRequest, Usage, wire_messages

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
DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class GenerationSettings:
    """Per-model generation settings; all but ``timeout`` and ``max_answer_bytes`` are part of the cache key."""

    temperature: float = 0.0
    max_tokens: int | None = None  # None: the request's own max_tokens
    json_mode: bool = True  # response_format={"type": "json_object"} where the provider supports it
    extra_body: dict[str, Any] = field(default_factory=dict)  # provider extras, e.g. {"enable_thinking": false}
    seed: int | None = None
    timeout: float = 240.0  # seconds for a whole request, body included (the authors' value)
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES  # a larger response body is an error, never stored

    def key_fields(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "json_mode": self.json_mode,
            "extra_body": self.extra_body,
            "seed": self.seed,
        }


class TransientError(Exception):
    """A failure that may go away: 429, 5xx, a timeout, a dropped connection, an unreadable or empty answer."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind  # rate_limit | server_error | timeout | connection | bad_response | empty_answer
        self.retry_after = retry_after


class FatalError(Exception):
    """No request to this endpoint can succeed (bad key, unknown model): stop asking it."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class MalformedAnswer(Exception):
    """A 200 whose JSON is not a chat completion (message a string, content a number, usage "many")."""


def retry_after_seconds(headers: Any) -> float | None:
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
    return Usage(
        input_tokens=_count(raw.get("prompt_tokens"), "usage.prompt_tokens"),
        output_tokens=_count(raw.get("completion_tokens"), "usage.completion_tokens"),
        cached_input_tokens=_count(cached, "usage cached tokens"),
        image_tokens=_count(details.get("image_tokens"), "usage.prompt_tokens_details.image_tokens"),
        video_tokens=_count(details.get("video_tokens"), "usage.prompt_tokens_details.video_tokens"),
    )


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


class OpenAIModel:
    """One model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    max_concurrency: int | None = None

    def __init__(self, endpoint: Endpoint, settings: GenerationSettings | None = None, *, name: str | None = None):
        self.endpoint = endpoint
        self.name = name or endpoint.spec
        secrets.register(endpoint.api_key)
        base = GenerationSettings() if settings is None else settings
        # Provider extras (a preset's defaults) under the model's own settings.
        extra = {**endpoint.extra_body, **base.extra_body}
        json_mode = base.json_mode and endpoint.json_mode
        self.settings = GenerationSettings(base.temperature, base.max_tokens, json_mode, extra, base.seed,
                                           base.timeout, base.max_answer_bytes)
        # httpx clients of one connection each, free to take a request; every one made, to close them.
        self._free_clients: list[Any] = []
        self._clients: set[Any] = set()
        self._ssl_context: Any = None
        # Set when the endpoint rejects response_format once: later requests go without it.
        self._json_mode_rejected = False

    # The identity the cache keys on: where the model lives, not how this process reaches it.
    @property
    def cache_identity(self) -> str:
        # Keys in the URL (user info, query) are secrets: the identity is stored and shown, so it goes without them.
        return secrets.redact_url(self.endpoint.base_url) or self.endpoint.base_url

    def cache_settings(self) -> dict[str, Any]:
        return {"model": self.endpoint.model_id, **self.settings.key_fields()}

    def _take_client(self) -> Any:
        """A client for one request, its own until :meth:`_give_back`: one connection per request in flight.

        One shared pool of N connections re-checks every pooled connection, polling each idle one, each time
        it hands a request a connection or takes one back. When answers arrive faster than a busy machine
        lets them be processed, most connections sit idle in that bookkeeping and its cost grows with the
        backlog; a pool of one connection keeps it constant. The limiter still decides how many are in use."""
        if self._free_clients:
            return self._free_clients.pop()
        import httpx

        if self._ssl_context is None:
            # What each client would build for itself (certifi, or SSL_CERT_FILE / SSL_CERT_DIR), made once:
            # loading the certificates took 20 ms a client.
            self._ssl_context = httpx.create_ssl_context()
        client = httpx.AsyncClient(
            base_url=self.endpoint.base_url + "/",
            headers={"Authorization": f"Bearer {self.endpoint.api_key}", "Accept": "application/json"},
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            timeout=self.settings.timeout,
            verify=self._ssl_context,
        )
        self._clients.add(client)
        return client

    def _give_back(self, client: Any) -> None:
        if client in self._clients:  # not closed by aclose() meanwhile
            self._free_clients.append(client)

    async def aclose(self) -> None:
        clients, self._clients, self._free_clients = self._clients, set(), []
        for client in clients:
            await client.aclose()

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        overrides = request.overrides()
        body: dict[str, Any] = {
            "model": self.endpoint.model_id,
            "messages": wire_messages(request.messages),
            "temperature": overrides.get("temperature", self.settings.temperature),
            "max_tokens": self.settings.max_tokens or request.max_tokens,
        }
        seed = overrides.get("seed", self.settings.seed)
        if seed is not None:
            body["seed"] = seed
        if overrides.get("json_mode", self.settings.json_mode) and not self._json_mode_rejected:
            body["response_format"] = {"type": "json_object"}
        # Provider extras go to the top level of the body, as the SDK's extra_body does.
        body.update(self.settings.extra_body)
        return body

    async def complete(self, request: ChatRequest) -> ChatAnswer:
        client = self._take_client()
        try:
            return await self._complete_with(client, request)
        finally:
            self._give_back(client)

    async def _complete_with(self, client: Any, request: ChatRequest) -> ChatAnswer:
        import httpx

        limit = self.settings.max_answer_bytes
        try:
            async with asyncio.timeout(self.settings.timeout):
                async with client.stream("POST", "chat/completions", json=self._body(request)) as response:
                    declared = response.headers.get("content-length")
                    if declared is not None and declared.isdigit() and int(declared) > limit:
                        return self._too_large(int(declared))
                    chunks: list[bytes] = []
                    size = 0
                    async for chunk in response.aiter_bytes():
                        size += len(chunk)
                        if size > limit:
                            return self._too_large(size, more=True)
                        chunks.append(chunk)
                    status = response.status_code
                    headers = response.headers
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
        body = b"".join(chunks)
        if status != 200:
            return self._status_error(status, body, headers)
        try:
            data = json.loads(body)
        except RecursionError:  # nested deeper than any completion: valid JSON, perhaps, but no answer
            return ChatAnswer(None, "request_error", "malformed_answer: the body is nested too deeply to read",
                              meta={"error_class": "malformed_answer"})
        except ValueError:  # a 200 whose body was cut off or is not JSON
            text = body.decode("utf-8", errors="replace")
            raise TransientError("bad_response", f"unreadable body: {secrets.clip(text, 200)!r}") from None
        try:
            return self._answer(data)
        except MalformedAnswer as exc:
            return ChatAnswer(None, "request_error", secrets.clip(f"malformed_answer: {exc}", ERROR_CHARS),
                              meta={"error_class": "malformed_answer"})

    def _too_large(self, size: int, *, more: bool = False) -> ChatAnswer:
        limit = self.settings.max_answer_bytes
        amount = f"over {size:,}" if more else f"{size:,}"
        return ChatAnswer(None, "request_error",
                          f"answer_too_large: the answer is {amount} bytes, above the limit of {limit:,} "
                          f"(--max-answer-bytes); not stored", meta={"error_class": "answer_too_large"})

    def _status_error(self, status: int, body: bytes, headers: Any) -> ChatAnswer:
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
        text = _content(choice.get("message"))
        finish = choice.get("finish_reason") or ""
        if not isinstance(finish, str):
            raise MalformedAnswer(f"finish_reason is a {type(finish).__name__}, not text")
        meta: dict[str, Any] = {"finish_reason": finish}
        try:
            usage = _usage(data.get("usage"))
        except MalformedAnswer as exc:
            # The answer is good; only the bookkeeping is not. Counted as unknown, never paid for again.
            usage = Usage(unknown=1)
            meta["usage_unknown"] = secrets.clip(str(exc), ERROR_CHARS)
        text = secrets.scrub(text) if text else text
        if finish == "content_filter":
            return ChatAnswer(text, "refused", "refused: finish_reason=content_filter", usage, meta)
        if not text or not text.strip():
            # Nothing to parse is no answer: asked again like any transient fault, never cached.
            raise TransientError("empty_answer", f"the answer has no content (finish_reason={finish or 'none'})")
        return ChatAnswer(text, "ok", "", usage, meta)
