"""Classification metrics as plain functions: gold first, predictions second, keyword-only options.

A prediction of ``None`` is a failure (parse error, missing answer, request error). It never equals a
gold label, so it counts as wrong in accuracy, as a miss in the recall of its gold label, and as a
prediction of no label in precision. Zero denominators give 0, as in the authors' scripts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

# Stands in for a failed prediction, so that labels are all strings.
FAILED = "(failed)"


def _labels(values: Sequence[Any]) -> list[str]:
    return [FAILED if v is None else str(v) for v in values]


def _check(gold: Sequence[Any], pred: Sequence[Any]) -> None:
    if len(gold) != len(pred):
        raise ValueError(f"gold and predictions differ in length ({len(gold)} vs {len(pred)})")


def _prf(
    gold: Sequence[Any], pred: Sequence[Any], labels: list[str]
) -> tuple[list[float], list[float], list[float], list[int]]:
    """Per-label precision, recall, F1 and support, as scikit-learn's ``precision_recall_fscore_support``
    with ``average=None, zero_division=0`` computes them.

    Counted here rather than imported: scikit-learn and the pandas it pulls in add over a second to every
    ``rescue run``, for three counters per label. tests/metrics/test_metrics_classification.py checks equality with
    scikit-learn.
    """
    _check(gold, pred)
    golds, preds = _labels(gold), _labels(pred)
    true_positive = Counter(g for g, p in zip(golds, preds) if g == p)
    support, predicted = Counter(golds), Counter(preds)
    precisions, recalls, f1s = [], [], []
    for label in labels:
        tp = true_positive[label]
        p = tp / predicted[label] if predicted[label] else 0.0
        r = tp / support[label] if support[label] else 0.0
        precisions.append(p)
        recalls.append(r)
        f1s.append(2 * p * r / (p + r) if p + r else 0.0)
    return precisions, recalls, f1s, [support[label] for label in labels]


def precision(gold: Sequence[Any], pred: Sequence[Any], *, positive: str = "yes") -> float:
    """TP / (TP + FP) for the ``positive`` label."""
    return _prf(gold, pred, [positive])[0][0]


def recall(gold: Sequence[Any], pred: Sequence[Any], *, positive: str = "yes") -> float:
    """TP / (TP + FN) for the ``positive`` label."""
    return _prf(gold, pred, [positive])[1][0]


def f1(gold: Sequence[Any], pred: Sequence[Any], *, positive: str = "yes") -> float:
    """Harmonic mean of precision and recall for the ``positive`` label."""
    return _prf(gold, pred, [positive])[2][0]


def accuracy(gold: Sequence[Any], pred: Sequence[Any]) -> float:
    """Share of exact matches; a failure (None) is wrong."""
    _check(gold, pred)
    if not gold:
        return 0.0
    hits: int = sum(p is not None and p == g for g, p in zip(gold, pred))
    return hits / len(gold)


def balanced_accuracy(gold: Sequence[Any], pred: Sequence[Any], *, labels: Sequence[str] | None = None) -> float:
    """Mean recall over ``labels`` (default: the labels present in ``gold``). ITP: (recall_yes + recall_no) / 2."""
    names = list(labels) if labels is not None else sorted({str(g) for g in gold})
    if not names:
        return 0.0
    recalls = _prf(gold, pred, names)[1]
    return sum(recalls) / len(names)


def binary_scores(
    gold: Sequence[Any], pred: Sequence[Any], *, positive: str = "yes", negative: str = "no"
) -> dict[str, float]:
    """Everything ITP reports: precision / recall / F1 of ``positive`` and of ``negative``, accuracy, balanced accuracy."""
    p, r, f, _ = _prf(gold, pred, [positive, negative])
    return {
        "precision": p[0],
        "recall": r[0],
        "f1": f[0],
        "precision_no": p[1],
        "recall_no": r[1],
        "f1_no": f[1],
        "accuracy": accuracy(gold, pred),
        "balanced_accuracy": (r[0] + r[1]) / 2,
    }


def per_label_scores(
    gold: Sequence[Any], pred: Sequence[Any], *, labels: Sequence[str]
) -> dict[str, dict[str, float | int]]:
    """Precision, recall, F1, support (gold count) and predicted count for every label in ``labels``."""
    names = list(labels)
    p, r, f, s = _prf(gold, pred, names)
    predicted = _labels(pred)
    return {
        name: {"precision": p[i], "recall": r[i], "f1": f[i], "support": s[i], "predicted": predicted.count(name)}
        for i, name in enumerate(names)
    }


def macro_scores(gold: Sequence[Any], pred: Sequence[Any], *, labels: Sequence[str]) -> dict[str, float]:
    """Unweighted means over every label in ``labels``; labels never seen nor predicted contribute 0 (as the authors)."""
    names = list(labels)
    if not names:
        return {"macro_precision": 0.0, "macro_recall": 0.0, "macro_f1": 0.0}
    p, r, f, _ = _prf(gold, pred, names)
    n = len(names)
    return {"macro_precision": sum(p) / n, "macro_recall": sum(r) / n, "macro_f1": sum(f) / n}


def confusion_matrix(gold: Sequence[Any], pred: Sequence[Any], *, labels: Sequence[str]) -> dict[str, dict[str, int]]:
    """Counts ``matrix[gold][pred]`` over ``labels`` plus a ``"(failed)"`` column for failed predictions.

    Gold or predicted values outside ``labels`` get their own row or column, so no count is lost.
    """
    _check(gold, pred)
    golds, preds = _labels(gold), _labels(pred)
    rows = list(labels) + sorted({g for g in golds if g not in labels})
    columns = list(labels) + sorted({p for p in preds if p not in labels and p != FAILED}) + [FAILED]
    matrix = {row: dict.fromkeys(columns, 0) for row in rows}
    for g, p in zip(golds, preds):
        matrix[g][p] += 1
    return matrix
