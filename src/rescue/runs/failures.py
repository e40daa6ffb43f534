"""Why a run's answers failed: per model and task the commonest failure reasons, counted, each with an example.

A reason is a record's status and error with what differs from one instance to the next taken out (the
instance's own id, the candidate list of an unknown label, a number such as a token count or an intensity), so 347
answers naming the same unknown label are one reason with a count of 347, not 347 reasons. The numbers taken out
are kept beside the reason, commonest first (``intensity N is outside 0-10 (N: 42 ×3, 11)``): grouped, not hidden.
The example keeps the error as recorded.
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
# A number is taken out as N and its value kept beside the reason (``intensity N is outside 0-10 (N: 42, 11)``);
# a range (``0-10``), a number inside a word or a quoted value is part of the reason and stays; a sign stays with
# its number (``-3``).
_CANDIDATES = re.compile(r"\s*\(expected one of: [^)]*\)")
_NUMBER = re.compile(r"(?<![\w'\"<.-])-?\d[\d,.]*(?<![,.])(?![\w'\"-])")
VALUES_SHOWN = 5  # values kept per reason, commonest first


class FailureReason(BaseModel):
    """One reason answers failed: how many instances, one of them, and that instance's error as recorded."""

    reason: str
    count: int
    example: str  # an instance id
    error: str  # the example's error, as predictions.jsonl holds it
    # What the reason's N stood for, commonest first (at most VALUES_SHOWN): value (several N: joined by " / ")
    # -> how many of the reason's instances had it. Empty for a reason without N (and in older results.json).
    values: dict[str, int] = {}

    def shown(self) -> str:
        """The reason with the values its N stood for: ``parse_error: intensity N is outside 0-10 (N: 42 ×3, 11)``."""
        if not self.values:
            return self.reason
        listed = ", ".join(value + (f" ×{n}" if n > 1 else "") for value, n in self.values.items())
        more = self.count - sum(self.values.values())
        return f"{self.reason} (N: {listed}{', …' if more > 0 else ''})"


def reason_of(record: PredictionRecord) -> str:
    """The reason ``record`` failed, worded the same for every instance that failed for it."""
    return _reason_and_value(record)[0]


def _reason_and_value(record: PredictionRecord) -> tuple[str, str]:
    """The reason ``record`` failed and what its N stand for (``""``: none)."""
    text = record.error or "(no error recorded)"
    local = record.instance_id.rsplit("#", 1)[-1]
    text = text.removeprefix(f"{local}: ")
    if local:
        text = text.replace(local, "<id>")
    text = _CANDIDATES.sub("", text)
    value = " / ".join(_NUMBER.findall(text))
    text = _NUMBER.sub("N", text)
    if not text.startswith(record.status):
        text = f"{record.status}: {text}"
    return visible_text(text, max_length=REASON_LENGTH), visible_text(value, max_length=40)


def failure_reasons(records: Iterable[PredictionRecord], top: int = TOP_REASONS) -> list[FailureReason]:
    """The ``top`` commonest reasons among the failed ``records`` (commonest first, ties in the order of their
    first instances), each with its first instance as the example; empty when none failed. Instances are taken in
    the data's order, not the order answers came in, so a rerun or a rescore names the same example."""
    counts: Counter[str] = Counter()
    values: dict[str, Counter[str]] = {}
    examples: dict[str, PredictionRecord] = {}
    failed = [r for r in records if r.status != "ok"]
    for record in sorted(failed, key=lambda r: (r.sample_id, r.row_index, r.instance_id)):
        reason, value = _reason_and_value(record)
        counts[reason] += 1
        examples.setdefault(reason, record)
        if value:
            values.setdefault(reason, Counter())[value] += 1
    return [FailureReason(reason=reason, count=count, example=examples[reason].instance_id,
                          error=visible_text(examples[reason].error, max_length=300),
                          values=dict(values.get(reason, Counter()).most_common(VALUES_SHOWN)))
            for reason, count in counts.most_common(top)]


def reason_lines(reasons: list[FailureReason], failures: int) -> list[str]:
    """One line per reason (``340× parse_error: unknown label 'Couple' (e.g. S01#row3)``), then the failures the
    reasons shown do not cover, so the counts always add up to ``failures``."""
    lines = [f"{r.count}× {visible_text(r.shown())} (e.g. {visible_text(r.example, max_length=80)})" for r in reasons]
    rest = failures - sum(r.count for r in reasons)
    if rest > 0:
        lines.append(f"{rest}× other reasons")
    return lines
