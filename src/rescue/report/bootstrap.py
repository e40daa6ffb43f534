"""Bootstrap confidence intervals that resample whole clusters of conversations, not instances.

Instances of one sample share a conversation, speakers and annotator, so they are not independent;
resampling instances would understate the uncertainty. Samples are nested too: the clips of one couple
or family share people and often an episode. Every function here draws *clusters* with replacement — by
default the session group (``cluster="group"``: one couple or one family, as a
:class:`rescue.data.groups.SessionGroups` says; without one, the sample id's folder), or single samples
(``cluster="sample"``) — within each scenario (so a resample keeps the number of couple and family
clusters of the original), and recomputes a statistic on all records of the drawn clusters. Intervals
are percentile intervals.

A statistic is either any function of a record list (the task's ``aggregate``: general, but one
call per replicate), or a :class:`Decomposed` one — a function of per-sample sums of per-record
components (counts, hits, reciprocal ranks) — which numpy evaluates for all replicates at once.

With fewer than ``MIN_SAMPLES`` clusters in a scope there is nothing to resample (every replicate
is the observed value), so no interval and no p-value is reported rather than a falsely certain one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rescue.data.groups import SessionGroups, folder_of
from rescue.report.options import CLUSTERS as CLUSTERS, DEFAULT_CLUSTER as DEFAULT_CLUSTER, LEVEL, N_RESAMPLES
from rescue.tasks.base import PredictionRecord

MIN_SAMPLES = 2

Statistic = Callable[[list[PredictionRecord]], Mapping[str, object]]


@dataclass(frozen=True)
class Decomposed:
    """A statistic computed from column sums: ``finish(totals)`` maps an (R, C) array of summed
    ``components(record)`` vectors to an (R,) array per key (NaN where undefined)."""

    components: Callable[[PredictionRecord], Sequence[float]]
    finish: Callable[[np.ndarray], dict[str, np.ndarray]]

    def evaluate(self, records: Sequence[PredictionRecord]) -> dict[str, float | None]:
        """The metric over ``records``, from the sum of their components."""
        totals = np.asarray([self.components(r) for r in records], dtype=float).sum(axis=0, keepdims=True)
        return {k: _number(v[0]) for k, v in self.finish(totals).items()}


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval, and how many replicates defined the statistic."""

    low: float | None
    high: float | None
    resamples: int  # replicates where the statistic was defined


@dataclass(frozen=True)
class PairedResult:
    """Two systems on their shared instances: both values, the difference, its interval and bootstrap p-value."""

    key: str
    a: float | None  # the statistic of system A on the shared instances
    b: float | None
    diff: float | None  # a - b
    low: float | None  # percentile interval of the difference
    high: float | None
    p_value: float | None  # two-sided bootstrap p-value of "no difference"
    instances: int  # shared instances compared
    resamples: int


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
        return None
    number = float(value)
    return None if math.isnan(number) else number


def cluster_of(sample_id: str, cluster: str = DEFAULT_CLUSTER, groups: SessionGroups | None = None) -> str:
    """The resampling unit of a sample: its session group (from ``groups``; the id's folder without one) or
    the sample itself."""
    if cluster not in CLUSTERS:
        raise ValueError(f"cluster {cluster!r}: choose one of {', '.join(CLUSTERS)}")
    if cluster == "sample":
        return sample_id
    return groups.group_of(sample_id) if groups is not None else folder_of(sample_id)


def _groups(records: Sequence[PredictionRecord], cluster: str = DEFAULT_CLUSTER,
            grouping: SessionGroups | None = None) -> tuple[list[list[int]], list[int]]:
    """Record positions per cluster, and each cluster's stratum (scenario) number."""
    index: dict[tuple[str, str], int] = {}
    groups: list[list[int]] = []
    strata: list[int] = []
    scenarios: dict[str, int] = {}
    for position, record in enumerate(records):
        key = (record.scenario, cluster_of(record.sample_id, cluster, grouping))
        if key not in index:
            index[key] = len(groups)
            groups.append([])
            strata.append(scenarios.setdefault(record.scenario, len(scenarios)))
        groups[index[key]].append(position)
    return groups, strata


def count_clusters(records: Sequence[PredictionRecord], cluster: str = DEFAULT_CLUSTER,
                   groups: SessionGroups | None = None) -> int:
    """How many clusters (per scenario) the records fall in."""
    return len({(r.scenario, cluster_of(r.sample_id, cluster, groups)) for r in records})


def resample_weights(strata: Sequence[int], n_resamples: int, seed: int) -> np.ndarray:
    """(R, G) multiplicity of each cluster in each replicate, drawing within strata."""
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(np.asarray(strata) == s) for s in sorted(set(strata))]
    weights = np.zeros((n_resamples, len(strata)), dtype=np.int64)
    rows = np.arange(n_resamples)[:, None]
    for group in members:
        picks = group[rng.integers(0, len(group), (n_resamples, len(group)))]
        np.add.at(weights, (rows, picks), 1)
    return weights


def _replicates(
    records: Sequence[PredictionRecord],
    statistic: Statistic | Decomposed,
    keys: Sequence[str],
    groups: list[list[int]],
    weights: np.ndarray,
) -> dict[str, np.ndarray]:
    """(R,) values of each key over the replicates described by ``weights``."""
    if isinstance(statistic, Decomposed):
        per_record = np.asarray([statistic.components(r) for r in records], dtype=float)
        per_sample = np.stack([per_record[g].sum(axis=0) for g in groups])
        arrays = statistic.finish(weights @ per_sample)
        return {k: np.asarray(arrays[k], dtype=float) for k in keys}
    result = {k: np.full(len(weights), np.nan) for k in keys}
    for r, row in enumerate(weights):
        drawn = [records[i] for g, times in zip(groups, row) for _ in range(times) for i in g]
        values = statistic(drawn)
        for key in keys:
            number = _number(values.get(key))
            if number is not None:
                result[key][r] = number
    return result


def _interval(values: np.ndarray, level: float) -> tuple[float | None, float | None]:
    values = values[~np.isnan(values)]
    if not values.size:
        return None, None
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


def _observed(records: Sequence[PredictionRecord], statistic: Statistic | Decomposed) -> Mapping[str, object]:
    if not records:
        return {}
    return statistic.evaluate(records) if isinstance(statistic, Decomposed) else statistic(list(records))


def bootstrap_ci(
    records: Sequence[PredictionRecord],
    statistic: Statistic | Decomposed,
    keys: Sequence[str],
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
    cluster: str = DEFAULT_CLUSTER,
    groups: SessionGroups | None = None,
) -> dict[str, Interval]:
    """Percentile intervals of the statistic's ``key`` values, resampling clusters within scenarios."""
    clusters, strata = _groups(records, cluster, groups)
    if n_resamples <= 0 or len(clusters) < MIN_SAMPLES:
        return {k: Interval(None, None, 0) for k in keys}
    replicates = _replicates(records, statistic, keys, clusters, resample_weights(strata, n_resamples, seed))
    result = {}
    for key in keys:
        low, high = _interval(replicates[key], level)
        result[key] = Interval(low, high, int(np.sum(~np.isnan(replicates[key]))))
    return result


def pair_records(
    a: Sequence[PredictionRecord], b: Sequence[PredictionRecord]
) -> tuple[list[PredictionRecord], list[PredictionRecord]]:
    """The records of both systems on the instances they share with the same gold, in the same order; with
    ``--epochs``, epoch with epoch (an epoch only one system has is left out), so a paired bootstrap, whose clusters
    carry every epoch of their instances, compares the systems' means over the epochs.

    An instance whose gold differs between the runs (another ``--rpp-gold``) is not the same question.
    """
    by_id = {(r.instance_id, r.epoch): r for r in b}
    shared = [r for r in a if (r.instance_id, r.epoch) in by_id and by_id[(r.instance_id, r.epoch)].gold == r.gold]
    return shared, [by_id[(r.instance_id, r.epoch)] for r in shared]


def paired_bootstrap(
    a: Sequence[PredictionRecord],
    b: Sequence[PredictionRecord],
    statistic: Statistic | Decomposed,
    keys: Sequence[str],
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
    cluster: str = DEFAULT_CLUSTER,
    groups: SessionGroups | None = None,
) -> dict[str, PairedResult]:
    """Paired comparison of A and B on their shared instances: both are resampled with the same draw.

    The p-value is the two-sided percentile test: twice the share of replicate differences on the
    far side of zero, with the +1 correction so that it is never exactly 0.
    """
    left, right = pair_records(a, b)
    observed_a, observed_b = _observed(left, statistic), _observed(right, statistic)
    clusters, strata = _groups(left, cluster, groups)
    diffs = {k: np.asarray([], dtype=float) for k in keys}
    if n_resamples > 0 and len(clusters) >= MIN_SAMPLES:
        weights = resample_weights(strata, n_resamples, seed)
        values_a = _replicates(left, statistic, keys, clusters, weights)
        values_b = _replicates(right, statistic, keys, clusters, weights)
        diffs = {k: values_a[k] - values_b[k] for k in keys}
    results: dict[str, PairedResult] = {}
    for key in keys:
        x, y = _number(observed_a.get(key)), _number(observed_b.get(key))
        values = diffs[key][~np.isnan(diffs[key])]
        low, high = _interval(values, level)
        p_value: float | None = None
        if values.size:
            extreme = min(int(np.sum(values <= 0.0)), int(np.sum(values >= 0.0)))
            p_value = min(1.0, 2.0 * (extreme + 1) / (values.size + 1))
        diff = None if x is None or y is None else x - y
        results[key] = PairedResult(key, x, y, diff, low, high, p_value, len(left), int(values.size))
    return results
