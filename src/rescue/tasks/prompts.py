"""Prompt pieces shared by the classification tasks (ITP, RPP, STP, SSP).

Every request is ONE user message (no system message: the authors send none, and some chat templates
drop or reject one), built the same way for every model: task, closed label set with definitions,
context and evidence rules, the JSON answer schema, then the items as compact JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rescue.data.errors import RescueError
from rescue.data.models import Sample
from rescue.data.taxonomy import Label
from rescue.tasks.render import MODE_EVIDENCE, dumps

SETTING = {"couple": "a couples-therapy session", "family": "a family-therapy session"}
CLIENTS = {"couple": "the partners", "family": "the family members"}


def label_block(labels: Sequence[Label]) -> str:
    """One bullet per label with its definition and, when known, when to use it and when not."""
    lines = []
    for label in labels:
        lines.append(f"- {label.name}: {label.definition}")
        if label.use_when:
            lines.append(f"  Use when: {'; '.join(label.use_when)}.")
        if label.do_not_use_when:
            lines.append(f"  Do not use when: {'; '.join(label.do_not_use_when)}.")
    return "\n".join(lines)


def context_size(options_k: int | None, default: int) -> int:
    """The context size to use: the task's default when None; -1 (all prior rows), 0 or a positive count."""
    k = default if options_k is None else options_k
    if k < -1:
        raise RescueError(f"context size {k} is invalid: use -1 (all prior rows), 0 (none) or a positive number")
    return k


def context_sentence(k: int, *, anchor: str) -> str:
    """What ``prior_context`` holds for context size ``k``; ``anchor`` names the row it stops before."""
    if k == 0:
        return "prior_context is empty: no earlier rows are given."
    if k < 0:
        return f"prior_context holds every earlier row of the session, up to (not including) {anchor}."
    if k == 1:
        return f"prior_context holds at most the one row just before {anchor}."
    return f"prior_context holds at most the {k} rows just before {anchor}."


def mode_line(mode: str) -> str:
    return f"Mode: {mode}. {MODE_EVIDENCE[mode]}"


def participants_line(sample: Sample) -> str:
    people = ", ".join(sample.participants) or "(not listed)"
    return f"Participants: {people}; plus the Therapist. Group label: {sample.group_label}."


def schema_block(example_items: list[dict[str, Any]]) -> str:
    example = dumps({"predictions": example_items})
    return (
        "Answer with one JSON object and nothing else (no markdown), in this schema:\n"
        f"{example}\n"
        "Give exactly one prediction per item and copy each item's id exactly."
    )


def batch_sample(batch: Sequence[Any]) -> Sample:
    """The one sample a batch of instances comes from; a batch never mixes samples."""
    if not batch:
        raise ValueError("cannot render an empty batch")
    sample = batch[0].sample
    if any(instance.sample_id != sample.sample_id for instance in batch):
        raise ValueError("a batch must hold instances of one sample only")
    return sample


def user_message(sections: Sequence[str], items: list[dict[str, Any]]) -> list[dict[str, str]]:
    text = "\n\n".join(s for s in sections if s) + "\n\nItems:\n" + dumps(items)
    return [{"role": "user", "content": text}]
