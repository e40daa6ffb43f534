"""Paired comparisons between systems on the instances they share: paired bootstrap for every
metric, McNemar's exact test for the right/wrong accuracies (ITP, RPP)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from rescue.report.bootstrap import paired_bootstrap
from rescue.report.columns import COMPARED, Column, columns_for
from rescue.report.runs import System
from rescue.report.scoring import Aggregates, best_statistic, in_scope
from rescue.report.significance import mcnemar_records
from rescue.tasks.base import TASK_NAMES


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    task: str
    scope: str
    metric: str  # a column header
    column: Column
    instances: int
    value_a: float | None
    value_b: float | None
    diff: float | None
    low: float | None
    high: float | None
    p_bootstrap: float | None
    mcnemar_only_a: int | None = None
    mcnemar_only_b: int | None = None
    p_mcnemar: float | None = None


def compare_systems(
    systems: Sequence[System],
    aggregates: Aggregates,
    scopes: Sequence[str],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> list[Comparison]:
    """Every pair of systems (in the given order), task and scope where both have shared instances."""
    results: list[Comparison] = []
    for first, second in combinations(systems, 2):
        for task in TASK_NAMES:
            aggregate = aggregates.get(task)
            columns = columns_for(task, COMPARED)
            if aggregate is None or not columns:
                continue
            for scope in scopes:
                left = in_scope(first.task_records(task), scope)
                right = in_scope(second.task_records(task), scope)
                if not left or not right:
                    continue
                paired = paired_bootstrap(
                    left, right, best_statistic(task, aggregate, columns, left, right), [c.id for c in columns],
                    n_resamples=n_resamples, seed=seed, level=level,
                )
                mcnemar = mcnemar_records(left, right)
                for column in columns:
                    p = paired[column.id]
                    if p.instances == 0 or (p.a is None and p.b is None):
                        continue
                    exact = column.right_wrong
                    results.append(Comparison(
                        first.label, second.label, task, scope, column.header, column, p.instances,
                        p.a, p.b, p.diff, p.low, p.high, p.p_value,
                        mcnemar.only_a if exact else None, mcnemar.only_b if exact else None,
                        mcnemar.p_value if exact else None,
                    ))
    return results


def _fmt(column: Column, value: float | None) -> str:
    return column.format(value)


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def comparisons_markdown(comparisons: Sequence[Comparison], alpha: float = 0.05) -> str:
    headers = ["A", "B", "Scope", "Metric", "n", "A", "B", "A−B [95% CI]", "p (paired bootstrap)", "McNemar A-only/B-only, p"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for c in comparisons:
        ci = f"{_fmt(c.column, c.diff)} [{_fmt(c.column, c.low)}, {_fmt(c.column, c.high)}]"
        p_boot = _p(c.p_bootstrap) + ("†" if c.p_bootstrap is not None and c.p_bootstrap < alpha else "")
        mcnemar = "" if c.p_mcnemar is None else f"{c.mcnemar_only_a}/{c.mcnemar_only_b}, {_p(c.p_mcnemar)}"
        if c.p_mcnemar is not None and c.p_mcnemar < alpha:
            mcnemar += "†"
        cells = [c.a, c.b, c.scope, c.metric, str(c.instances), _fmt(c.column, c.value_a), _fmt(c.column, c.value_b),
                 ci, p_boot, mcnemar]
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return "\n".join(lines) + f"\n\n†: p < {alpha}. Differences are A minus B on the instances both systems have.\n"


def comparisons_csv(comparisons: Sequence[Comparison]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["a", "b", "task", "scope", "metric", "instances", "value_a", "value_b", "diff", "ci_low",
                     "ci_high", "p_bootstrap", "mcnemar_only_a", "mcnemar_only_b", "p_mcnemar"])
    for c in comparisons:
        writer.writerow([c.a, c.b, c.task, c.scope, c.metric, c.instances, c.value_a, c.value_b, c.diff, c.low,
                         c.high, c.p_bootstrap, c.mcnemar_only_a, c.mcnemar_only_b, c.p_mcnemar])
    return out.getvalue()
