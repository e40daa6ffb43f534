"""The one prompt builder of every task: checks, context sentence, mode line, schema and message.

Every request is ONE user message (no system message: the authors send none, and some chat templates
drop or reject one), built the same way for every model: task, label set or answer rules, context and
evidence rules, the JSON answer schema, then the items as compact JSON. A request a task cannot render
(a bad context size, an empty batch, a batch of several samples) is one error, :class:`PromptError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from rescue.data.shapes import ChatMessage, JsonObject
from rescue.errors import PromptError as PromptError
from rescue.data.models import Sample
from rescue.data.taxonomy import Label
from rescue.tasks.render import MODE_EVIDENCE, RenderedRow, dumps, write_json

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


def schema_block(example_items: Sequence[Mapping[str, object]]) -> str:
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


def user_message(sections: Sequence[str], items: Sequence[Mapping[str, object]], *, items_label: str = "Items:\n",
                 separator: str = "\n\n") -> list[ChatMessage]:
    """The request: the non-empty ``sections`` and then ``items_label`` + the items as compact JSON, joined
    by ``separator`` (the generative tasks' layout is one line per section, items after ``Checkpoints: ``)."""
    shown = [section for section in sections if section]
    parts = [separator.join(shown), separator, items_label] if shown else [items_label]
    write_json(items, parts)  # the rows' JSON is copied once, into the message itself
    return [{"role": "user", "content": "".join(parts)}]


@dataclass(frozen=True)
class PromptParts:
    """The parts of what a task's request shows, as data: what a reader is told (``instructions``: the task, the
    participants, the labels, the context and evidence rules), how to write the answer (``answer_format``: the
    schema, which a person answering in a page does not need), one record per instance (``items``: its id, the
    values it gives, its context rows and, where the task shows it, its own row) and the closed set with each
    label's definition (``labels``). :meth:`message` is the request itself; the human reference's page is made
    from the same parts (rescue.human.benchmark), never by cutting the message's text apart."""

    instructions: tuple[str, ...]
    answer_format: tuple[str, ...]
    items: tuple[Mapping[str, object], ...]  # each task's own item shape (ItpItem, RankingItem, CheckpointItem ...)
    labels: tuple[Label, ...] = ()
    items_label: str = "Items:\n"
    separator: str = "\n\n"
    # Which key of an item holds what: the id the model echoes, the prior rows, and the instance's own row where
    # the task shows it (ITP's decision_row, ER/VP's current_turn; None for RPP, STP, SSP, which hide it). Every
    # other plain value of an item is a fact the prompt gives (``given``).
    id_key: str = "id"
    context_key: str = "prior_context"
    current_key: str | None = None

    @property
    def instructions_text(self) -> str:
        """The instructions as the message states them: the non-empty sections, joined."""
        return self.separator.join(section for section in self.instructions if section)

    def message(self) -> list[ChatMessage]:
        """The one user message of the request (:func:`user_message` of the parts, in this order)."""
        return user_message([*self.instructions, *self.answer_format], list(self.items), items_label=self.items_label,
                            separator=self.separator)

    def item(self, index: int = 0) -> JsonObject:  # open: the keys are the task's own, named by the *_key fields
        """The ``index``-th item as plain JSON values (its rows decoded from the encoding the message carries)."""
        value: JsonObject = json.loads(dumps(self.items[index]))
        return value

    def context(self, index: int = 0) -> list[RenderedRow]:
        """The prior rows the ``index``-th item shows, oldest first, each its prompt record (a task's rows are
        :class:`rescue.tasks.render.EncodedRows`, so each is a :class:`RenderedRow`)."""
        rows = self.item(index).get(self.context_key)
        return [cast(RenderedRow, row) for row in rows if isinstance(row, dict)] if isinstance(rows, list) else []

    def current(self, index: int = 0) -> RenderedRow | None:
        """The ``index``-th item's own row as it shows it (None where the task does not show it)."""
        row = self.item(index).get(self.current_key) if self.current_key is not None else None
        return cast(RenderedRow, row) if isinstance(row, dict) else None

    def given(self, index: int = 0) -> dict[str, str | int]:
        """The ``index``-th item's other plain values, the facts it gives (RPP's ``target_speaker``, SSP's
        ``support_target``), in the prompt's order."""
        roles = (self.id_key, self.context_key, self.current_key)
        return {key: value for key, value in self.item(index).items()
                if key not in roles and isinstance(value, (str, int))}


@runtime_checkable
class ShowsParts(Protocol):
    """A task whose prompt is made from :class:`PromptParts` it exposes (every task of rescue's own; a task from
    elsewhere may not, and then only models can take it)."""

    def parts(self, batch: list[Any], options: Any) -> PromptParts:
        """The parts of the prompt that asks about ``batch``."""
        ...
