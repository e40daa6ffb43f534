"""Recomputing a task's metrics on any subset of records, through the task's own ``aggregate``.

Bootstrap replicates and per-scope numbers must be computed exactly as the run computed them, so
the report never trusts its own re-implementation of a metric: the closed tasks' metrics (ratios of
counts) and ER/VP's (means of per-instance scores) also have a vectorised :class:`Decomposed` form for
speed, and it is used only after it has reproduced the task's ``aggregate`` on every record set.
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
    from rescue.errors import RescueError
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
        return {c.id: c.pick(metrics) for c in columns}

    return statistic


def in_scope(records: Sequence[PredictionRecord], scope: str) -> list[PredictionRecord]:
    """The records of ``scope`` (all of them for "all")."""
    return list(records) if scope == "all" else [r for r in records if r.scenario == scope]


# --- vectorised forms of the closed tasks' metrics ------------------------------------------------------


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    # Zero denominators give 0, as the protocol's metrics define them (§2.5).
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1), 0.0)


def _binary(task: str, positive: str) -> Decomposed:
    """Precision, recall and F1 of the positive label, and accuracy, from per-instance counts."""

    def components(record: PredictionRecord) -> tuple[float, float, float, float, float]:
        said = record.ok and record.prediction == positive
        gold = record.gold == positive
        return float(said and gold), float(said and not gold), float(gold and not said), float(is_correct(record)), 1.0

    def finish(totals: np.ndarray) -> dict[str, np.ndarray]:
        tp, fp, fn, correct, n = totals.T
        return {f"{task}.precision": _ratio(tp, tp + fp), f"{task}.recall": _ratio(tp, tp + fn),
                f"{task}.f1": _ratio(2 * tp, 2 * tp + fp + fn), f"{task}.accuracy": _ratio(correct, n)}

    return Decomposed(components, finish)


def _reciprocal_rank(record: PredictionRecord) -> float:
    if not record.ok or not isinstance(record.prediction, list) or record.gold not in record.prediction:
        return 0.0
    return 1.0 / (record.prediction.index(record.gold) + 1)


def _ranking(task: str, accuracy: str) -> Decomposed:
    def finish(totals: np.ndarray) -> dict[str, np.ndarray]:
        hits, reciprocal, n = totals.T
        return {f"{task}.{accuracy}": _ratio(hits, n), f"{task}.mrr": _ratio(reciprocal, n)}

    return Decomposed(lambda r: (float(is_correct(r)), _reciprocal_rank(r), 1.0), finish)


def decomposed(task: str) -> Decomposed | None:
    """The vectorised form of a right/wrong task's metrics, from the shape of its answers; None for others.
    It is only a candidate: :func:`best_statistic` uses it after it reproduces the task's ``aggregate``."""
    from rescue.tasks import TASKS

    declared = TASKS[task].declaration if task in TASKS else None
    if declared is None or declared.outcome != "right_wrong":
        return None
    if declared.answer == "label" and declared.positive is not None:
        return _binary(task, declared.positive)
    accuracy = next((m.key for m in declared.metrics if m.right_wrong), None)
    if declared.answer == "ranking" and accuracy is not None:
        return _ranking(task, accuracy)
    return None


def _score_floors(task: str) -> dict[str, float]:
    """The floor a failed record scores per key (the task's declared ``score_floors``; none for a task the
    registry does not know)."""
    from rescue.errors import RescueError
    from rescue.tasks import get_task

    try:
        return dict(get_task(task).declaration.score_floors)
    except RescueError:
        return {}


def mean_scores(task: str, columns: Sequence[Column]) -> Decomposed:
    """ER/VP columns as means of per-record scores: (value or the failure floor, defined) per key.

    Only a candidate: :func:`best_statistic` uses it where it reproduces the task's ``aggregate``.
    """
    floors = _score_floors(task)
    keys = [(c.id, c.key) for c in columns]

    def components(record: PredictionRecord) -> list[float]:
        out: list[float] = []
        for _, key in keys:
            value = record.scores.get(key)
            if not record.ok and key in floors:
                out += [floors[key], 1.0]
            elif value is not None:
                out += [float(value), 1.0]
            else:
                out += [0.0, 0.0]
        return out

    def finish(totals: np.ndarray) -> dict[str, np.ndarray]:
        result = {}
        for k, (header, _) in enumerate(keys):
            total, count = totals[:, 2 * k], totals[:, 2 * k + 1]
            with np.errstate(divide="ignore", invalid="ignore"):
                result[header] = np.where(count > 0, total / np.where(count > 0, count, 1), np.nan)
        return result

    return Decomposed(components, finish)


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
    fast = decomposed(task) or mean_scores(task, columns)
    keys = [c.id for c in columns]
    for records in record_sets:
        if not records:
            continue
        observed = fast.evaluate(records)
        if not (all(k in observed for k in keys) and _agrees(observed, slow(list(records)), keys)):
            return slow
    return fast
