"""Why a run's answers failed: per model and task the commonest failure reasons, counted, each with an example.

A reason is a record's status and error with what differs from one instance to the next taken out (the
instance's own id, the candidate list of an unknown label, token counts), so 347 answers naming the same
unknown label are one reason with a count of 347, not 347 reasons. The example keeps the error as recorded.
The run prints them at its end and writes them to ``results.json`` (``models[m]["failure_reasons"][task]``);
``rescue report`` computes them from the records, so runs written before they were stored show them too.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel

from rescue.data.text import visible_text
from rescue.tasks.base import PredictionRecord

TOP_REASONS = 3  # reasons kept per model and task; the rest is counted as "other"
REASON_LENGTH = 160
# What varies between instances that fail for the same reason. A number standing alone (a token count, a
# duration) is one; a quoted value (the label the model gave) is the reason itself and stays.
_CANDIDATES = re.compile(r"\s*\(expected one of: [^)]*\)")
_NUMBER = re.compile(r"(?<![\w'\"<.])\d[\d,.]*(?![\w'\"])")


class FailureReason(BaseModel):
    """One reason answers failed: how many instances, one of them, and that instance's error as recorded."""

    reason: str
    count: int
    example: str  # an instance id
    error: str  # the example's error, as predictions.jsonl holds it


def reason_of(record: PredictionRecord) -> str:
    """The reason ``record`` failed, worded the same for every instance that failed for it."""
    text = record.error or "(no error recorded)"
    local = record.instance_id.rsplit("#", 1)[-1]
    text = text.removeprefix(f"{local}: ")
    if local:
        text = text.replace(local, "<id>")
    text = _NUMBER.sub("N", _CANDIDATES.sub("", text))
    if not text.startswith(record.status):
        text = f"{record.status}: {text}"
    return visible_text(text, max_length=REASON_LENGTH)


def failure_reasons(records: Iterable[PredictionRecord], top: int = TOP_REASONS) -> list[FailureReason]:
    """The ``top`` commonest reasons among the failed ``records`` (commonest first, ties in the order of their
    first instances), each with its first instance as the example; empty when none failed. Instances are taken in
    the data's order, not the order answers came in, so a rerun or a rescore names the same example."""
    counts: Counter[str] = Counter()
    examples: dict[str, PredictionRecord] = {}
    failed = [r for r in records if r.status != "ok"]
    for record in sorted(failed, key=lambda r: (r.sample_id, r.row_index, r.instance_id)):
        reason = reason_of(record)
        counts[reason] += 1
        examples.setdefault(reason, record)
    return [FailureReason(reason=reason, count=count, example=examples[reason].instance_id,
                          error=visible_text(examples[reason].error, max_length=300))
            for reason, count in counts.most_common(top)]


def reason_lines(reasons: list[FailureReason], failures: int) -> list[str]:
    """One line per reason (``340× parse_error: unknown label 'Couple' (e.g. S01#row3)``), then the failures the
    reasons shown do not cover, so the counts always add up to ``failures``."""
    lines = [f"{r.count}× {r.reason} (e.g. {visible_text(r.example, max_length=80)})" for r in reasons]
    rest = failures - sum(r.count for r in reasons)
    if rest > 0:
        lines.append(f"{rest}× other reasons")
    return lines
