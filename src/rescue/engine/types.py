"""What the engine sends to a model and gets back. Every model — an HTTP endpoint, the local llama.cpp
server, an offline baseline — implements :class:`Model`, so all answers go through the same parse path."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from rescue.tasks.base import Instance, Task

AnswerStatus = Literal["ok", "request_error", "refused"]


@dataclass
class ChatRequest:
    messages: list[dict[str, str]]
    max_tokens: int
    # What the messages ask about: offline baselines answer from these, HTTP models ignore them.
    # A judge request has no task.
    task: Task | None = None
    batch: list[Instance] = field(default_factory=list)
    purpose: str = "predict"  # "predict" or "judge": kept apart in logs, cache statistics and costs


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0


@dataclass
class ChatAnswer:
    text: str | None
    status: AnswerStatus = "ok"
    error: str = ""  # error class and message for failures; never contains credentials
    usage: Usage = field(default_factory=Usage)
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Model(Protocol):
    name: str

    def prepare(self, task: Task, instances: list[Instance]) -> None:
        """Called once per task before any request (baselines learn label frequencies here)."""

    async def complete(self, request: ChatRequest) -> ChatAnswer: ...
