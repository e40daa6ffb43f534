"""Recomputing a task's metrics on any subset of records, through the task's own ``aggregate``.

Bootstrap replicates and per-scope numbers must be computed exactly as the run computed them, so
the report never re-implements a metric: it asks the task registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rescue.report.columns import Column
from rescue.tasks.base import PredictionRecord

Aggregate = Callable[[list[PredictionRecord]], Mapping[str, object]]
Aggregates = Mapping[str, Aggregate]


def registry_aggregates(tasks: Sequence[str]) -> dict[str, Aggregate]:
    """``aggregate`` of each task the registry knows; a task it does not know is left out (no CIs then)."""
    found: dict[str, Aggregate] = {}
    try:
        from rescue.tasks import get_task  # type: ignore[attr-defined]
    except ImportError:
        return found
    for task in tasks:
        try:
            found[task] = get_task(task).aggregate
        except (KeyError, LookupError, ValueError, ImportError, AttributeError):
            continue
    return found


def column_statistic(aggregate: Aggregate, columns: Sequence[Column]) -> Callable[[list[PredictionRecord]], dict[str, object]]:
    """A bootstrap statistic: the task's metrics, renamed to column headers."""

    def statistic(records: list[PredictionRecord]) -> dict[str, object]:
        metrics = aggregate(records)
        return {c.header: c.pick(metrics) for c in columns}

    return statistic


def in_scope(records: Sequence[PredictionRecord], scope: str) -> list[PredictionRecord]:
    return list(records) if scope == "all" else [r for r in records if r.scenario == scope]
