"""McNemar's test for two systems' right/wrong answers on the same instances.

The exact test assumes independent instances, which instances of one session are not (they share
people, context and annotator). Beside it the report gives Durkalski et al.'s (2003) clustered McNemar
statistic, which only assumes independent clusters (session groups or samples):
``X² = (Σ_k (b_k − c_k))² / Σ_k (b_k − c_k)²`` over clusters k, with b_k / c_k the instances of cluster k
only A / only B got right, referred to χ² with one degree of freedom.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rescue.data.groups import SessionGroups
from rescue.report.bootstrap import DEFAULT_CLUSTER, cluster_of, pair_records
from rescue.report.outcomes import is_correct
from rescue.tasks.base import PredictionRecord


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on two systems' right/wrong answers: the four counts and the exact and clustered p-values."""

    only_a: int  # instances A got right and B got wrong
    only_b: int
    both: int
    neither: int
    p_value: float
    p_cluster: float | None = None  # clustered McNemar (Durkalski 2003); None when not computed

    @property
    def instances(self) -> int:
        """The instances compared."""
        return self.only_a + self.only_b + self.both + self.neither


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> McNemarResult:
    """Exact (binomial) McNemar test: under H0 the discordant pairs split 50/50.

    The exact form is used because discordant counts on a benchmark slice are often small, where the
    chi-square approximation is poor; with no discordant pair the p-value is 1.
    """
    if len(a) != len(b):
        raise ValueError(f"paired outcomes differ in length: {len(a)} vs {len(b)}")
    only_a = sum(1 for x, y in zip(a, b) if x and not y)
    only_b = sum(1 for x, y in zip(a, b) if y and not x)
    both = sum(1 for x, y in zip(a, b) if x and y)
    neither = len(a) - only_a - only_b - both
    discordant = only_a + only_b
    if discordant == 0:
        return McNemarResult(only_a, only_b, both, neither, 1.0)
    # scipy.stats is imported only when a test is computed (its import is heavy): a report of one system has none.
    from scipy.stats import binomtest

    p_value = float(binomtest(only_a, discordant, 0.5).pvalue)
    return McNemarResult(only_a, only_b, both, neither, p_value)


def clustered_mcnemar(a: Sequence[bool], b: Sequence[bool], clusters: Sequence[str]) -> float:
    """Durkalski's clustered McNemar p-value (1.0 when no cluster has a discordant imbalance)."""
    balance: dict[str, int] = {}
    for x, y, k in zip(a, b, clusters):
        balance[k] = balance.get(k, 0) + int(x and not y) - int(y and not x)
    total = sum(balance.values())
    spread = sum(v * v for v in balance.values())
    if spread == 0:
        return 1.0
    from scipy.stats import chi2

    return float(chi2.sf(total * total / spread, df=1))


def mcnemar_records(a: Sequence[PredictionRecord], b: Sequence[PredictionRecord], *,
                    cluster: str = DEFAULT_CLUSTER, groups: SessionGroups | None = None) -> McNemarResult:
    """McNemar on top-1 correctness (a task's right/wrong metric: accuracy, Recall@1) over the instances both
    systems have, exact and clustered by ``cluster`` (session groups or samples)."""
    left, right = pair_records(a, b)
    x, y = [is_correct(r) for r in left], [is_correct(r) for r in right]
    # With --epochs the exact test, which takes its pairs as independent, sees each instance once: right where it
    # was right in more than half of its epochs; the clustered statistic takes every epoch's pair, its clusters
    # (independent) holding all of them.
    ix, iy = _by_instance(left, x), _by_instance(right, y)
    exact = mcnemar_exact(ix, iy)
    clustered = clustered_mcnemar(x, y, [cluster_of(r.sample_id, cluster, groups) for r in left])
    return McNemarResult(exact.only_a, exact.only_b, exact.both, exact.neither, exact.p_value, clustered)


def _by_instance(records: Sequence[PredictionRecord], correct: Sequence[bool]) -> list[bool]:
    """Per instance (in first-seen order): right in more than half of its epochs (its one answer without epochs)."""
    tally: dict[str, list[int]] = {}
    for record, right in zip(records, correct, strict=True):
        counts = tally.setdefault(record.instance_id, [0, 0])
        counts[0] += int(right)
        counts[1] += 1
    return [2 * rights > total for rights, total in tally.values()]
