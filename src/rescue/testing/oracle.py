"""A test-server script that answers like a perfect model: the gold labels, in each task's own answer schema.

Every request the engine can send is rendered ahead with the tasks' own ``render`` — each batch the runner
forms (:func:`run_batches`), and each instance alone (the shape of a retry) — and keyed by its messages; a request is answered with
``task.format_answer(batch, gold)``. So a run against :func:`rescue.testing.serve` with this script goes
through request, parse and scoring for real and must score perfectly on closed tasks. A request the table
does not know (other batching, other options) is answered with an empty prediction list and counted in
``misses``, which a benchmark reports instead of hiding.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from collections.abc import Iterable

from rescue.data.shapes import JsonObject  # open here: a client's request body; task options as a user writes them
from rescue.data.models import Sample
from rescue.tasks.base import Instance, RenderOptions, Task, gold_value
from rescue.tasks.batching import plan_batches
from rescue.tasks.prompts import resolve_context_size
from rescue.tasks.render import RowCache
from rescue.testing.openai_server import Reply, request_key


def run_batches(task: Task, instances: list[Instance], batch_size: int, options: RenderOptions) -> list[list[Instance]]:
    """The batches ``rescue run`` sends for these instances (leak-free grouping, rescue.tasks.batching)."""
    k = resolve_context_size(options.context_size, int(task.default_context_size))
    return plan_batches(task, instances, batch_size, k).batches


class OracleScript:
    """Callable script for :func:`rescue.testing.serve`; thread-safe counters ``hits`` and ``misses``."""

    def __init__(
        self,
        samples: list[Sample],
        tasks: Iterable[Task],
        options: RenderOptions | None = None,
        *,
        batch_size: int | None = None,
        build_options: JsonObject | None = None,
    ):
        options = options or RenderOptions()
        # Rendering every request ahead encodes each row once; the cache never changes a prompt's bytes.
        self.options = options if options.rows is not None else replace(options, rows=RowCache())
        self._answers: dict[str, str] = {}
        for task in tasks:
            instances = task.build(samples, **(build_options or {}).get(task.name, {}))
            self.add(task, instances, task.default_batch_size if batch_size is None else batch_size)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @classmethod
    def for_instances(cls, task: Task, instances: list[Instance], batch_size: int = 1,
                      options: RenderOptions | None = None) -> OracleScript:
        """An oracle for these instances of one task only."""
        script = cls([], [], options)
        script.add(task, instances, batch_size)
        return script

    def add(self, task: Task, instances: list[Instance], batch_size: int) -> None:
        """Answer every batch the runner forms at ``batch_size``, and every instance alone (a re-ask)."""
        for batch in [*run_batches(task, instances, batch_size, self.options), *([i] for i in instances)]:
            messages = task.render(batch, self.options)
            values = {i.instance_id: gold_value(task, i) for i in batch}
            self._answers[request_key({"messages": messages})] = task.format_answer(batch, values)

    @property
    def answers(self) -> dict[str, str]:
        """request key -> the perfect answer."""
        return dict(self._answers)

    def __len__(self) -> int:
        return len(self._answers)

    def __call__(self, body: JsonObject) -> Reply:
        answer = self._answers.get(request_key(body))
        with self._lock:
            if answer is None:
                self.misses += 1
            else:
                self.hits += 1
        return Reply.text(answer if answer is not None else '{"predictions": []}')
