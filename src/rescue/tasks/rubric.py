"""The pieces a task's judge rubric is declared with, and readers of what judging stored on a record.

A task declares its rubric (:class:`rescue.tasks.spec.JudgeRubric`) with grade models built on
:class:`Grade`; :mod:`rescue.scoring.judge` asks the judges and fills ``record.scores`` and
``record.judge``. The counts below read ``record.judge`` back when a task aggregates, so aggregation
needs nothing from the scoring layer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, field_validator

from rescue.metrics.agreement import alpha
from rescue.tasks.base import PredictionRecord


# The last line of every judge rubric prompt.
ANSWER_RULE = "Return only the JSON object, no markdown, no text before or after it."


def whole_number(value: Any) -> int:
    """A grade as judges send it (4, "4" or 4.0); 4.5 or "four" is not a Likert grade and is asked again."""
    if isinstance(value, bool):
        raise ValueError("must be an integer, not a boolean")  # noqa: TRY004 - pydantic turns only ValueError into a validation error
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    raise ValueError(f"must be an integer, got {value!r}")


# A rubric score field: ``score: WholeNumber = Field(ge=1, le=5)``.
WholeNumber = Annotated[int, BeforeValidator(whole_number)]


class Grade(BaseModel):
    """Base of a rubric's answer model: ``verdict`` and ``notes`` besides the scores."""

    model_config = ConfigDict(extra="ignore")
    verdict: str = ""
    notes: str = ""

    @field_validator("verdict", "notes", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value)

    def scores(self) -> dict[str, float]:
        """The record.scores entries this grade gives."""
        raise NotImplementedError


# --- what judging stored, read back for aggregation -------------------------------------------------------


def judge_failure_count(records: Iterable[PredictionRecord]) -> int:
    """Instances on which no judge gave a valid grade although at least one judge was asked."""
    count = 0
    for record in records:
        judged = record.judge
        if judged is not None and judged.judges and not any(g.graded for g in judged.judges.values()):
            count += 1
    return count


def judge_request_failures(records: Iterable[PredictionRecord]) -> int:
    """(instance, judge) grades that failed, over all judges."""
    return sum(record.judge.failures for record in records if record.judge is not None)


def inter_judge_alpha(records: Iterable[PredictionRecord], key: str) -> float | None:
    """Krippendorff's alpha (ordinal) among the judges of a run on score ``key``; ``None`` with fewer than
    two judges. Only instances the judges actually graded count (not failed predictions' minimum scores)."""
    columns: list[dict[str, float]] = []
    names: set[str] = set()
    for record in records:
        ratings = {} if record.judge is None else record.judge.own_scores(key)
        if ratings:
            columns.append(ratings)
            names.update(ratings)
    if len(names) < 2:
        return None
    ordered = sorted(names)
    return alpha([[column.get(name) for column in columns] for name in ordered])
