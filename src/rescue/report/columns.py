"""The leaderboard's columns (the paper's Table 5 / Table 11) and where each value comes from.

Each column is one metric a task declares (``rescue.tasks.spec.Metric``): it names its task and the key
of that task's ``aggregate`` output it reads, and is identified by ``(task, key)`` (``Column.id``); the
header ("ITP F1") is for display only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from rescue.runs.results import ScopeMetrics
from rescue.tasks import task_metrics
from rescue.tasks.spec import Metric


@dataclass(frozen=True)
class Column:
    """One column of the leaderboard: a task's metric with its header, scale and digits."""

    task: str
    key: str
    header: str
    scale: float = 100.0  # percentages are shown x100, as in the paper
    digits: int = 2
    headline: bool = False  # the task's one number in short boards and the pooled figure
    right_wrong: bool = False  # a mean of right/wrong outcomes: McNemar applies

    @property
    def id(self) -> str:
        """``task.key``: what cells, statistics and comparisons are keyed by."""
        return f"{self.task}.{self.key}"

    @classmethod
    def of(cls, task: str, metric: Metric) -> Column:
        """The column of ``task``'s declared ``metric``."""
        return cls(task, metric.key, f"{task.upper()} {metric.label}", 100.0 if metric.percent else 1.0,
                   metric.digits, metric.headline, metric.right_wrong)

    def pick(self, metrics: ScopeMetrics | Mapping[str, object] | None) -> float | None:
        """This column's value in one scope's metrics (stored, or a fresh aggregate); None when absent or NaN."""
        if metrics is None:
            return None
        value = metrics.value(self.key) if isinstance(metrics, ScopeMetrics) else metrics.get(self.key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return None if math.isnan(float(value)) else float(value)
        return None

    def format(self, value: float | None) -> str:
        """``value`` as the column shows it (scaled, rounded; a dash for none)."""
        return "—" if value is None else f"{value * self.scale:.{self.digits}f}"


_DECLARED = task_metrics()
COLUMNS: tuple[Column, ...] = tuple(Column.of(task, m) for task, m in _DECLARED if m.column)
# Compared between systems (a right/wrong accuracy such as ITP's is compared without being a column).
COMPARED: tuple[Column, ...] = tuple(Column.of(task, m) for task, m in _DECLARED if m.compared)
HEADLINE: tuple[Column, ...] = tuple(Column.of(task, m) for task, m in _DECLARED if m.headline)


def columns_for(task: str, columns: tuple[Column, ...] = COMPARED) -> list[Column]:
    """The columns of ``task``."""
    return [c for c in columns if c.task == task]
