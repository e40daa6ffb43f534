"""Machinery shared by the two generative tasks, ER and VP (protocol §7, §8).

- checkpoint selection: client turns only, at most N evenly spaced checkpoints per sample;
- the checkpoint records (the current turn and its prior context) and their message, through the one prompt
  builder (``prompts``); answers go through the one parse pipeline (``parsing.parse_answer``);
- aggregation: the mean of every per-instance score, failures counted at the floor of the scale.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict, TypeVar, Unpack

from rescue.data.evenly import pick_evenly as pick_evenly  # ER's and VP's checkpoints
from rescue.data.models import NON_PERSON_LABELS, Row, Sample
from rescue.data.taxonomy import INTENSITY_SCALE
from rescue.tasks import prompts
from rescue.tasks.prompts import PromptParts
from rescue.tasks.base import Instance, InstanceExtra, PredictionRecord
from rescue.tasks.parsing import AnswerError, Matching, local_id
from rescue.tasks.render import EncodedRows, RawJSON, RowCache, dumps, encode_row
from rescue.tasks.rubric import (
    inter_judge_alpha,
    judge_failure_count,
    judge_request_failures,
)

T = TypeVar("T")

_FIRST_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_WORD = re.compile(r"[A-Za-z0-9']+")


# --- checkpoint selection -------------------------------------------------------------------------


def is_client_speaker(speaker: str) -> bool:
    """A person other than the therapist; the group labels Couple/Family are not a person."""
    speaker = speaker.strip()
    return bool(speaker) and speaker not in NON_PERSON_LABELS


def word_count(text: str) -> int:
    """Words as the authors count them: runs of ``[A-Za-z0-9']``."""
    return len(_WORD.findall(text or ""))


def early_cutoff(total_rows: int, fraction: float) -> int:
    """How many leading rows ER skips: ceil(fraction * N), leaving at least the last row (protocol §7.1)."""
    if total_rows <= 1:
        return 0
    return min(total_rows - 1, math.ceil(fraction * total_rows))


def read_intensity(value: Any) -> int | None:
    """An intensity (gold or predicted) as the authors read it: ``int(round(float(x)))`` within the scale
    (0-10), else None."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = round(float(value))
    except (TypeError, ValueError, OverflowError):  # not a number, NaN, infinity
        return None
    return number if INTENSITY_SCALE[0] <= number <= INTENSITY_SCALE[1] else None


def answer_intensity(value: Any) -> int:
    """A model's intensity: a number, or text holding one ("7", "7/10", "about 6"); raises AnswerError."""
    if isinstance(value, bool) or value is None:
        raise AnswerError(f"intensity {value!r} is not a number")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        match = _FIRST_NUMBER.search(str(value))
        if not match:
            raise AnswerError(f"intensity {value!r} holds no number")
        number = float(match.group())
    if not math.isfinite(number):
        raise AnswerError(f"intensity {value!r} is not a finite number")
    rounded = round(number)
    low, high = INTENSITY_SCALE
    if not low <= rounded <= high:
        raise AnswerError(f"intensity {value!r} is outside {low}-{high}")
    return rounded


def make_instance(task: str, sample: Sample, row: Row, gold: Any, **extra: Unpack[InstanceExtra]) -> Instance:
    """An instance at ``row`` of ``sample``, with the row's speaker among its extras."""
    return Instance.at_row(task, sample, row.row_index, gold, extra={"speaker": row.speaker, **extra})


# --- prompts --------------------------------------------------------------------------------------


class CheckpointItem(TypedDict):
    """One checkpoint of an ER/VP prompt, shown in this key order."""

    checkpoint_id: str  # the instance's local id, which the answer echoes
    current_turn: RawJSON  # the instance's own row as the prompt encodes it
    prior_context: RawJSON  # the rows before it



def checkpoint_records(
    batch: list[Instance], mode: str, k: int, participants: list[str] | None = None, cache: RowCache | None = None
) -> list[CheckpointItem]:
    """One JSON record per checkpoint: its id, the current turn rendered by mode, and its prior rows."""
    if not batch:
        return []
    records: list[CheckpointItem] = []
    encoded = EncodedRows(batch[0].sample, mode, cache)  # a batch holds one sample
    for instance in batch:
        sample = instance.sample
        row = sample.row(instance.row_index)
        # Without participants the current turn is the row as every context shows it: encoded once.
        current = (encoded.row(row.row_index) if participants is None
                   else RawJSON(encode_row(row, mode, participants=participants)))
        records.append(
            {
                "checkpoint_id": local_id(instance),
                "current_turn": current,
                "prior_context": encoded.context(row.row_index, k),
            }
        )
    return records


def checkpoint_parts(
    lines: Iterable[str], batch: list[Instance], mode: str, schema: Mapping[str, object], records: list[CheckpointItem]
) -> PromptParts:
    """The parts of the single user message every ER/VP request sends: one line per instruction and the mode
    line, then the answer schema and the sample, then the checkpoints as compact JSON."""
    sample = prompts.batch_sample(batch)
    answer_format = (
        (
            "Answer with one JSON object only, no markdown, in exactly this shape, one item per checkpoint, "
            "echoing each checkpoint_id:"
        ),
        dumps(schema),
        f"Sample: {sample.sample_id}",
    )
    return PromptParts((*lines, prompts.mode_line(mode)), answer_format, tuple(records),
                       items_label="Checkpoints: ", separator="\n", id_key="checkpoint_id", current_key="current_turn")


# The generative answers have no ids in a keyed form, but may come without ids: match by row or order.
MATCHING = Matching(unlabelled=True)


# --- aggregation ----------------------------------------------------------------------------------


def aggregate_scores(
    records: list[PredictionRecord], floors: Mapping[str, float], judge_key: str
) -> dict[str, float | int | None]:
    """``instances``, ``failures`` and the mean of every per-instance score key that any record carries.

    A failed record scores the key's floor (``floors``), whether or not a score was stored for it, so a
    failure is never better than the worst real answer. A successful record without a value for a key
    (e.g. the judge could not grade it) is left out of that key's mean and counted in ``<key>_unscored``.
    Keys that no record carries are absent: a run without a judge reports no judge score.
    """
    result: dict[str, float | int | None] = {
        "instances": len(records),
        "failures": sum(1 for r in records if not r.ok),
    }
    keys = sorted({key for r in records for key, value in r.scores.items() if value is not None})
    for key in keys:
        values: list[float] = []
        unscored = 0
        for record in records:
            value = record.scores.get(key)
            if not record.ok and key in floors:
                values.append(floors[key])
            elif value is not None:
                values.append(float(value))
            else:
                unscored += 1
        result[key] = sum(values) / len(values) if values else None
        if unscored:
            result[f"{key}_unscored"] = unscored
    if any(r.judge is not None and r.judge.judges for r in records):  # a judge was asked (not a "no judge" note)
        result.update(_judge_counts(records, judge_key))
    return result


def _judge_counts(records: list[PredictionRecord], main_key: str) -> dict[str, float | int]:
    """How the judge fared in this scope; ``main_key`` is the score the rubric's judges give."""
    counts: dict[str, float | int] = {
        "judge_failures": judge_failure_count(records),
        "judge_request_failures": judge_request_failures(records),
    }
    # A failed prediction is never sent to the judge (it scores the floor): it is not "judged".
    counts["judged"] = sum(1 for r in records if r.ok and r.scores.get(main_key) is not None)
    alpha = inter_judge_alpha(records, main_key)
    if alpha is not None:
        counts["inter_judge_alpha"] = alpha
    return counts
