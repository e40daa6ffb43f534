"""A test-server script that answers like a perfect model: the gold labels, in each task's own answer schema.

Every request the engine can send is rendered ahead with the tasks' own ``render`` — each batch, and each
instance alone (the shape of a retry) — and keyed by its messages; a request is answered with
``task.format_answer(batch, gold)``. So a run against :func:`rescue.testing.serve` with this script goes
through request, parse and scoring for real and must score perfectly on closed tasks. A request the table
does not know (other batching, other options) is answered with an empty prediction list and counted in
``misses``, which a benchmark reports instead of hiding.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from rescue.data.models import Sample
from rescue.tasks.base import Instance, RenderOptions, Task
from rescue.testing.openai_server import Reply, request_key

Batcher = Callable[[list[Instance], int], list[list[Instance]]]


def batches_by_sample(instances: list[Instance], batch_size: int) -> list[list[Instance]]:
    """Consecutive instances of one sample, ``batch_size`` at a time (0: the whole sample)."""
    groups: dict[str, list[Instance]] = {}
    for instance in instances:
        groups.setdefault(instance.sample_id, []).append(instance)
    batches: list[list[Instance]] = []
    for group in groups.values():
        size = batch_size if batch_size > 0 else len(group)
        batches.extend(group[start : start + size] for start in range(0, len(group), size))
    return batches


def gold_value(task: Task, instance: Instance) -> Any:
    """The gold as a prediction value: ranking tasks answer a list with the gold label first; for the
    others (a label, an emotion, viewpoints) the gold already has the prediction's shape."""
    if task.declaration.answer == "ranking":
        gold = instance.gold
        return list(gold) if isinstance(gold, (list, tuple)) else [gold]
    return instance.gold


class OracleScript:
    """Callable script for :func:`rescue.testing.serve`; thread-safe counters ``hits`` and ``misses``."""

    def __init__(
        self,
        samples: list[Sample],
        tasks: Iterable[Task],
        options: RenderOptions | None = None,
        *,
        batch_size: int | None = None,
        batcher: Batcher = batches_by_sample,
        build_options: dict[str, Any] | None = None,
    ):
        self.options = options or RenderOptions()
        self._answers: dict[str, str] = {}
        for task in tasks:
            instances = task.build(samples, **(build_options or {}).get(task.name, {}))
            size = task.default_batch_size if batch_size is None else batch_size
            singles = [[instance] for instance in instances]
            for batch in [*batcher(instances, size), *singles]:
                messages = task.render(batch, self.options)
                values = {i.instance_id: gold_value(task, i) for i in batch}
                self._answers[request_key({"messages": messages})] = task.format_answer(batch, values)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._answers)

    def __call__(self, body: dict[str, Any]) -> Reply:
        answer = self._answers.get(request_key(body))
        with self._lock:
            if answer is None:
                self.misses += 1
            else:
                self.hits += 1
        return Reply.text(answer if answer is not None else '{"predictions": []}')
