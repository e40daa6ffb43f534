"""McNemar's exact test for two systems' right/wrong answers on the same instances."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import binomtest

from rescue.report.bootstrap import pair_records
from rescue.report.outcomes import is_correct
from rescue.tasks.base import PredictionRecord


@dataclass(frozen=True)
class McNemarResult:
    only_a: int  # instances A got right and B got wrong
    only_b: int
    both: int
    neither: int
    p_value: float

    @property
    def instances(self) -> int:
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
    p_value = 1.0 if discordant == 0 else float(binomtest(only_a, discordant, 0.5).pvalue)
    return McNemarResult(only_a, only_b, both, neither, p_value)


def mcnemar_records(a: Sequence[PredictionRecord], b: Sequence[PredictionRecord]) -> McNemarResult:
    """McNemar on top-1 correctness (ITP accuracy, RPP accuracy) over the instances both systems have."""
    left, right = pair_records(a, b)
    return mcnemar_exact([is_correct(r) for r in left], [is_correct(r) for r in right])
