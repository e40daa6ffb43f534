"""Bootstrap over conversations, paired comparisons, McNemar and Bradley-Terry preference bias."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rescue.report.bootstrap import Decomposed, bootstrap_ci, paired_bootstrap, resample_weights
from rescue.report.preference import bradley_terry, preference_bias
from rescue.report.significance import mcnemar_exact, mcnemar_records
from rescue.tasks.base import PredictionRecord


def record(sample: str, row: int, gold: str, pred: str | None, *, model: str = "m", scenario: str = "couple",
           task: str = "rpp") -> PredictionRecord:
    ok = pred is not None
    return PredictionRecord(model=model, task=task, instance_id=f"{sample}#row{row}", sample_id=sample,
                            scenario=scenario, row_index=row, gold=gold, prediction=[pred] if ok else None,
                            status="ok" if ok else "parse_error")


def accuracy(records: list[PredictionRecord]) -> dict[str, float]:
    hits = sum(1 for r in records if r.ok and r.prediction[0] == r.gold)
    return {"acc": hits / len(records)}


ACCURACY = Decomposed(lambda r: (float(r.ok and r.prediction[0] == r.gold), 1.0),
                      lambda t: {"acc": t[:, 0] / t[:, 1]})


def test_resample_weights_draw_whole_samples_within_strata():
    strata = [0, 0, 0, 1, 1]
    weights = resample_weights(strata, 50, seed=3)
    assert weights.shape == (50, 5)
    # Each replicate keeps three couple and two family conversations.
    assert (weights[:, :3].sum(axis=1) == 3).all() and (weights[:, 3:].sum(axis=1) == 2).all()
    assert (resample_weights(strata, 50, seed=3) == weights).all()


def test_conversation_bootstrap_is_wider_than_the_instance_view():
    # Two conversations the model gets entirely right, two entirely wrong: instances are far from
    # independent, and the interval must reflect the 4 conversations, not the 40 instances.
    records = [record(f"s{k}", row, "a", "a" if k < 2 else "b") for k in range(4) for row in range(1, 11)]
    interval = bootstrap_ci(records, accuracy, ["acc"], n_resamples=400, seed=1)["acc"]
    assert interval.low is not None and interval.high is not None
    assert interval.low <= 0.25 and interval.high >= 0.75
    naive_half_width = 1.96 * math.sqrt(0.5 * 0.5 / 40)
    assert (interval.high - interval.low) / 2 > naive_half_width


def test_vectorised_and_general_statistics_give_identical_replicates():
    rng = np.random.default_rng(0)
    records = [record(f"s{k}", row, "a", "a" if rng.random() < 0.6 else "b", scenario="couple" if k < 5 else "family")
               for k in range(8) for row in range(1, int(rng.integers(2, 9)))]
    slow = bootstrap_ci(records, accuracy, ["acc"], n_resamples=200, seed=7)["acc"]
    fast = bootstrap_ci(records, ACCURACY, ["acc"], n_resamples=200, seed=7)["acc"]
    assert slow.low == pytest.approx(fast.low) and slow.high == pytest.approx(fast.high)
    assert ACCURACY.evaluate(records)["acc"] == pytest.approx(accuracy(records)["acc"])


def test_one_conversation_gives_no_interval_rather_than_a_certain_one():
    records = [record("only", row, "a", "a") for row in range(1, 6)]
    interval = bootstrap_ci(records, accuracy, ["acc"], n_resamples=100)["acc"]
    assert interval.low is None and interval.high is None and interval.resamples == 0


def test_paired_bootstrap_of_a_system_with_itself_finds_no_difference():
    records = [record(f"s{k}", row, "a", "a" if (k + row) % 3 else "b") for k in range(5) for row in range(1, 6)]
    result = paired_bootstrap(records, records, ACCURACY, ["acc"], n_resamples=200)["acc"]
    assert result.diff == 0.0 and result.low == 0.0 and result.high == 0.0 and result.p_value == 1.0


def test_paired_bootstrap_detects_a_consistently_better_system():
    better = [record(f"s{k}", row, "a", "a" if row > 1 else "b", model="A") for k in range(10) for row in range(1, 6)]
    worse = [record(f"s{k}", row, "a", "a" if row > 4 else "b", model="B") for k in range(10) for row in range(1, 6)]
    result = paired_bootstrap(better, worse, ACCURACY, ["acc"], n_resamples=300)["acc"]
    assert result.a == pytest.approx(0.8) and result.b == pytest.approx(0.2) and result.diff == pytest.approx(0.6)
    assert result.p_value is not None and result.p_value < 0.01
    assert result.instances == 50


def test_paired_bootstrap_only_uses_shared_instances():
    a = [record("s1", 1, "a", "a"), record("s2", 1, "a", "a"), record("s3", 1, "a", "b")]
    b = [record("s1", 1, "a", "b"), record("s2", 1, "a", "b")]
    result = paired_bootstrap(a, b, ACCURACY, ["acc"], n_resamples=50)["acc"]
    assert result.instances == 2 and result.a == 1.0 and result.b == 0.0


def test_mcnemar_exact_matches_the_binomial_tail():
    a = [True] * 10 + [False] * 1 + [True] * 5
    b = [False] * 10 + [True] * 1 + [True] * 5
    result = mcnemar_exact(a, b)
    assert (result.only_a, result.only_b, result.both, result.neither) == (10, 1, 5, 0)
    # Two-sided exact: 2 * P(X <= 1 | n=11, p=0.5) = 2 * 12 / 2048.
    assert result.p_value == pytest.approx(24 / 2048)
    assert mcnemar_exact([True, False], [True, False]).p_value == 1.0


def test_mcnemar_counts_failures_as_wrong():
    a = [record("s", 1, "x", "x"), record("s", 2, "x", None)]
    b = [record("s", 1, "x", None), record("s", 2, "x", "x")]
    result = mcnemar_records(a, b)
    assert (result.only_a, result.only_b) == (1, 1)


def test_bradley_terry_recovers_known_strengths():
    # i beats j in proportion p_i / (p_i + p_j) with p = (4, 2, 1): expected wins over 700 games a pair.
    p = np.array([4.0, 2.0, 1.0])
    wins = np.array([[0, 700 * 4 / 6, 700 * 4 / 5], [700 * 2 / 6, 0, 700 * 2 / 3], [700 * 1 / 5, 700 * 1 / 3, 0]])
    strengths, _, converged = bradley_terry(wins)
    assert converged
    assert strengths / strengths[2] == pytest.approx(p, rel=1e-6)


def test_preference_bias_is_zero_for_symmetric_confusions_and_positive_for_a_favourite():
    labels = ["a", "b", "c"]
    gold = ["a", "b", "c", "a", "b", "c"]
    symmetric = preference_bias(labels, gold, ["b", "c", "a", "c", "a", "b"])
    assert symmetric.bias == pytest.approx(0.0, abs=1e-9)
    assert symmetric.strengths == pytest.approx([1.0, 1.0, 1.0])
    favourite = preference_bias(labels, ["a", "b", "c", "b", "c", "a", "c"], ["a", "a", "a", "a", "a", "b", "b"])
    assert favourite.bias is not None and favourite.bias > 0.3
    assert favourite.strengths[0] == max(favourite.strengths)
    assert sum(favourite.strengths) == pytest.approx(3.0)


def test_preference_bias_ignores_failures_and_uncompared_labels():
    result = preference_bias(["a", "b", "c"], ["a", "b", "a"], ["b", None, "a"])
    assert result.strengths[2] is None  # "c" was never predicted nor gold
    assert result.strengths[1] is not None
