"""An OpenAI-compatible chat endpoint as a :class:`~rescue.engine.types.Model`, on the openai SDK's async client.

The SDK's own retries are switched off: retrying is the :mod:`rescue.engine.reliable` layer's job, so that
every retry is visible, counted and paced by the shared adaptive limiter. This module only classifies what
happened: an answer, a refusal (content filter), a transient failure worth retrying (:class:`TransientError`)
or a permanent one (a ``request_error`` answer, or :class:`FatalError` when no request can ever succeed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rescue.engine.providers import Endpoint, redact
from rescue.engine.types import ChatAnswer, ChatRequest, Usage
from rescue.tasks.base import Instance, Task

# Provider codes and phrases that mean "the prompt (or answer) was rejected by a content filter".
REFUSAL_MARKERS = (
    "content_filter",
    "content_policy",
    "data_inspection_failed",
    "inappropriate content",
    "content management policy",
    "safety system",
)


@dataclass(frozen=True)
class GenerationSettings:
    """Per-model generation settings; all but ``timeout`` are part of the cache key."""

    temperature: float = 0.0
    max_tokens: int | None = None  # None: the task's own max_tokens
    json_mode: bool = True  # response_format={"type": "json_object"} where the provider supports it
    extra_body: dict[str, Any] = field(default_factory=dict)  # provider extras, e.g. {"enable_thinking": false}
    seed: int | None = None
    timeout: float = 240.0  # seconds per attempt (the authors' value)

    def key_fields(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "json_mode": self.json_mode,
            "extra_body": self.extra_body,
            "seed": self.seed,
        }


class TransientError(Exception):
    """A failure that may go away: 429, 5xx, a timeout, a dropped connection, an unreadable body."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind  # rate_limit | server_error | timeout | connection | bad_response
        self.retry_after = retry_after


class FatalError(Exception):
    """No request to this endpoint can succeed (bad key, unknown model): stop asking it."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds; HTTP dates are ignored)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue
    return None


def _is_refusal(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in REFUSAL_MARKERS)


class OpenAIModel:
    """One model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(self, endpoint: Endpoint, settings: GenerationSettings | None = None, *, name: str | None = None):
        self.endpoint = endpoint
        self.name = name or endpoint.spec
        base = GenerationSettings() if settings is None else settings
        # Provider extras (a preset's defaults) under the model's own settings.
        extra = {**endpoint.extra_body, **base.extra_body}
        json_mode = base.json_mode and endpoint.json_mode
        self.settings = GenerationSettings(
            base.temperature, base.max_tokens, json_mode, extra, base.seed, base.timeout
        )
        self._client: Any = None
        # Set when the endpoint rejects response_format once: later requests go without it.
        self._json_mode_rejected = False

    # The identity the cache keys on: where the model lives, not how this process reaches it.
    @property
    def cache_identity(self) -> str:
        return self.endpoint.base_url

    def cache_settings(self) -> dict[str, Any]:
        return {"model": self.endpoint.model_id, **self.settings.key_fields()}

    def prepare(self, task: Task, instances: list[Instance]) -> None:
        return None

    def _get_client(self) -> Any:
        if self._client is None:
            import httpx
            import openai

            # Enough pooled connections for any --concurrency; the limiter decides how many are used.
            limits = httpx.Limits(max_connections=1024, max_keepalive_connections=1024)
            self._client = openai.AsyncOpenAI(
                base_url=self.endpoint.base_url,
                api_key=self.endpoint.api_key,
                max_retries=0,
                timeout=self.settings.timeout,
                # openai 3.x is typed for httpx2 but also accepts an httpx client (the engine tests run through it).
                http_client=httpx.AsyncClient(limits=limits, timeout=self.settings.timeout),  # type: ignore[arg-type]
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _clean(self, text: str) -> str:
        return redact(text, [self.endpoint.api_key])[:500]

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.endpoint.model_id,
            "messages": request.messages,
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens or request.max_tokens,
        }
        if self.settings.seed is not None:
            body["seed"] = self.settings.seed
        if self.settings.json_mode and not self._json_mode_rejected:
            body["response_format"] = {"type": "json_object"}
        # Provider extras go to the top level of the body, as the SDK's extra_body does.
        body.update(self.settings.extra_body)
        return body

    async def complete(self, request: ChatRequest) -> ChatAnswer:
        import httpx
        import openai

        client = self._get_client()
        try:
            # The SDK's client (auth, base URL, timeouts, error classes) without its typed request transform
            # and response models: on the hot path they cost more than the rest of a request together.
            response = await client.post("/chat/completions", cast_to=httpx.Response, body=self._body(request))
        except openai.RateLimitError as exc:
            raise TransientError("rate_limit", self._clean(str(exc)), _retry_after(exc.response.headers)) from None
        except openai.APITimeoutError:
            raise TransientError("timeout", f"no answer within {self.settings.timeout:g} s") from None
        except openai.APIConnectionError as exc:
            raise TransientError("connection", self._clean(f"{type(exc).__name__}: {exc}")) from None
        except openai.APIStatusError as exc:
            return self._status_error(exc)
        try:
            data = json.loads(response.content)
        except ValueError:  # a 200 whose body was cut off or is not JSON
            raise TransientError("bad_response", self._clean(f"unreadable body: {response.text[:200]!r}")) from None
        return self._answer(data)

    def _status_error(self, exc: Any) -> ChatAnswer:
        status = exc.status_code
        message = self._clean(str(exc))
        if status >= 500 or status in (408, 409):
            raise TransientError("server_error", f"HTTP {status}: {message}", _retry_after(exc.response.headers))
        if status == 429:  # a proxy's 429 the SDK did not map
            raise TransientError("rate_limit", message, _retry_after(exc.response.headers))
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
        choices = data.get("choices") if isinstance(data, dict) else None
        if not choices or not isinstance(choices[0], dict):
            raise TransientError("bad_response", "the completion has no choices")
        choice = choices[0]
        message = choice.get("message") or {}
        text = message.get("content")
        if isinstance(text, list):  # content parts
            text = "".join(part.get("text", "") for part in text if isinstance(part, dict))
        finish = choice.get("finish_reason") or ""
        raw_usage = data.get("usage") or {}
        details = raw_usage.get("prompt_tokens_details") or {}
        usage = Usage(
            input_tokens=int(raw_usage.get("prompt_tokens") or 0),
            output_tokens=int(raw_usage.get("completion_tokens") or 0),
            # OpenAI reports cached prompt tokens in the details; DeepSeek as prompt_cache_hit_tokens.
            cached_input_tokens=int(details.get("cached_tokens") or raw_usage.get("prompt_cache_hit_tokens") or 0),
        )
        meta = {"finish_reason": finish}
        if finish == "content_filter":
            return ChatAnswer(text, "refused", "refused: finish_reason=content_filter", usage, meta)
        return ChatAnswer(text, "ok", "", usage, meta)
