"""The metrics' full outputs and edge cases, by hand: every key, empty inputs, thresholds, error messages
(the gaps mutation testing found in rescue.metrics; see docs/mutation.md)."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest

from rescue.metrics import (
    FAILED,
    balanced_accuracy,
    binary_scores,
    confusion_matrix,
    gold_rank,
    hit_at_k,
    intensity_score,
    macro_scores,
    mrr,
    recall_at_k,
    reciprocal_rank,
)
from rescue.metrics.agreement import _finite, alpha, pair_statistics


def test_binary_scores_every_key_by_hand():
    # yes: TP 1 (0), FN 2 (1, 2 failed), FP 1 (3); no: TP 2 (4, 5), FN 1 (3), FP 1 (1).
    gold = ["yes", "yes", "yes", "no", "no", "no"]
    pred = ["yes", "no", None, "yes", "no", "no"]
    assert binary_scores(gold, pred) == {
        "precision": pytest.approx(1 / 2), "recall": pytest.approx(1 / 3), "f1": pytest.approx(0.4),
        "precision_no": pytest.approx(2 / 3), "recall_no": pytest.approx(2 / 3), "f1_no": pytest.approx(2 / 3),
        "accuracy": pytest.approx(1 / 2), "balanced_accuracy": pytest.approx(1 / 2),
    }
    # Precision and recall of "yes" apart from those of "no": here yes is 2/3 precise and fully recalled.
    lopsided = binary_scores(["yes", "yes", "no"], ["yes", "yes", "yes"])
    assert (lopsided["precision"], lopsided["recall"], lopsided["precision_no"], lopsided["recall_no"]) == (
        pytest.approx(2 / 3), 1.0, 0.0, 0.0)


def test_balanced_accuracy_over_given_labels_and_empty_input():
    # Default: the labels present in gold (a only); given labels add b's recall of 0.
    assert balanced_accuracy(["a", "a"], ["a", "b"]) == 0.5
    assert balanced_accuracy(["a", "a"], ["a", "b"], labels=["a", "b"]) == 0.25
    assert balanced_accuracy([], []) == 0.0
    assert balanced_accuracy(["a"], ["a"], labels=[]) == 0.0


def test_macro_scores_without_labels_are_zero():
    assert macro_scores([], [], labels=[]) == {"macro_precision": 0.0, "macro_recall": 0.0, "macro_f1": 0.0}


def test_confusion_matrix_counts_repeats_and_orders_columns():
    gold = ["a", "a", "a", "b", "b"]
    pred = ["a", "a", "zz", None, "a"]
    matrix = confusion_matrix(gold, pred, labels=["a", "b"])
    # The closed set first, then unknown predictions, then the failures' column.
    assert list(matrix["a"]) == ["a", "b", "zz", FAILED]
    assert matrix == {"a": {"a": 2, "b": 0, "zz": 1, FAILED: 0}, "b": {"a": 1, "b": 0, "zz": 0, FAILED: 1}}


def test_a_wrong_ranking_has_no_rank():
    assert gold_rank("q", ["a", "b", "c"]) == 0
    assert hit_at_k("q", ["a", "b", "c"], 3) == 0.0
    assert reciprocal_rank("q", ["a", "b"]) == 0.0
    assert gold_rank("q", None) == 0 and hit_at_k("q", None, 1) == 0.0
    assert recall_at_k([], [], 1) == 0.0 and mrr([], []) == 0.0


def test_length_mismatches_name_both_lengths():
    with pytest.raises(ValueError, match=r"^gold and rankings differ in length \(1 vs 0\)$"):
        recall_at_k(["x"], [], 1)
    with pytest.raises(ValueError, match=r"^gold and predictions differ in length \(2 vs 1\)$"):
        confusion_matrix(["a", "b"], ["a"], labels=["a"])


def test_intensity_out_of_range_names_the_side():
    with pytest.raises(ValueError, match="^gold intensity 11 is outside 0-10$"):
        intensity_score(11, 3)
    with pytest.raises(ValueError, match="^predicted intensity -1 is outside 0-10$"):
        intensity_score(3, -1)
    assert intensity_score(0, 10) == 1.0 and intensity_score(10, 10) == 5.0


KEYS = ("pairs", "exact_matches", "exact_agreement", "mae", "spearman", "pearson", "cohen_kappa_quadratic",
        "krippendorff_alpha")


def test_pair_statistics_keys_and_thresholds():
    assert pair_statistics([], []) == dict.fromkeys(KEYS, None) | {"pairs": 0}
    two = pair_statistics([1, 2], [1, 2])  # two pairs, each side ranging over exactly 1: correlations defined
    assert tuple(two) == KEYS
    assert (two["spearman"], two["pearson"]) == (pytest.approx(1.0), pytest.approx(1.0))
    # Two distinct whole-number scores are enough for kappa.
    kappa = pair_statistics([1, 2, 1, 2], [1, 2, 2, 2])["cohen_kappa_quadratic"]
    assert kappa == pytest.approx(0.5)
    with pytest.raises(ValueError, match="^human and judge scores must pair up$"):
        pair_statistics([1, 2], [1])


def test_alpha_needs_two_values_and_is_ordinal_by_default():
    assert alpha([[1, 2, 1], [1, 2, 2]]) is not None  # exactly two distinct values vary enough
    assert alpha([[3, 3], [3, 3]]) is None
    data = [[1, 2, 3, 4, 5, 1], [1, 3, 3, 5, 4, 2]]
    ordinal = krippendorff.alpha(reliability_data=np.array(data, dtype=float), level_of_measurement="ordinal")
    interval = krippendorff.alpha(reliability_data=np.array(data, dtype=float), level_of_measurement="interval")
    assert ordinal != pytest.approx(interval)
    assert alpha(data) == pytest.approx(ordinal)
    assert alpha(data, "interval") == pytest.approx(interval)


def test_undefined_statistics_are_none_not_nan():
    assert _finite(math.nan) is None and _finite(math.inf) is None and _finite(None) is None  # type: ignore[arg-type]
    value = _finite(np.float64(0.25))
    assert value == 0.25 and type(value) is float
