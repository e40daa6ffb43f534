"""Bootstrap confidence intervals that resample whole conversations, not instances.

Instances of one sample share a conversation, speakers and annotator, so they are not independent;
resampling instances would understate the uncertainty. Every function here draws *samples* (the
``sample_id`` of each record) with replacement, within each scenario (so a resample keeps the
number of couple and family conversations of the original), and recomputes a statistic on all
records of the drawn samples. Intervals are percentile intervals.

With fewer than ``MIN_SAMPLES`` conversations in a scope there is nothing to resample (every replicate
is the observed value), so no interval and no p-value is reported rather than a falsely certain one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rescue.tasks.base import PredictionRecord

MIN_SAMPLES = 2

Statistic = Callable[[list[PredictionRecord]], Mapping[str, object]]


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None
    resamples: int  # replicates where the statistic was defined


@dataclass(frozen=True)
class PairedResult:
    key: str
    a: float | None  # the statistic of system A on the shared instances
    b: float | None
    diff: float | None  # a - b
    low: float | None  # percentile interval of the difference
    high: float | None
    p_value: float | None  # two-sided bootstrap p-value of "no difference"
    instances: int  # shared instances compared
    resamples: int


def _clusters(records: Sequence[PredictionRecord]) -> dict[str, dict[str, list[int]]]:
    """scenario -> sample_id -> positions of that sample's records, in first-seen order."""
    strata: dict[str, dict[str, list[int]]] = {}
    for position, record in enumerate(records):
        strata.setdefault(record.scenario, {}).setdefault(record.sample_id, []).append(position)
    return strata


def _enough(strata: dict[str, dict[str, list[int]]]) -> bool:
    return sum(len(samples) for samples in strata.values()) >= MIN_SAMPLES


def _draws(strata: dict[str, dict[str, list[int]]], rng: np.random.Generator) -> list[int]:
    positions: list[int] = []
    for samples in strata.values():
        groups = list(samples.values())
        for pick in rng.integers(0, len(groups), len(groups)):
            positions.extend(groups[pick])
    return positions


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _interval(values: list[float], level: float) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(np.asarray(values), [tail, 100.0 - tail])
    return float(low), float(high)


def bootstrap_ci(
    records: Sequence[PredictionRecord],
    statistic: Statistic,
    keys: Sequence[str],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Interval]:
    """Percentile intervals of ``statistic(records)[key]`` for each key, resampling samples."""
    replicates: dict[str, list[float]] = {k: [] for k in keys}
    strata = _clusters(records)
    if n_resamples > 0 and _enough(strata):
        rng = np.random.default_rng(seed)
        for _ in range(n_resamples):
            values = statistic([records[i] for i in _draws(strata, rng)])
            for key in keys:
                number = _number(values.get(key))
                if number is not None:
                    replicates[key].append(number)
    result: dict[str, Interval] = {}
    for key in keys:
        low, high = _interval(replicates[key], level)
        result[key] = Interval(low, high, len(replicates[key]))
    return result


def pair_records(
    a: Sequence[PredictionRecord], b: Sequence[PredictionRecord]
) -> tuple[list[PredictionRecord], list[PredictionRecord]]:
    """The records of both systems on the instances they share, in the same order."""
    by_id = {r.instance_id: r for r in b}
    shared = [r for r in a if r.instance_id in by_id]
    return shared, [by_id[r.instance_id] for r in shared]


def paired_bootstrap(
    a: Sequence[PredictionRecord],
    b: Sequence[PredictionRecord],
    statistic: Statistic,
    keys: Sequence[str],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, PairedResult]:
    """Paired comparison of A and B on their shared instances: both are resampled with the same draw.

    The p-value is the two-sided percentile test: twice the share of replicate differences on the
    far side of zero, with the +1 correction so that it is never exactly 0.
    """
    left, right = pair_records(a, b)
    observed_a = statistic(left) if left else {}
    observed_b = statistic(right) if right else {}
    diffs: dict[str, list[float]] = {k: [] for k in keys}
    strata = _clusters(left)
    if n_resamples > 0 and _enough(strata):
        rng = np.random.default_rng(seed)
        for _ in range(n_resamples):
            draw = _draws(strata, rng)
            values_a = statistic([left[i] for i in draw])
            values_b = statistic([right[i] for i in draw])
            for key in keys:
                x, y = _number(values_a.get(key)), _number(values_b.get(key))
                if x is not None and y is not None:
                    diffs[key].append(x - y)
    results: dict[str, PairedResult] = {}
    for key in keys:
        x, y = _number(observed_a.get(key)), _number(observed_b.get(key))
        values = diffs[key]
        low, high = _interval(values, level)
        p_value: float | None = None
        if values:
            array = np.asarray(values)
            below = int(np.sum(array <= 0.0))
            above = int(np.sum(array >= 0.0))
            p_value = min(1.0, 2.0 * (min(below, above) + 1) / (len(values) + 1))
        diff = None if x is None or y is None else x - y
        results[key] = PairedResult(key, x, y, diff, low, high, p_value, len(left), len(values))
    return results
