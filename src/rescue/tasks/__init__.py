"""The RESCUE-Bench tasks and their registry.

Each task registers itself (:func:`rescue.tasks.registry.register`); importing this package discovers them:
every module of the package, then every entry point of the ``rescue.tasks`` group (a task from another
package). ``TASKS`` maps names to tasks in the paper's order (ITP, RPP, STP, SSP, ER, VP), other tasks after;
``get_task`` looks one up with a clear error.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, cast

from rescue.errors import RescueError
from rescue.data.models import Sample
# JsonObject is open here: a task option as the user writes it, checked by the task's options model
from rescue.data.shapes import JsonObject
from rescue.tasks.base import PredictionRecord, Task
from rescue.tasks.registry import TASK_NAMES, TASKS, discover, register, unregister
from rescue.tasks.spec import Metric, TaskOptionError, validate_options

SCENARIOS = ("couple", "family")

discover()


def get_task(name: str) -> Task:
    """The task called ``name`` (itp, rpp, stp, ssp, er, vp); RescueError naming the known ones otherwise."""
    task = TASKS.get(name.strip().lower())
    if task is None:
        known = ", ".join(TASKS) or "none"
        raise RescueError(f"unknown task {name!r}; known tasks: {known}")
    return task


def task_metrics(tasks: Iterable[str] | None = None) -> list[tuple[str, Metric]]:
    """Every (task, metric) the tasks declare, in the registry's order."""
    names = list(TASKS) if tasks is None else [n for n in TASKS if n in set(tasks)]
    return [(name, metric) for name in names for metric in TASKS[name].declaration.metrics]


def judged_tasks() -> list[str]:
    """Tasks that declare a judge rubric."""
    return [name for name, task in TASKS.items() if task.declaration.judge is not None]


def right_wrong_tasks() -> list[str]:
    """Tasks whose instances are right or wrong (closed label sets: ITP, RPP, STP, SSP)."""
    return [name for name, task in TASKS.items() if task.declaration.outcome == "right_wrong"]


def graded_tasks() -> list[str]:
    """Tasks whose answers are graded by scorers rather than right or wrong (ER, VP)."""
    return [name for name, task in TASKS.items() if task.declaration.outcome == "graded"]


def parse_task_options(items: Iterable[str]) -> dict[str, JsonObject]:
    """``["rpp.rpp_gold=relation_cycle_state", "er.checkpoints_per_sample=3"]`` as per-task options,
    each checked against the task's options model (a value is read as JSON when it is JSON, else as text)."""
    options: dict[str, JsonObject] = {}
    for item in items:
        key, sep, text = item.partition("=")
        name, dot, field = key.strip().partition(".")
        if not sep or not dot or not field:
            raise TaskOptionError(f"task option {item!r}: write TASK.OPTION=VALUE, e.g. rpp.rpp_gold=relation_pattern")
        try:
            value: Any = json.loads(text)
        except json.JSONDecodeError:
            value = text
        options.setdefault(get_task(name).name, {})[field.strip()] = value
    for name, values in options.items():
        validate_options(name, TASKS[name].declaration.options, values)
    return options


def task_counts(
    samples: list[Sample], *, tasks: list[str] | None = None, options: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, dict[str, dict[str, int]]]:
    """Instances and samples covered per task and scenario:
    ``{"itp": {"couple": {"instances": N, "samples": M}, "family": {...}}, ...}``.

    ``options`` are per task (``{"rpp": {"rpp_gold": "relation_pattern"}}``), checked by each task's build.
    """
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for name in tasks or list(TASKS):
        instances = get_task(name).build(samples, **(options or {}).get(name, {}))
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


# One scope's metrics: what Task.aggregate returns, counts and the task's metric keys.
Metrics = dict[str, float | int | None]


def scoped_aggregates(task: Task, records: list[PredictionRecord]) -> dict[str, Metrics | dict[str, Metrics]]:
    """``task.aggregate`` for every scope: ``all``, each scenario present, and ``samples`` (one per sample)."""
    by_scenario: dict[str, list[PredictionRecord]] = defaultdict(list)
    by_sample: dict[str, list[PredictionRecord]] = defaultdict(list)
    for record in records:
        by_scenario[record.scenario].append(record)
        by_sample[record.sample_id].append(record)
    scopes: dict[str, Metrics | dict[str, Metrics]] = {"all": _aggregate(task, records)}
    for scenario in SCENARIOS:
        if by_scenario.get(scenario):
            scopes[scenario] = _aggregate(task, by_scenario[scenario])
    scopes["samples"] = {sample_id: _aggregate(task, rs) for sample_id, rs in sorted(by_sample.items())}
    return scopes


def epoch_aggregates(task: Task, records: list[PredictionRecord]) -> dict[str, Any]:
    """:func:`scoped_aggregates` of one model's records of ``task``; where they come from several epochs (``--epochs``,
    records carrying ``epoch``) each scope holds the mean of the epochs' own metrics, and ``epochs`` the number of
    epochs, their seeds, each epoch's metrics per scope (``per_epoch``) and their sample standard deviation
    (``spread``; 0 for a metric equal in every epoch)."""
    epochs = sorted({r.epoch for r in records if r.epoch is not None})
    if not epochs:
        return dict(scoped_aggregates(task, records))
    per = [scoped_aggregates(task, [r for r in records if r.epoch == epoch]) for epoch in epochs]
    seeds = {r.epoch: r.seed for r in records}
    result: dict[str, Any] = {}
    per_epoch: dict[str, dict[str, list[float | None]]] = {}
    spread: dict[str, dict[str, float | None]] = {}
    for scope in ("all", *SCENARIOS):
        found = [cast(Metrics, p[scope]) for p in per if scope in p]
        if found:
            result[scope], per_epoch[scope], spread[scope] = _over_epochs(found)
    samples = sorted({s for p in per for s in cast(dict[str, Metrics], p["samples"])})
    result["samples"] = {s: _over_epochs([cast(dict[str, Metrics], p["samples"])[s] for p in per
                                          if s in cast(dict[str, Metrics], p["samples"])])[0] for s in samples}
    result["epochs"] = {"count": len(epochs), "seeds": [seeds.get(e) for e in epochs], "per_epoch": per_epoch,
                        "spread": spread}
    return result


def _over_epochs(found: list[Metrics]) -> tuple[Metrics, dict[str, list[float | None]], dict[str, float | None]]:
    """The mean of each metric over the epochs (None where no epoch has it; ``instances`` per epoch, ``failures``
    their mean rounded), each epoch's values and their spread."""
    import statistics

    keys = list(dict.fromkeys(k for metrics in found for k in metrics))
    mean: Metrics = {}
    values: dict[str, list[float | None]] = {}
    spread: dict[str, float | None] = {}
    for key in keys:
        column = [m.get(key) for m in found]
        numbers = [float(v) for v in column if isinstance(v, int | float) and not isinstance(v, bool)]
        if key in ("instances", "failures"):
            mean[key] = round(statistics.fmean(numbers)) if numbers else 0
            continue
        mean[key] = statistics.fmean(numbers) if numbers else None
        values[key] = [None if v is None else float(v) for v in column]
        spread[key] = (statistics.stdev(numbers) if len(numbers) > 1 else 0.0) if numbers else None
    return mean, values, spread


def _aggregate(task: Task, records: list[PredictionRecord]) -> Metrics:
    """The task's aggregate, plus how many of its failures ran out of answer budget (only when some did, so
    runs without any read as before)."""
    result = dict(task.aggregate(records))
    spent = sum(1 for r in records if r.status == "budget_exhausted")
    if spent:
        result["budget_exhausted"] = spent
    return result


__all__ = ["SCENARIOS", "TASKS", "TASK_NAMES", "get_task", "graded_tasks", "judged_tasks", "parse_task_options",
           "register", "right_wrong_tasks", "scoped_aggregates", "epoch_aggregates", "task_counts", "task_metrics",
           "unregister"]
