"""Recomputing a task's metrics on any subset of records, through the task's own ``aggregate``.

Bootstrap replicates and per-scope numbers must be computed exactly as the run computed them, so
the report never trusts its own re-implementation of a metric: the closed tasks' metrics (ratios of
counts) also have a vectorised :class:`Decomposed` form for speed, and it is used only after it has
reproduced the task's ``aggregate`` on the full record set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from rescue.report.bootstrap import Decomposed, Statistic
from rescue.report.columns import Column
from rescue.report.outcomes import is_correct
from rescue.tasks.base import PredictionRecord

Aggregate = Callable[[list[PredictionRecord]], Mapping[str, object]]
Aggregates = Mapping[str, Aggregate]
TOLERANCE = 1e-9


def registry_aggregates(tasks: Sequence[str]) -> dict[str, Aggregate]:
    """``aggregate`` of each task the registry knows; a task it does not know is left out (no CIs then)."""
    from rescue.data.errors import RescueError
    from rescue.tasks import get_task

    found: dict[str, Aggregate] = {}
    for task in tasks:
        try:
            found[task] = get_task(task).aggregate
        except RescueError:
            continue
    return found


def column_statistic(aggregate: Aggregate, columns: Sequence[Column]) -> Statistic:
    """A bootstrap statistic: the task's metrics, renamed to column headers."""

    def statistic(records: list[PredictionRecord]) -> dict[str, object]:
        metrics = aggregate(records)
        return {c.header: c.pick(metrics) for c in columns}

    return statistic


def in_scope(records: Sequence[PredictionRecord], scope: str) -> list[PredictionRecord]:
    return list(records) if scope == "all" else [r for r in records if r.scenario == scope]


# --- vectorised forms of the closed tasks' metrics ------------------------------------------------------


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    # Zero denominators give 0, as the protocol's metrics define them (§2.5).
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1), 0.0)


def _itp_components(record: PredictionRecord) -> tuple[float, float, float, float, float]:
    said_yes = record.ok and record.prediction == "yes"
    gold_yes = record.gold == "yes"
    return (float(said_yes and gold_yes), float(said_yes and not gold_yes), float(gold_yes and not said_yes),
            float(is_correct(record)), 1.0)


def _itp_finish(totals: np.ndarray) -> dict[str, np.ndarray]:
    tp, fp, fn, correct, n = totals.T
    return {"ITP P": _ratio(tp, tp + fp), "ITP R": _ratio(tp, tp + fn), "ITP F1": _ratio(2 * tp, 2 * tp + fp + fn),
            "ITP Acc": _ratio(correct, n)}


def _reciprocal_rank(record: PredictionRecord) -> float:
    if not record.ok or not isinstance(record.prediction, list) or record.gold not in record.prediction:
        return 0.0
    return 1.0 / (record.prediction.index(record.gold) + 1)


def _ranking(prefix: str, accuracy: str) -> Decomposed:
    def finish(totals: np.ndarray) -> dict[str, np.ndarray]:
        hits, reciprocal, n = totals.T
        return {f"{prefix} {accuracy}": _ratio(hits, n), f"{prefix} MRR": _ratio(reciprocal, n)}

    return Decomposed(lambda r: (float(is_correct(r)), _reciprocal_rank(r), 1.0), finish)


DECOMPOSED: dict[str, Decomposed] = {
    "itp": Decomposed(_itp_components, _itp_finish),
    "rpp": _ranking("RPP", "Acc"),
    "stp": _ranking("STP", "R@1"),
    "ssp": _ranking("SSP", "R@1"),
}


def _agrees(left: Mapping[str, object], right: Mapping[str, object], keys: Sequence[str]) -> bool:
    for key in keys:
        x, y = left.get(key), right.get(key)
        if x is None or y is None:
            if x is not y:
                return False
        elif abs(float(x) - float(y)) > TOLERANCE:  # type: ignore[arg-type]
            return False
    return True


def best_statistic(task: str, aggregate: Aggregate, columns: Sequence[Column],
                   *record_sets: Sequence[PredictionRecord]) -> Statistic | Decomposed:
    """The vectorised statistic when it reproduces ``aggregate`` on every record set, else ``aggregate`` itself."""
    slow = column_statistic(aggregate, columns)
    fast = DECOMPOSED.get(task)
    keys = [c.header for c in columns]
    if fast is None:
        return slow
    for records in record_sets:
        if not records:
            continue
        observed = fast.evaluate(records)
        if not (all(k in observed for k in keys) and _agrees(observed, slow(list(records)), keys)):
            return slow
    return fast
