"""Metrics as plain functions (gold first). The modules imported here import nothing else from rescue, so tasks
may use them; the judge, BERTScore and agreement modules are imported on their own."""

from rescue.metrics.classification import (
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
from rescue.metrics.intensity import intensity_score
from rescue.metrics.ranking import gold_rank, hit_at_k, mrr, ranking_scores, recall_at_k, reciprocal_rank

__all__ = [
    "FAILED",
    "accuracy",
    "balanced_accuracy",
    "binary_scores",
    "confusion_matrix",
    "f1",
    "gold_rank",
    "hit_at_k",
    "intensity_score",
    "macro_scores",
    "mrr",
    "per_label_scores",
    "precision",
    "ranking_scores",
    "recall",
    "recall_at_k",
    "reciprocal_rank",
]
