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

This package is the face: the names in ``__all__`` are the API, the ``_modules`` behind it are not (as in
inspect_ai). The face imports its names on first use, so that reading a default (``DEFAULT_MAX_ANSWER_BYTES``
for ``rescue run --help``) does not import the HTTP client. ``rescue.llm.local`` (the local model) and
``rescue.llm.llama_server`` (the server it starts) are public modules of their own.

Docs: ``docs/engine.md`` ("The model layer").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rescue.llm._limits import DEFAULT_BATCH_SETTLE, DEFAULT_MAX_ANSWER_BYTES, DEFAULT_RETRY_AFTER_CAP

if TYPE_CHECKING:
    from rescue.llm._cache import ResponseCache, request_key
    from rescue.llm._client import FatalError, GenerationSettings, OpenAIModel, TransientError
    from rescue.llm._cost import Price, PriceTable
    from rescue.llm._limiter import AdaptiveLimiter
    from rescue.llm._providers import PRESETS, CredentialError, Endpoint, check_endpoint, resolve_endpoint
    from rescue.llm._reliable import Budget, CallStats, EventLog, ReliableModel
    from rescue.llm._resolve import LocalModel, resolve_model
    from rescue.llm._secrets import scrub
    from rescue.llm._session import ModelSession
    from rescue.llm._session import ModelSession as Session
    from rescue.llm._types import (
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
        WireMessage,
    )

# name -> (private module, its name there). `Session` is the name before issue #25 (docs and notebooks may use
# it); new code says ModelSession.
_LAZY = {
    **dict.fromkeys(["ResponseCache", "request_key"], "_cache"),
    **dict.fromkeys(["FatalError", "GenerationSettings", "OpenAIModel", "TransientError"], "_client"),
    **dict.fromkeys(["Price", "PriceTable"], "_cost"),
    "AdaptiveLimiter": "_limiter",
    **dict.fromkeys(["PRESETS", "CredentialError", "Endpoint", "check_endpoint", "resolve_endpoint"], "_providers"),
    **dict.fromkeys(["Budget", "CallStats", "EventLog", "ReliableModel"], "_reliable"),
    **dict.fromkeys(["LocalModel", "resolve_model"], "_resolve"),
    "scrub": "_secrets",
    **dict.fromkeys(["ModelSession", "Session"], "_session"),
    **dict.fromkeys(["AnswerStatus", "ChatAnswer", "ChatRequest", "ImagePart", "Message", "MessageLike", "Model",
                     "ModelBase", "Part", "TextPart", "Usage", "VideoPart", "WireMessage"], "_types"),
}
_RENAMED = {"Session": "ModelSession"}

__all__ = [
    "DEFAULT_BATCH_SETTLE",
    "DEFAULT_MAX_ANSWER_BYTES",
    "DEFAULT_RETRY_AFTER_CAP",
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
    "WireMessage",
    "request_key",
    "resolve_endpoint",
    "resolve_model",
    "scrub",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'rescue.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"rescue.llm.{_LAZY[name]}"), _RENAMED.get(name, name))
    globals()[name] = value  # looked up once
    return value
