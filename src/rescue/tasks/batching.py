"""Forming requests: which instances share one prompt.

A batch holds instances of one sample, consecutive, at most ``size`` of them (the authors' grouping; size 0
is the whole sample). Batching must never show the model what an item hides: an ITP item hides the row
after its decision row (its speaker is the answer), an RPP, STP or SSP item hides its own target row (its
text, targets and strategy give the gold away), and the prior context of a later item in the same sample
can hold exactly those rows. :func:`plan_batches` therefore splits an authors' batch wherever one item
would show another item's hidden row, and counts the batches it split.

What each task hides and shows is its declaration (``hidden``, ``shows_row``); the rows an item shows are
those its prompt renders: the context window before its row (``render.context_window``), plus the row itself
where the task shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from rescue.tasks.base import Instance, Task
from rescue.tasks.render import context_window


def group_batches(instances: Sequence[Instance], size: int) -> list[list[Instance]]:
    """Consecutive instances of one sample, at most ``size`` per batch (0: the whole sample)."""
    batches: list[list[Instance]] = []
    current: list[Instance] = []
    for instance in instances:
        if current and (current[0].sample_id != instance.sample_id or (size > 0 and len(current) >= size)):
            batches.append(current)
            current = []
        current.append(instance)
    if current:
        batches.append(current)
    return batches


def hidden_rows(task: Task, instance: Instance) -> set[int]:
    """The rows whose content would give ``instance``'s answer away."""
    hidden = task.declaration.hidden
    if hidden == "row":
        return {instance.row_index}
    if hidden == "next_row":
        return {instance.row_index + 1}
    return set()


def shown_rows(task: Task, instance: Instance, k: int) -> set[int]:
    """The rows ``instance``'s part of a prompt renders with ``k`` rows of context (the resolved context size,
    :func:`rescue.tasks.prompts.resolve_context_size`; -1: all before)."""
    current = instance.row_index
    window = context_window(current, k)
    rows = set(range(window.start + 1, window.stop + 1))
    if task.declaration.shows_row:
        rows.add(current)
    return rows


def _shows(task: Task, instance: Instance, k: int, row: int) -> bool:
    """Whether ``row`` is in :func:`shown_rows` of ``instance``, without building that set (with all prior
    rows as context it holds the whole sample so far, for every item of every batch)."""
    current = instance.row_index
    window = context_window(current, k)
    return window.start < row <= window.stop or (task.declaration.shows_row and row == current)


class _Part:
    """One batch being formed: its items and the rows they hide."""

    __slots__ = ("items", "hidden")

    def __init__(self) -> None:
        self.items: list[Instance] = []
        self.hidden: list[int] = []

    def fits(self, task: Task, instance: Instance, hidden: set[int], k: int) -> bool:
        """Whether ``instance`` (hiding ``hidden``) can join: it shows no row another item hides, and
        no other item shows a row it hides."""
        return (not any(_shows(task, instance, k, row) for row in self.hidden)
                and not any(_shows(task, other, k, row) for other in self.items for row in hidden))

    def add(self, instance: Instance, hidden: set[int]) -> None:
        self.items.append(instance)
        self.hidden += hidden


class BatchingSummary(TypedDict):
    """How one task's requests were formed, as ``results.json["batching"]`` records it."""

    batch_size: int
    batches: int
    grouped_batches: int
    split_batches: int
    leak_free: Literal[True]


@dataclass
class BatchPlan:
    """The batches of one task, and how many of the authors' batches had to be split."""

    size: int
    batches: list[list[Instance]] = field(default_factory=list)
    grouped: int = 0  # batches the plain grouping would send
    split: int = 0  # of those, how many were split so that no item shows another's hidden row

    def summary(self) -> BatchingSummary:
        """The plan as results.json records it: batch size and how many batches were grouped or split."""
        return {"batch_size": self.size, "batches": len(self.batches), "grouped_batches": self.grouped,
                "split_batches": self.split, "leak_free": True}


def plan_batches(task: Task, instances: Sequence[Instance], size: int, k: int) -> BatchPlan:
    """The authors' grouping, each group split (first fit, order kept) so that no batch leaks."""
    plan = BatchPlan(size)
    for group in group_batches(instances, size):
        parts: list[_Part] = []
        for instance in group:
            hidden = hidden_rows(task, instance)
            home = next((part for part in parts if part.fits(task, instance, hidden, k)), None)
            if home is None:
                home = _Part()
                parts.append(home)
            home.add(instance, hidden)
        plan.grouped += 1
        plan.split += len(parts) > 1
        plan.batches += [part.items for part in parts]
    return plan
