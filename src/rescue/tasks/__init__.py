"""The six RESCUE-Bench tasks and their registry.

Each task module exposes ``TASK``, an object satisfying :class:`rescue.tasks.base.Task`. ``TASKS`` maps
names to them in the paper's order; ``get_task`` looks one up with a clear error.
"""

from __future__ import annotations

import importlib
from collections import defaultdict
from typing import Any

from rescue.data.errors import RescueError
from rescue.data.models import Sample
from rescue.tasks.base import TASK_NAMES, PredictionRecord, Task

SCENARIOS = ("couple", "family")


def _load(name: str) -> Task | None:
    try:
        module = importlib.import_module(f"rescue.tasks.{name}")
    except ModuleNotFoundError as exc:  # ER and VP live in modules written separately
        if exc.name != f"rescue.tasks.{name}":
            raise
        return None
    task = getattr(module, "TASK", None)
    if task is None:  # tolerate a module that names its object differently
        task = next(
            (v for v in vars(module).values() if isinstance(v, Task) and getattr(v, "name", None) == name), None
        )
    return task


TASKS: dict[str, Task] = {name: task for name in TASK_NAMES if (task := _load(name)) is not None}


def get_task(name: str) -> Task:
    """The task called ``name`` (itp, rpp, stp, ssp, er, vp); RescueError naming the known ones otherwise."""
    task = TASKS.get(name.strip().lower())
    if task is None:
        known = ", ".join(TASKS) or "none"
        raise RescueError(f"unknown task {name!r}; known tasks: {known}")
    return task


def task_counts(
    samples: list[Sample], *, tasks: list[str] | None = None, **options: Any
) -> dict[str, dict[str, dict[str, int]]]:
    """Instances and samples covered per task and scenario:
    ``{"itp": {"couple": {"instances": N, "samples": M}, "family": {...}}, ...}``.

    ``options`` go to every task's ``build`` (each ignores what it does not use, e.g. ``rpp_gold``).
    """
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for name in tasks or list(TASKS):
        instances = get_task(name).build(samples, **options)
        per_scenario: dict[str, list[Any]] = defaultdict(list)
        for instance in instances:
            per_scenario[instance.scenario].append(instance)
        counts[name] = {
            scenario: {
                "instances": len(per_scenario[scenario]),
                "samples": len({i.sample_id for i in per_scenario[scenario]}),
            }
            for scenario in SCENARIOS
        }
    return counts


def scoped_aggregates(task: Task, records: list[PredictionRecord]) -> dict[str, Any]:
    """``task.aggregate`` for every scope: ``all``, each scenario present, and ``samples`` (one per sample)."""
    by_scenario: dict[str, list[PredictionRecord]] = defaultdict(list)
    by_sample: dict[str, list[PredictionRecord]] = defaultdict(list)
    for record in records:
        by_scenario[record.scenario].append(record)
        by_sample[record.sample_id].append(record)
    scopes: dict[str, Any] = {"all": task.aggregate(records)}
    for scenario in SCENARIOS:
        if by_scenario.get(scenario):
            scopes[scenario] = task.aggregate(by_scenario[scenario])
    scopes["samples"] = {sample_id: task.aggregate(rs) for sample_id, rs in sorted(by_sample.items())}
    return scopes


__all__ = ["SCENARIOS", "TASKS", "get_task", "scoped_aggregates", "task_counts"]
