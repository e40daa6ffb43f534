"""Paired comparisons between systems on the instances they share (with the same gold): paired
cluster bootstrap for every metric, McNemar's exact test and its clustered form (Durkalski 2003) for
the metrics a task declares right/wrong (``Metric.right_wrong``: ITP's and RPP's accuracy, STP's and SSP's
Recall@1).

:func:`informative` keeps the rows a reader needs: no row without a difference or interval, no "all"
row that only repeats one scenario, and the headline metric of each task first.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from rescue.display import markdown_table
from rescue.data.groups import GROUP_WORDS, SessionGroups
from rescue.report.bootstrap import DEFAULT_CLUSTER, paired_bootstrap
from rescue.report.options import ALPHA, LEVEL, N_RESAMPLES
from rescue.report.columns import COMPARED, Column, columns_for
from rescue.report.runs import System
from rescue.report.recompute import Aggregates, best_statistic, in_scope
from rescue.report.significance import mcnemar_records
from rescue.tasks import TASK_NAMES


@dataclass(frozen=True)
class Comparison:
    """One paired comparison of systems A and B on one metric, task and scope."""

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
    p_mcnemar_cluster: float | None = None
    resamples: int = 0  # the paired bootstrap's replicates: its p-value is never below 2 / (resamples + 1)




def informative(comparisons: Sequence[Comparison], *, headline_only: bool = False) -> list[Comparison]:
    """The comparisons that tell something: a difference with an interval, not an "all" row that equals one
    scenario's row (a one-scenario system), and with ``headline_only`` the headline metrics (and the
    right/wrong accuracies McNemar tests) only."""
    by_scope = {(c.a, c.b, c.column.id, c.scope): c for c in comparisons}
    scopes = {c.scope for c in comparisons}
    kept = []
    for c in comparisons:
        if c.diff is None or c.low is None or c.high is None:
            continue
        if headline_only and not (c.column.headline or c.column.right_wrong):
            continue
        if c.scope == "all" and any(
            (other := by_scope.get((c.a, c.b, c.column.id, s))) is not None and other.instances == c.instances
            for s in scopes - {"all"}
        ):
            continue
        kept.append(c)
    return kept


def compare_systems(
    systems: Sequence[System],
    aggregates: Aggregates,
    scopes: Sequence[str],
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
    cluster: str = DEFAULT_CLUSTER,
    groups: SessionGroups | None = None,
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
                    n_resamples=n_resamples, seed=seed, level=level, cluster=cluster, groups=groups,
                )
                mcnemar = mcnemar_records(left, right, cluster=cluster, groups=groups)
                for column in columns:
                    p = paired[column.id]
                    if p.instances == 0 or (p.a is None and p.b is None):
                        continue
                    exact = column.right_wrong
                    results.append(Comparison(
                        first.label, second.label, task, scope, column.header, column, p.instances,
                        p.a, p.b, p.diff, p.low, p.high, p.p_value,
                        mcnemar.only_a if exact else None, mcnemar.only_b if exact else None,
                        mcnemar.p_value if exact else None, mcnemar.p_cluster if exact else None,
                        p.resamples,
                    ))
    return results


def _fmt(column: Column, value: float | None) -> str:
    return column.format(value)


def p_text(value: float | None, *, missing: str = "—", floor: str = "< 0.001") -> str:
    """A p-value as the report prints it: three decimals, ``floor`` below 0.001, ``missing`` when there is none."""
    if value is None:
        return missing
    return floor if value < 0.001 else f"{value:.3f}"


def p_bootstrap_text(comparison: Comparison) -> str:
    """The paired bootstrap's p-value; at its floor (no replicate crossed zero) "< 2/(R+1)", e.g. "< 0.002":
    the test cannot say how much smaller it is."""
    value = comparison.p_bootstrap
    if value is None:
        return "—"
    if comparison.resamples and value <= 2.0 / (comparison.resamples + 1) + 1e-12:
        return f"< {2.0 / (comparison.resamples + 1):.3f}"
    return p_text(value)


def comparisons_markdown(comparisons: Sequence[Comparison], alpha: float = ALPHA, *, cluster: str = DEFAULT_CLUSTER) -> str:
    """The informative comparisons as a Markdown table, with the note that reads it."""
    headers = ["A", "B", "Scope", "Metric", "n shared", "A", "B", "A−B [95% CI]", "p (paired bootstrap)",
               "McNemar A-only/B-only, p exact", "p clustered"]
    rows: list[list[str]] = []
    for c in informative(comparisons):
        ci = f"{_fmt(c.column, c.diff)} [{_fmt(c.column, c.low)}, {_fmt(c.column, c.high)}]"
        p_boot = p_bootstrap_text(c) + ("†" if c.p_bootstrap is not None and c.p_bootstrap < alpha else "")
        mcnemar = "" if c.p_mcnemar is None else f"{c.mcnemar_only_a}/{c.mcnemar_only_b}, {p_text(c.p_mcnemar)}"
        clustered = "" if c.p_mcnemar_cluster is None else p_text(c.p_mcnemar_cluster)
        if c.p_mcnemar_cluster is not None and c.p_mcnemar_cluster < alpha:
            clustered += "†"
        cells = [c.a, c.b, c.scope, c.metric, str(c.instances), _fmt(c.column, c.value_a), _fmt(c.column, c.value_b),
                 ci, p_boot, mcnemar, clustered]
        rows.append(cells)
    return markdown_table(headers, rows) + "\n" + comparisons_note(alpha, cluster) + "\n"


def comparisons_note(alpha: float, cluster: str) -> str:
    """How to read the comparison tables: what the tests assume and which rows are left out."""
    unit = "session groups" if cluster == "group" else "samples"
    described = GROUP_WORDS if cluster == "group" else unit
    return (f"†: p < {alpha}. Differences are A minus B on the instances both systems have with the same gold "
            f"(n shared). The paired bootstrap resamples {described} within scenarios. McNemar's exact test assumes "
            f"independent instances, which instances of one session are not: read it as descriptive; the "
            f"clustered McNemar (Durkalski 2003) and the bootstrap only assume independent {unit}. Rows without "
            "an interval, and 'all' rows that repeat a single scenario, are left out (comparisons.csv has every row).")


def comparisons_csv(comparisons: Sequence[Comparison]) -> str:
    """Every comparison as CSV."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["a", "b", "task", "scope", "metric", "instances", "value_a", "value_b", "diff", "ci_low",
                     "ci_high", "p_bootstrap", "mcnemar_only_a", "mcnemar_only_b", "p_mcnemar", "p_mcnemar_clustered"])
    for c in comparisons:
        writer.writerow([c.a, c.b, c.task, c.scope, c.metric, c.instances, c.value_a, c.value_b, c.diff, c.low,
                         c.high, c.p_bootstrap, c.mcnemar_only_a, c.mcnemar_only_b, c.p_mcnemar, c.p_mcnemar_cluster])
    return out.getvalue()
