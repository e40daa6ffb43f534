"""The evaluation run: tasks asked of models, through the task-free model layer :mod:`rescue.llm` (endpoints,
cache, retries, concurrency, cost); it writes the run directory through :mod:`rescue.runs`.

``resolve_model`` and ``ReliableModel`` are exported lazily so that importing :mod:`rescue.engine.types` stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ReliableModel", "resolve_model"]


def __getattr__(name: str) -> Any:
    if name == "resolve_model":
        from rescue.engine.resolve import resolve_model

        return resolve_model
    if name == "ReliableModel":
        from rescue.llm import ReliableModel

        return ReliableModel
    raise AttributeError(f"module 'rescue.engine' has no attribute {name!r}")
