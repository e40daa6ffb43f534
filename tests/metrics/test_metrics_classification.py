"""Classification metrics against hand-computed values."""

from __future__ import annotations

import pytest

from rescue.metrics import (
    FAILED,
    accuracy,
    balanced_accuracy,
    binary_scores,
    confusion_matrix,
    f1,
    macro_scores,
    per_label_scores,
    precision,
    recall,
)

# TP = 1 (0), FN = 2 (1 answered no, 2 failed), FP = 1 (3), TN = 2 (4, 5).
GOLD = ["yes", "yes", "yes", "no", "no", "no"]
PRED = ["yes", "no", None, "yes", "no", "no"]


def test_binary_scores_by_hand():
    assert precision(GOLD, PRED) == pytest.approx(1 / 2)
    assert recall(GOLD, PRED) == pytest.approx(1 / 3)
    assert f1(GOLD, PRED) == pytest.approx(2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3))  # 0.4
    assert accuracy(GOLD, PRED) == pytest.approx(3 / 6)
    assert balanced_accuracy(GOLD, PRED) == pytest.approx((1 / 3 + 2 / 3) / 2)
    scores = binary_scores(GOLD, PRED)
    assert scores["f1"] == pytest.approx(0.4)
    assert scores["precision_no"] == pytest.approx(2 / 3)  # predicted no at 1, 4, 5; right at 4, 5
    assert scores["recall_no"] == pytest.approx(2 / 3)
    assert scores["balanced_accuracy"] == pytest.approx(0.5)


def test_failures_are_wrong_never_right():
    gold = ["no", "no"]
    assert accuracy(gold, [None, None]) == 0.0
    assert binary_scores(gold, [None, None])["recall_no"] == 0.0
    # A failure is not a "yes": it cannot lower yes-precision, but it is a miss for yes-recall.
    assert precision(["yes", "no"], ["yes", None]) == 1.0
    assert recall(["yes", "yes"], ["yes", None]) == 0.5


def test_zero_denominators_and_empty_input_give_zero():
    assert precision(["no"], ["no"]) == 0.0
    assert f1([], []) == 0.0
    assert accuracy([], []) == 0.0


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="differ in length"):
        accuracy(["yes"], [])


# a: TP 1, FN 1 -> P 1, R 1/2; b: TP 1, FP 1 -> P 1/2, R 1; c: one miss (failed) -> 0; d: unseen -> 0.
MC_GOLD = ["a", "a", "b", "c"]
MC_PRED = ["a", "b", "b", None]


def test_macro_scores_by_hand():
    scores = macro_scores(MC_GOLD, MC_PRED, labels=["a", "b", "c"])
    assert scores["macro_precision"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert scores["macro_recall"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert scores["macro_f1"] == pytest.approx((2 / 3 + 2 / 3 + 0) / 3)
    # Labels with no support and no prediction still count in the mean, as in the authors' scripts.
    assert macro_scores(MC_GOLD, MC_PRED, labels=["a", "b", "c", "d"])["macro_precision"] == pytest.approx(1.5 / 4)


def test_per_label_table_by_hand():
    table = per_label_scores(MC_GOLD, MC_PRED, labels=["a", "b", "c"])
    assert table["a"] == {"precision": 1.0, "recall": 0.5, "f1": pytest.approx(2 / 3), "support": 2, "predicted": 1}
    assert table["b"]["predicted"] == 2 and table["b"]["precision"] == 0.5
    assert table["c"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1, "predicted": 0}


def test_confusion_matrix_keeps_failures_and_unknown_labels():
    matrix = confusion_matrix(MC_GOLD, MC_PRED, labels=["a", "b", "c"])
    assert matrix["a"] == {"a": 1, "b": 1, "c": 0, FAILED: 0}
    assert matrix["c"][FAILED] == 1
    assert sum(sum(row.values()) for row in matrix.values()) == 4
    odd = confusion_matrix(["a", "z"], ["q", "a"], labels=["a"])
    assert odd["a"]["q"] == 1 and odd["z"]["a"] == 1


def test_er_intensity_score_is_exported_by_hand():
    from rescue.metrics import intensity_score

    assert [intensity_score(6, p) for p in (6, 4, 9, 0)] == [5.0, 3.0, 2.0, 1.0]  # 5 - |diff|, floor 1


def test_per_label_counts_equal_scikit_learn():
    # The counts are hand-written for start-up speed; scikit-learn is the reference they must equal.
    from sklearn.metrics import precision_recall_fscore_support

    from rescue.metrics.classification import FAILED, per_label_scores

    gold = ["a", "b", "a", "c", "b", "a", "c", "c", "b", "a"]
    pred = ["a", None, "b", "c", "b", "a", "a", None, "b", "c"]
    labels = ["a", "b", "c", "d"]
    ours = per_label_scores(gold, pred, labels=labels)
    ref = precision_recall_fscore_support(
        gold, [FAILED if p is None else p for p in pred], labels=labels, average=None, zero_division=0
    )
    for i, label in enumerate(labels):
        assert ours[label]["precision"] == pytest.approx(ref[0][i])
        assert ours[label]["recall"] == pytest.approx(ref[1][i])
        assert ours[label]["f1"] == pytest.approx(ref[2][i])
        assert ours[label]["support"] == ref[3][i]
