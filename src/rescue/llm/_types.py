"""What any caller sends to a model and gets back: messages made of content parts, a request, an answer,
and the :class:`Model` protocol every model implements.

Nothing here knows about tasks or batches: a request is messages plus settings. Media parts hold their
bytes, so a cache key hashes what was sent, never a file path.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NotRequired, Protocol, TypedDict, runtime_checkable

from pydantic import ConfigDict, with_config

# JsonObject is open here: the API's parts (a caller's message may hold any part the provider takes), a model's
# own settings and answer meta
from rescue.data.shapes import ChatMessage, JsonObject

# budget_exhausted: the answer budget ran out (finish_reason "length") before any usable answer, typically spent
# thinking. It is an outcome, not a fault: asking again at the same budget would pay for the same end.
AnswerStatus = Literal["ok", "request_error", "refused", "budget_exhausted"]


@dataclass(frozen=True)
class TextPart:
    """A text part of a message."""

    text: str

    def wire(self) -> JsonObject:
        """The part as the API takes it."""
        return {"type": "text", "text": self.text}

    def key(self) -> JsonObject:
        """The part as the cache key sees it (its wire form)."""
        return self.wire()


def _mime_of(path: Path, fallback: str) -> str:
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or fallback


@dataclass(frozen=True)
class _MediaPart:
    data: bytes = field(repr=False)
    mime: str

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mime={self.mime!r}, bytes={len(self.data)}, sha256={self.sha256[:12]}…)"


@dataclass(frozen=True, repr=False)
class ImagePart(_MediaPart):
    """An image, sent as a ``data:`` URL in an ``image_url`` part. ``detail`` is OpenAI's low/high/auto."""

    mime: str = "image/png"
    detail: str | None = None

    @classmethod
    def from_file(cls, path: str | Path, *, mime: str | None = None, detail: str | None = None) -> ImagePart:
        """An image part with the bytes of ``path`` (MIME type from its name unless given)."""
        file = Path(path)
        return cls(file.read_bytes(), mime or _mime_of(file, "image/png"), detail)

    def wire(self) -> JsonObject:
        """The part as the API takes it: an ``image_url`` with a ``data:`` URL and the detail, if any."""
        url: dict[str, str] = {"url": self.data_url()}
        if self.detail is not None:
            url["detail"] = self.detail
        return {"type": "image_url", "image_url": url}

    def key(self) -> JsonObject:
        """The part as the cache key sees it: the bytes' SHA-256, never the bytes."""
        return {"type": "image", "sha256": self.sha256, "mime": self.mime, "detail": self.detail}


@dataclass(frozen=True, repr=False)
class VideoPart(_MediaPart):
    """A video clip, sent as a ``data:`` URL in a ``video_url`` part (vLLM, SGLang and DashScope's Qwen-VL
    accept it; OpenAI's API does not)."""

    mime: str = "video/mp4"

    @classmethod
    def from_file(cls, path: str | Path, *, mime: str | None = None) -> VideoPart:
        """A video part with the bytes of ``path`` (MIME type from its name unless given)."""
        file = Path(path)
        return cls(file.read_bytes(), mime or _mime_of(file, "video/mp4"))

    def wire(self) -> JsonObject:
        """The part as the API takes it: a ``video_url`` with a ``data:`` URL."""
        return {"type": "video_url", "video_url": {"url": self.data_url()}}

    def key(self) -> JsonObject:
        """The part as the cache key sees it: the bytes' SHA-256, never the bytes."""
        return {"type": "video", "sha256": self.sha256, "mime": self.mime}


@dataclass(frozen=True, repr=False)
class AudioPart(_MediaPart):
    """Audio, keyed by content like every media part. A transcription model uploads its bytes as a file; a chat
    model that takes audio gets it as an ``input_audio`` part (OpenAI's form)."""

    mime: str = "audio/wav"

    @classmethod
    def from_file(cls, path: str | Path, *, mime: str | None = None) -> AudioPart:
        """An audio part with the bytes of ``path`` (MIME type from its name unless given)."""
        file = Path(path)
        return cls(file.read_bytes(), mime or _mime_of(file, "audio/wav"))

    def wire(self) -> JsonObject:
        """The part as a chat API takes it: an ``input_audio`` part, base64."""
        fmt = self.mime.rsplit("/", 1)[-1].removeprefix("x-")
        return {"type": "input_audio",
                "input_audio": {"data": base64.b64encode(self.data).decode("ascii"), "format": fmt}}

    def key(self) -> JsonObject:
        """The part as the cache key sees it: the bytes' SHA-256, never the bytes."""
        return {"type": "audio", "sha256": self.sha256, "mime": self.mime}


Part = TextPart | ImagePart | VideoPart | AudioPart


@dataclass(frozen=True)
class Message:
    """One chat message. ``content`` is plain text or a list of parts (text, images, video)."""

    role: str
    content: str | Sequence[Part]

    def wire(self) -> WireMessage:
        """The message as the API takes it."""
        if isinstance(self.content, str):
            return {"role": self.role, "content": self.content}
        return {"role": self.role, "content": [part.wire() for part in self.content]}

    def key(self) -> WireMessage:
        # Plain text keys exactly as the wire form, so text requests keep the cache keys they always had.
        """The message as the cache key sees it (media by content hash)."""
        if isinstance(self.content, str):
            return {"role": self.role, "content": self.content}
        return {"role": self.role, "content": [part.key() for part in self.content]}


class WireMessage(TypedDict):
    """A message in the API's own form, its content text or a list of the API's parts (a part's JSON)."""

    role: str
    content: str | list[JsonObject]


# Callers may also pass messages in the API's own dict form ({"role", "content"}), as the task prompts do.
MessageLike = Message | ChatMessage | WireMessage


def wire_messages(messages: Sequence[MessageLike]) -> list[ChatMessage | WireMessage]:
    """The messages as the chat API takes them (media as data URLs)."""
    return [m.wire() if isinstance(m, Message) else m for m in messages]


def key_messages(messages: Sequence[MessageLike]) -> list[ChatMessage | WireMessage]:
    """The messages as the cache key sees them: media by content hash, never by bytes or path."""
    return [m.key() if isinstance(m, Message) else m for m in messages]


@dataclass
class ChatRequest:
    """A request: messages and settings, nothing about what they are for.

    ``temperature``, ``seed`` and ``json_mode`` override the model's own settings for this request when set
    (they are then part of the cache key). ``purpose`` and ``tag`` only group accounting and logs (the
    evaluation runner tags requests with the task name, the judge with ``purpose="judge"``); ``ids`` names
    what the request is about in log lines. None of the three is part of the cache key, nor is ``fresh``.
    """

    messages: list[MessageLike]
    max_tokens: int
    temperature: float | None = None
    seed: int | None = None
    json_mode: bool | None = None
    purpose: str = "predict"
    tag: str = "-"
    ids: tuple[str, ...] = ()
    # Ask anew even when the cache holds an answer (the judge's --retry-errors for answers it could not use);
    # the new answer replaces the stored one. Not part of the cache key.
    fresh: bool = False
    # --budget-retry: the answer budget (the model's max_tokens, else the request's) multiplied by this.
    # A different request, so it is keyed apart from the one that ran out.
    budget_factor: float | None = None
    # --judge-repeats: the judge's k-th asking of the same prompt (0: the first). Never sent; a repeat k > 0 is
    # part of the cache key, so a repeat is a request of its own and not the first one's cached answer.
    repeat: int = 0
    # Which waiting request gets the next free slot (the highest first): the runner gives the number of requests
    # left in the request's chain. Never sent, not part of the cache key.
    priority: int = 0

    def overrides(self) -> RequestOverrides:
        """The per-request settings that are set, overriding the model's own."""
        out: RequestOverrides = {}
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.seed is not None:
            out["seed"] = self.seed
        if self.json_mode is not None:
            out["json_mode"] = self.json_mode
        if self.budget_factor is not None:
            out["budget_factor"] = self.budget_factor
        return out


class RequestOverrides(TypedDict, total=False):
    """The settings a :class:`ChatRequest` sets for itself (in this order, as they enter the cache key)."""

    temperature: float
    seed: int
    json_mode: bool
    budget_factor: float


# Read back from the response cache (rescue.llm._cache): numbers only, finite, no key it does not know.
@with_config(ConfigDict(extra="forbid", allow_inf_nan=False))
@dataclass
class Usage:
    """Tokens (and audio seconds) an answer used, as the provider reports them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    # Parts of input_tokens where the provider reports them (Qwen-VL, some vLLM builds).
    image_tokens: int = 0
    video_tokens: int = 0
    # Answers whose usage block could not be read (NaN, negative, not numbers): their tokens are not counted,
    # so a cost over them is a lower bound.
    unknown: int = 0
    # Part of output_tokens (completion_tokens_details.reasoning_tokens): tokens spent thinking, billed as output.
    reasoning_tokens: int = 0
    # Seconds of audio transcribed (speech-to-text is billed by the minute).
    audio_seconds: float = 0.0

    def add(self, more: Usage) -> None:
        """Add ``more`` to these counts."""
        self.input_tokens += more.input_tokens
        self.output_tokens += more.output_tokens
        self.cached_input_tokens += more.cached_input_tokens
        self.image_tokens += more.image_tokens
        self.video_tokens += more.video_tokens
        self.unknown += more.unknown
        self.reasoning_tokens += more.reasoning_tokens
        self.audio_seconds += more.audio_seconds

    def as_dict(self) -> UsageCounts:
        """The counts as JSON (``unknown`` and ``audio_seconds`` only when not zero)."""
        counts: UsageCounts = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                  "cached_input_tokens": self.cached_input_tokens, "image_tokens": self.image_tokens,
                  "video_tokens": self.video_tokens, "reasoning_tokens": self.reasoning_tokens}
        if self.unknown:
            counts["unknown"] = self.unknown
        if self.audio_seconds:
            counts["audio_seconds"] = round(self.audio_seconds, 3)
        return counts


class UsageCounts(TypedDict):
    """:meth:`Usage.as_dict`: what the response cache stores of an answer's usage and reads back as ``Usage(**counts)``."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    image_tokens: int
    video_tokens: int
    reasoning_tokens: int
    unknown: NotRequired[int]
    audio_seconds: NotRequired[float]


@dataclass
class UsageCount:
    """The one token counter: the usage of every answer counted, and the part of it that came through a
    provider's batch API (billed at batch rates). A run's :class:`~rescue.llm.CallStats` and the judge's
    ``JudgeStats`` both count with it."""

    usage: Usage = field(default_factory=Usage)
    batch_answers: int = 0  # of the answers counted, those that came through a batch API (--batch)
    batch_usage: Usage = field(default_factory=Usage)  # their tokens (part of usage)

    def add(self, usage: Usage, *, batch: bool = False) -> None:
        """Count one answer's usage; ``batch``: it came through a batch API."""
        self.usage.add(usage)
        if batch:
            self.batch_answers += 1
            self.batch_usage.add(usage)


@dataclass
class ChatAnswer:
    """An answer: its text, or a failure status and error; the usage and what the layer learnt (meta)."""

    text: str | None
    status: AnswerStatus = "ok"
    error: str = ""  # error class and message for failures; never contains credentials
    usage: Usage = field(default_factory=Usage)
    meta: JsonObject = field(default_factory=dict)  # open: a model of your own may add keys


@runtime_checkable
class Model(Protocol):
    """Everything a caller (the session, the evaluation runner, the judge, pre-annotation) uses of a model.

    - ``name``: how results and logs name it.
    - ``cache_identity``: where the model lives (an endpoint URL, ``local/smollm2``, a name of your own), or
      ``None`` for a model whose answers must not be cached. Part of every cache key.
    - ``cache_settings()``: the settings that change its answers (model id, temperature ...), also keyed.
    - ``max_concurrency``: the most requests it takes at once (``None``: whatever the caller allows).
    - ``complete(request)``: one answer; failures are answers with a failure ``status``, or
      :class:`~rescue.llm.TransientError` / :class:`~rescue.llm.FatalError` for the retry layer.
    - ``aclose()``: release connections or servers.

    :class:`ModelBase` gives the defaults, so a model of your own (an HF pipeline, offline vLLM) only writes
    ``complete``.
    """

    name: str

    @property
    def cache_identity(self) -> str | None:
        """Where answers come from, for the cache key (None: never cached)."""

    @property
    def max_concurrency(self) -> int | None:
        """The most requests this model takes at once (None: the session's limit)."""

    def cache_settings(self) -> JsonObject:
        """The settings that change an answer, for the cache key."""

    async def complete(self, request: ChatRequest) -> ChatAnswer:
        """Answer one request; a failure is an answer with a status, not an exception."""

    async def aclose(self) -> None:
        """Release what the model holds (clients, servers)."""


MODEL_MEMBERS = ("name", "cache_identity", "max_concurrency", "cache_settings", "complete", "aclose")


def require_model(value: Any) -> Model:
    """``value`` if it implements :class:`Model`, else a TypeError naming what it lacks."""
    missing = [member for member in MODEL_MEMBERS if not hasattr(value, member)]
    if missing:
        raise TypeError(f"{type(value).__name__} is not a rescue.llm.Model: it lacks {', '.join(missing)} "
                        "(subclass rescue.llm.ModelBase for the defaults)")
    return value  # type: ignore[no-any-return]


class ModelBase:
    """Defaults for :class:`Model`: not cached, no concurrency limit of its own, nothing to close."""

    name: str = "model"
    cache_identity: str | None = None
    max_concurrency: int | None = None

    def cache_settings(self) -> JsonObject:
        """No settings change the answer unless a subclass says so."""
        return {}

    async def complete(self, request: ChatRequest) -> ChatAnswer:
        """Answer one request (a subclass implements it)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Nothing to release unless a subclass holds something."""
        return None
