"""What the bootstrap promises beyond "an interval comes out": its percentiles, strata, thresholds, p-value
formula and the handling of undefined values (the gaps mutation testing found in report/bootstrap.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from rescue.report.bootstrap import bootstrap_ci, paired_bootstrap
from rescue.report.significance import mcnemar_exact
from rescue.tasks.base import PredictionRecord


def _record(sample: str, *, scenario: str = "couple", model: str = "A", row: int = 1) -> PredictionRecord:
    return PredictionRecord(model=model, task="rpp", instance_id=f"{sample}#row{row}", sample_id=sample,
                            scenario=scenario, row_index=row, gold="a", prediction=["a"], status="ok")


def _conversations(n: int, *, model: str = "A") -> list[PredictionRecord]:
    return [_record(f"g{k}/s{k}", model=model, scenario="couple" if k % 3 else "family") for k in range(n)]


class Counting:
    """A statistic whose k-th call returns k (from ``start``) for system A and ``other`` for anything else:
    the replicates are then known whatever the draws, so the percentile arithmetic can be checked exactly."""

    def __init__(self, start: int = 0, other: float | None = 0.0):
        self.calls = itertools.count(start)
        self.other = other

    def __call__(self, records: list[PredictionRecord]) -> dict[str, object]:
        if records[0].model == "A":
            return {"x": float(next(self.calls))}
        return {"x": self.other}


def test_interval_is_the_central_percentile_range_of_the_replicates():
    records = _conversations(6)
    for level in (0.95, 0.8):
        interval = bootstrap_ci(records, Counting(), ["x"], n_resamples=100, level=level)["x"]
        tail = (1 - level) / 2 * 100
        expected = np.percentile(np.arange(100.0), [tail, 100 - tail])
        assert (interval.low, interval.high) == pytest.approx(tuple(expected))
        assert interval.resamples == 100
    interval = bootstrap_ci(records, Counting(), ["x"], n_resamples=100)["x"]  # 95% by default
    assert (interval.low, interval.high) == pytest.approx((2.475, 96.525))


def test_defaults_are_a_thousand_resamples_and_seed_zero():
    records = [_record(f"s{k}", row=r, scenario="couple") for k in range(5) for r in range(1, k + 2)]

    def share_of_first(drawn: list[PredictionRecord]) -> dict[str, object]:
        # System B scores 0, so a paired difference is A's share and moves with the draws.
        share = sum(r.sample_id == "s0" for r in drawn) / len(drawn)
        return {"x": share if drawn[0].model == "A" else 0.0}

    default = bootstrap_ci(records, share_of_first, ["x"])["x"]
    assert default.resamples == 1000
    assert default == bootstrap_ci(records, share_of_first, ["x"], n_resamples=1000, seed=0)["x"]
    assert default != bootstrap_ci(records, share_of_first, ["x"], n_resamples=1000, seed=1)["x"]
    paired = paired_bootstrap(records, records, share_of_first, ["x"])["x"]
    assert paired.resamples == 1000
    other = [r.model_copy(update={"model": "B"}) for r in records]
    default_paired = paired_bootstrap(records, other, share_of_first, ["x"])
    assert default_paired == paired_bootstrap(records, other, share_of_first, ["x"], n_resamples=1000, seed=0)
    assert default_paired != paired_bootstrap(records, other, share_of_first, ["x"], n_resamples=1000, seed=1)


def test_resampling_keeps_the_number_of_conversations_per_scenario():
    # One record per conversation: a replicate drawn within scenarios always holds 3 couple conversations.
    records = [_record(f"s{k}", scenario="couple" if k < 3 else "family") for k in range(7)]

    def couples(drawn: list[PredictionRecord]) -> dict[str, object]:
        return {"couples": float(sum(r.scenario == "couple" for r in drawn)), "size": float(len(drawn))}

    result = bootstrap_ci(records, couples, ["couples", "size"], n_resamples=200, seed=3)
    assert (result["couples"].low, result["couples"].high) == (3.0, 3.0)
    assert (result["size"].low, result["size"].high) == (7.0, 7.0)


def test_thresholds_one_resample_and_two_conversations_are_enough():
    two = _conversations(2)
    interval = bootstrap_ci(two, Counting(), ["x"], n_resamples=1)["x"]
    assert (interval.low, interval.high, interval.resamples) == (0.0, 0.0, 1)
    assert bootstrap_ci(two, Counting(), ["x"], n_resamples=0)["x"].resamples == 0
    assert bootstrap_ci(two[:1], Counting(), ["x"], n_resamples=10)["x"].resamples == 0
    paired = paired_bootstrap(two, _conversations(2, model="B"), Counting(start=-1), ["x"], n_resamples=1)["x"]
    assert paired.resamples == 1 and paired.low == paired.high == 0.0  # observed -1, then replicate 0
    for left, resamples in ((two, 0), (two[:1], 10)):
        nothing = paired_bootstrap(left, [r.model_copy(update={"model": "B"}) for r in left], Counting(), ["x"],
                                   n_resamples=resamples)["x"]
        assert (nothing.low, nothing.high, nothing.p_value, nothing.resamples) == (None, None, None, 0)
        assert nothing.key == "x" and nothing.instances == len(left)


def test_paired_interval_and_p_value_formula():
    a, b = _conversations(8), _conversations(8, model="B")
    # A's observed value is call 0 (= -40), its replicates calls 1..100 (= -39..60); B is 0 throughout.
    result = paired_bootstrap(a, b, Counting(start=-40), ["x"], n_resamples=100)["x"]
    values = np.arange(-39.0, 61.0)
    assert (result.key, result.a, result.b, result.diff) == ("x", -40.0, 0.0, -40.0)
    assert (result.low, result.high) == pytest.approx(tuple(np.percentile(values, [2.5, 97.5])))
    extreme = min(int(np.sum(values <= 0)), int(np.sum(values >= 0)))  # 40 at or below zero
    assert extreme == 40
    assert result.p_value == pytest.approx(2 * (extreme + 1) / (100 + 1))
    assert (result.resamples, result.instances) == (100, 8)


def test_undefined_values_are_none_never_nan_and_leave_replicates_out():
    a, b = _conversations(6), _conversations(6, model="B")

    def sometimes(drawn: list[PredictionRecord]) -> dict[str, object]:
        first = drawn[0].sample_id
        return {"x": None if first.endswith("0") else 1.0, "nan": math.nan, "text": "n/a"}

    interval = bootstrap_ci(a, sometimes, ["x", "nan", "text"], n_resamples=100, seed=1)
    assert 0 < interval["x"].resamples < 100
    assert interval["nan"] == interval["text"] == type(interval["nan"])(None, None, 0)
    undefined_b = paired_bootstrap(a, b, Counting(other=None), ["x"], n_resamples=50)["x"]
    assert undefined_b.a == 0.0 and undefined_b.b is None and undefined_b.diff is None
    assert undefined_b.resamples == 0 and undefined_b.p_value is None
    nan_a = paired_bootstrap(a, b, lambda drawn: {"x": math.nan}, ["x"], n_resamples=20)["x"]
    assert nan_a.a is None and nan_a.b is None and nan_a.diff is None


def test_mcnemar_refuses_outcomes_of_different_lengths():
    with pytest.raises(ValueError, match="^paired outcomes differ in length: 2 vs 3$"):
        mcnemar_exact([True, False], [True, False, True])


# --- clusters: session groups by default, samples on request; the clustered McNemar by hand -----------------------


def test_cluster_of_is_the_session_folder_unless_asked_for_samples():
    from rescue.report.bootstrap import cluster_of

    assert cluster_of("couple_a/001_session") == "couple_a"
    assert cluster_of("root/couple_a/001") == "root/couple_a"  # the innermost folder's path
    assert cluster_of("plain") == "plain"
    assert cluster_of("couple_a/001_session", "sample") == "couple_a/001_session"
    with pytest.raises(ValueError, match=r"^cluster 'x': choose one of group, sample$"):
        cluster_of("a/b", "x")


def test_the_cluster_option_reaches_the_draws():
    # Two sessions of one group: one cluster (no interval) by group, two clusters by sample.
    records = [_record(f"g/s{k}", row=r) for k in range(2) for r in (1, 2)]
    assert bootstrap_ci(records, Counting(), ["x"], n_resamples=10)["x"].resamples == 0
    assert bootstrap_ci(records, Counting(), ["x"], n_resamples=10, cluster="sample")["x"].resamples == 10
    other = [r.model_copy(update={"model": "B"}) for r in records]
    assert paired_bootstrap(records, other, Counting(), ["x"], n_resamples=10)["x"].resamples == 0
    assert paired_bootstrap(records, other, Counting(), ["x"], n_resamples=10, cluster="sample")["x"].resamples == 10


def test_clustered_mcnemar_by_hand():
    from scipy.stats import chi2

    from rescue.report.significance import clustered_mcnemar

    a = [True, True, False, False, True, True]
    b = [False, False, False, True, False, True]
    clusters = ["A", "A", "A", "B", "C", "C"]
    # Per cluster, A-only minus B-only: A 2, B -1, C 1; total 2, sum of squares 6.
    assert clustered_mcnemar(a, b, clusters) == pytest.approx(float(chi2.sf(2 * 2 / 6, df=1)))
    assert clustered_mcnemar([True, False], [False, True], ["A", "A"]) == 1.0  # balanced within its cluster
    assert clustered_mcnemar([True], [True], ["A"]) == 1.0


def test_mcnemar_records_counts_and_both_p_values():
    from scipy.stats import chi2

    from rescue.report.significance import McNemarResult, mcnemar_exact, mcnemar_records

    def rec(sample: str, row: int, hit: bool, model: str) -> PredictionRecord:
        return PredictionRecord(model=model, task="rpp", instance_id=f"{sample}#row{row}", sample_id=sample,
                                scenario="couple", row_index=row, gold="a", prediction=["a" if hit else "b"],
                                status="ok")

    hits_a = [True, True, True, False, True, False]
    hits_b = [False, False, True, True, False, False]
    samples = ["g1/s1", "g1/s2", "g1/s2", "g2/s3", "g3/s4", "g3/s4"]
    a = [rec(s, k, h, "A") for k, (s, h) in enumerate(zip(samples, hits_a))]
    b = [rec(s, k, h, "B") for k, (s, h) in enumerate(zip(samples, hits_b))]
    result = mcnemar_records(a, b)
    exact = mcnemar_exact(hits_a, hits_b)
    # By group: g1 +2, g2 -1, g3 +1.
    assert result == McNemarResult(3, 1, 1, 1, exact.p_value, pytest.approx(float(chi2.sf(4 / 6, df=1))))
    by_sample = mcnemar_records(a, b, cluster="sample")  # s1 +1, s2 +1, s3 -1, s4 +1: total 2, squares 4
    assert by_sample.p_cluster == pytest.approx(float(chi2.sf(4 / 4, df=1)))
