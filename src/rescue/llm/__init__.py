"""``rescue.llm``: the model layer, free of tasks. Any caller — the evaluation runner, the judge, ``rescue
build``'s pre-annotation, video mode, a notebook — sends :class:`ChatRequest` (messages and settings only)
to a :class:`Model` and gets a :class:`ChatAnswer` back.

- Messages: :class:`Message` ``(role, content)``, content plain text or a list of parts: :class:`TextPart`,
  :class:`ImagePart` (bytes + mime, ``ImagePart.from_file``; sent as a data URL), :class:`VideoPart` (bytes +
  mime, ``VideoPart.from_file``; sent as a ``video_url`` data URL, for servers that accept it). Dicts in the
  API's own ``{"role", "content"}`` form are accepted too.
- Models: :func:`resolve_model` for presets (``openai/gpt-4o-mini``), any id with ``base_url=`` and
  ``local/smollm2``; :class:`OpenAIModel` for an endpoint you describe yourself; :class:`ModelBase` to write
  your own (only ``complete`` is needed).
- :class:`ModelSession`: the shared cache (:class:`ResponseCache`, media keyed by content), per-model concurrency
  limiter, retries (:class:`ReliableModel`), failure budget, cost budget and accounting (:class:`PriceTable`).
- :func:`scrub`: masks every configured key; everything the layer hands on has been through it.

Docs: ``docs/engine.md`` ("The model layer").
"""

from __future__ import annotations

from rescue.llm.cache import ResponseCache, request_key
from rescue.llm.client import (
    FatalError,
    GenerationSettings,
    OpenAIModel,
    TransientError,
)
from rescue.llm.cost import Price, PriceTable
from rescue.llm.limiter import AdaptiveLimiter
from rescue.llm.providers import PRESETS, CredentialError, Endpoint, check_endpoint, resolve_endpoint
from rescue.llm.reliable import Budget, CallStats, EventLog, ReliableModel
from rescue.llm.resolve import LocalModel, resolve_model
from rescue.llm.secrets import scrub
from rescue.llm.session import ModelSession

from rescue.llm.types import (
    AnswerStatus,
    ChatAnswer,
    ChatRequest,
    ImagePart,
    Message,
    MessageLike,
    Model,
    ModelBase,
    Part,
    TextPart,
    Usage,
    VideoPart,
)

# The name before issue #25 (docs and notebooks may use it); new code says ModelSession.
Session = ModelSession

__all__ = [
    "PRESETS",
    "AdaptiveLimiter",
    "AnswerStatus",
    "Budget",
    "CallStats",
    "ChatAnswer",
    "ChatRequest",
    "CredentialError",
    "check_endpoint",
    "Endpoint",
    "EventLog",
    "FatalError",
    "GenerationSettings",
    "ImagePart",
    "LocalModel",
    "Message",
    "MessageLike",
    "Model",
    "ModelBase",
    "OpenAIModel",
    "Part",
    "Price",
    "PriceTable",
    "ReliableModel",
    "ResponseCache",
    "ModelSession",
    "Session",
    "TextPart",
    "TransientError",
    "Usage",
    "VideoPart",
    "request_key",
    "resolve_endpoint",
    "resolve_model",
    "scrub",
]
