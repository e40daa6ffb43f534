"""Per-instance outcomes read off prediction records: top-1 label and correctness.

Failures (any status but "ok") are wrong, as everywhere in rescue. ER and VP have no right/wrong
answer (they are graded), so their outcome is "open".
"""

from __future__ import annotations

from typing import Any, Literal

from rescue.tasks.base import PredictionRecord

CLOSED_TASKS = ("itp", "rpp", "stp", "ssp")
RANKING_TASKS = ("rpp", "stp", "ssp")
Outcome = Literal["correct", "wrong", "failed", "open"]
FAILED_LABEL = "(failed)"


def top1(value: Any) -> str | None:
    """The first label of a ranked list, or the label itself."""
    if isinstance(value, list | tuple):
        return str(value[0]) if value else None
    if value is None:
        return None
    return str(value)


def predicted_label(record: PredictionRecord) -> str:
    """The top-1 prediction, or FAILED_LABEL for a failed record (used as a confusion-matrix column)."""
    if not record.ok:
        return FAILED_LABEL
    return top1(record.prediction) or FAILED_LABEL


def gold_label(record: PredictionRecord) -> str:
    return top1(record.gold) or ""


def is_correct(record: PredictionRecord) -> bool:
    return record.ok and top1(record.prediction) is not None and top1(record.prediction) == gold_label(record)


def outcome(record: PredictionRecord) -> Outcome:
    if not record.ok:
        return "failed"
    if record.task not in CLOSED_TASKS:
        return "open"
    return "correct" if is_correct(record) else "wrong"
