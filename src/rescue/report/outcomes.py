"""Per-instance outcomes read off prediction records: top-1 label and correctness.

Failures (any status but "ok") are wrong, as everywhere in rescue. Tasks whose declared outcome is
"graded" (ER, VP) have no right/wrong answer, so their outcome is "open".
"""

from __future__ import annotations

from typing import Any, Literal

from rescue.metrics.classification import FAILED
from rescue.tasks.base import PredictionRecord

Outcome = Literal["correct", "wrong", "failed", "open"]
FAILED_LABEL = FAILED  # one marker for a failed prediction, in metrics and report alike


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
    """The top gold label of a record ("" when none)."""
    return top1(record.gold) or ""


def is_right_wrong(task: str) -> bool:
    """Whether the task declares right/wrong outcomes (a task the registry does not know: no)."""
    from rescue.tasks import TASKS

    return task in TASKS and TASKS[task].declaration.outcome == "right_wrong"


def is_correct(record: PredictionRecord) -> bool:
    """Whether the record's top prediction is its top gold label."""
    return record.ok and top1(record.prediction) is not None and top1(record.prediction) == gold_label(record)


def outcome(record: PredictionRecord) -> Outcome:
    """The record's outcome: failed, open (a task without right/wrong), correct or wrong."""
    if not record.ok:
        return "failed"
    if not is_right_wrong(record.task):
        return "open"
    return "correct" if is_correct(record) else "wrong"
