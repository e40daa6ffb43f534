"""The one prompt builder of every task: checks, context sentence, mode line, schema and message.

Every request is ONE user message (no system message: the authors send none, and some chat templates
drop or reject one), built the same way for every model: task, label set or answer rules, context and
evidence rules, the JSON answer schema, then the items as compact JSON. A request a task cannot render
(a bad context size, an empty batch, a batch of several samples) is one error, :class:`PromptError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rescue.data.shapes import ChatMessage, JsonObject
from rescue.errors import PromptError as PromptError
from rescue.data.models import Sample
from rescue.tasks.render import MODE_EVIDENCE, dumps, write_json

SETTING = {"couple": "a couples-therapy session", "family": "a family-therapy session"}
CLIENTS = {"couple": "the partners", "family": "the family members"}


def resolve_context_size(requested: int | None, default: int) -> int:
    """The context size a prompt uses: ``requested`` (a run's or a caller's), the task's ``default`` when it
    is None; -1 (all prior rows), 0 or a positive count, PromptError otherwise."""
    k = default if requested is None else requested
    if k < -1:
        raise PromptError(f"context size {k} is invalid: use -1 (all prior rows), 0 (none) or a positive number")
    return k


def context_sentence(k: int, *, anchor: str, purpose: str | None = None) -> str:
    """What ``prior_context`` holds for context size ``k``; ``anchor`` names the row it stops before.

    With ``purpose`` (what the context is for), the sentence speaks of each checkpoint's context before
    its current turn, in the generative tasks' wording (the turn itself is shown; ``anchor`` unused).
    """
    if purpose is not None:
        if k == 0:
            return "Only the current turn is given; there is no earlier context."
        if k < 0:
            span = "all earlier rows of the session"
        elif k == 1:
            span = "the row just before the current turn"
        else:
            span = f"at most the {k} rows just before the current turn"
        return f"Each checkpoint's prior_context holds {span}; {purpose}"
    if k == 0:
        return "prior_context is empty: no earlier rows are given."
    if k < 0:
        return f"prior_context holds every earlier row of the session, up to (not including) {anchor}."
    if k == 1:
        return f"prior_context holds at most the one row just before {anchor}."
    return f"prior_context holds at most the {k} rows just before {anchor}."


def mode_line(mode: str) -> str:
    """The prompt line that says which evidence the mode shows."""
    return f"Mode: {mode}. {MODE_EVIDENCE[mode]}"


def participants_line(sample: Sample) -> str:
    """The prompt line naming the participants, the therapist and the group label."""
    people = ", ".join(sample.participants) or "(not listed)"
    return f"Participants: {people}; plus the Therapist. Group label: {sample.group_label}."


def schema_block(example_items: list[JsonObject]) -> str:
    """The answer schema section; a task writes its own once, as it is the same in all its prompts."""
    example = dumps({"predictions": example_items})
    return (
        "Answer with one JSON object and nothing else (no markdown), in this schema:\n"
        f"{example}\n"
        "Give exactly one prediction per item and copy each item's id exactly."
    )


def batch_sample(batch: Sequence[Any]) -> Sample:
    """The one sample a batch of instances comes from; a batch never mixes samples."""
    if not batch:
        raise PromptError("cannot render an empty batch")
    sample: Sample = batch[0].sample
    if any(instance.sample is not sample and instance.sample_id != sample.sample_id for instance in batch):
        raise PromptError(f"a batch must hold instances of one sample only, got {sorted({i.sample_id for i in batch})}")
    return sample


def user_message(sections: Sequence[str], items: list[JsonObject], *, items_label: str = "Items:\n",
                 separator: str = "\n\n") -> list[ChatMessage]:
    """The request: the non-empty ``sections`` and then ``items_label`` + the items as compact JSON, joined
    by ``separator`` (the generative tasks' layout is one line per section, items after ``Checkpoints: ``)."""
    shown = [section for section in sections if section]
    parts = [separator.join(shown), separator, items_label] if shown else [items_label]
    write_json(items, parts)  # the rows' JSON is copied once, into the message itself
    return [{"role": "user", "content": "".join(parts)}]
