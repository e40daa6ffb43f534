"""What the evaluation runner asks: a :class:`TaskRequest` (the model layer's task-free
:class:`~rescue.llm.ChatRequest` plus the task and batch it was rendered from) answered by a
:class:`TaskModel`.

Models of the model layer see only the messages: :func:`as_task_model` adapts any
:class:`~rescue.llm.Model` (an endpoint, the local model, your own Python model) by sending the
request and ignoring the task. Offline baselines answer from the task and instances instead, so they
implement :class:`TaskModel` themselves. Either way every answer goes through the task's ``parse``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rescue.llm import AnswerStatus, ChatAnswer, ChatRequest, Model, Usage
from rescue.llm._types import require_model
from rescue.tasks.base import Instance, RenderOptions, Task

__all__ = ["AnswerStatus", "ChatAnswer", "ChatRequest", "Model", "ModelAdapter", "TaskModel", "TaskRequest",
           "Usage", "as_task_model"]


@dataclass
class TaskRequest:
    """One request of a run: the chat request, the task and the batch of instances it asks about."""

    request: ChatRequest
    task: Task
    batch: list[Instance]


@runtime_checkable
class TaskModel(Protocol):
    """What the runner asks: a model that answers a task's batches (offline baselines, and every model adapted)."""

    name: str

    def applies_to(self, task_name: str) -> bool:
        """Whether it answers this task at all (a baseline may not: persist has no ITP answer)."""

    def prepare(self, task: Task, instances: list[Instance], options: RenderOptions | None = None) -> None:
        """Called once per task before any request (baselines learn label frequencies here); ``options``: how
        the run renders prompts (a trained baseline featurises what a model would be shown)."""

    async def solve(self, ask: TaskRequest) -> ChatAnswer:
        """The answer to one batch."""

    async def aclose(self) -> None:
        """Release what the model holds."""


class ModelAdapter:
    """A model-layer :class:`~rescue.llm.Model` as a :class:`TaskModel`: it gets the messages only."""

    def __init__(self, model: Model):
        self.model = model
        self.name = model.name

    def applies_to(self, task_name: str) -> bool:
        """A chat model answers every task."""
        return True

    def prepare(self, task: Task, instances: list[Instance], options: RenderOptions | None = None) -> None:
        """A chat model learns nothing before a task."""
        return None

    async def solve(self, ask: TaskRequest) -> ChatAnswer:
        """The model's answer to the batch's messages."""
        return await self.model.complete(ask.request)

    async def aclose(self) -> None:
        """Close the model."""
        await self.model.aclose()


def as_task_model(value: Model | TaskModel) -> TaskModel:
    """``value`` itself when it already answers tasks, else the model wrapped in a :class:`ModelAdapter`."""
    if isinstance(value, TaskModel):
        return value
    return ModelAdapter(require_model(value))
