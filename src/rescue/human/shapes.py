"""The shapes of the dicts the human reference passes between its modules and returns from its routes, each
written once: a person's queue, their answers, the page of an instance, and the export's time and agreement
summary (``human.json``)."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from rescue.tasks.render import RenderedRow


class BenchQueueEntry(TypedDict):
    """One instance of a person's queue, whether they answered it (never anyone else's answer) and whether it is
    locked (they were shown what it hides)."""

    task: str
    number: int
    answered: bool
    locked: bool


class LockView(TypedDict):
    """Why an instance is locked for a person: the instance whose page revealed what it hides (``task/number``),
    and when they were first shown it."""

    by: str
    at: str


class BenchShown(TypedDict):
    """A person's own answer so far (None before the first), its version, its lock, and whether the page shows
    the instance (not when it is locked and was never answered)."""

    value: Any  # in the task's answer shape (rescue.human.benchmark.checked_answer)
    version: int
    locked: LockView | None
    shown: bool


class Reveals(TypedDict):
    """What opening an instance's page would lock of the person's queue (``task/number`` keys)."""

    unanswered: list[str]
    answered: list[str]


class GivenAnswer(TypedDict):
    """A stored answer (:func:`rescue.human.store.all_answers`), for the export as a run."""

    task: str
    number: int
    user: str
    value: Any  # in the task's answer shape (rescue.human.benchmark.checked_answer)
    seconds: float | None  # from first shown to first answer


class TimeStats(TypedDict):
    """How long one person took over one task's instances (``human.json``)."""

    answered: int
    median_s: float
    mean_s: float


class Disagreement(TypedDict):
    """An instance people answered far apart, with each person's answer."""

    number: int
    instance_id: str
    answers: dict[str, Any]


class TaskAgreement(TypedDict):
    """Agreement between people on one task (``human.json``)."""

    units: int
    raters: int
    alpha: float | None
    alpha_of: str
    exact_agreement: float | None
    disagreements: list[Disagreement]
    token_overlap: NotRequired[float | None]
    note: NotRequired[str]


class PersonRecord(TypedDict):
    """One person in ``human.json``: their group ("" for none) and the instance ids assigned and answered, per
    task (answered of assigned is their coverage)."""

    group: str
    assigned: dict[str, list[str]]
    answered: dict[str, list[str]]


class GroupFigures(TypedDict):
    """What a report says of a group of people (``all``: everyone): how many, items per person, coverage, time per
    item, and agreement between them per task (the ceiling models are read against)."""

    people: int
    members: list[str]
    assigned_per_person: float
    answered_per_person: float
    coverage: float | None
    median_s_per_item: float | None
    agreement: dict[str, dict[str, Any]]


class PeopleBlock(TypedDict):
    """``human.json``'s ``people``: the protocol, the instances people were given (the report restricts models to
    them), each person, each panel system's people, each group's figures, and answers left out as given late."""

    protocol: str
    subset: dict[str, list[str]]
    people: dict[str, PersonRecord]
    panels: dict[str, list[str]]
    groups: dict[str, GroupFigures]
    left_out_late: int


class DisputedItem(TypedDict):
    """An instance people answered differently (``disputed.jsonl`` beside the exported run)."""

    task: str
    number: int
    instance_id: str
    answers: dict[str, Any]
    groups: dict[str, str]


class HumanSummary(TypedDict):
    """Time and agreement of the people who took a benchmark, and who they are (``human.json`` beside the exported
    run)."""

    instances: dict[str, int]
    answered: dict[str, int]
    per_instance: int
    time: dict[str, dict[str, TimeStats]]
    agreement: dict[str, TaskAgreement]
    people: PeopleBlock


class LabelDefinition(TypedDict):
    """A label of an instance's closed set with its definition as the prompt states it."""

    label: str
    definition: str


class Frame(TypedDict):
    """A video frame an instance's prompt carries: its caption and its data URL."""

    caption: str
    src: str


class FramesView(TypedDict):
    """The media an instance's prompt carries, as the page shows them: the note and each frame."""

    note: str
    frames: list[Frame]


class BenchPage(TypedDict):
    """What the page of one benchmark instance shows (:func:`rescue.human.benchmark.page`): made from the
    instance's prompt only, never from its sample."""

    task: str
    title: str
    number: int
    total: int
    answer_kind: str
    rank: int
    labels: list[LabelDefinition]
    intensity: list[int]
    people: list[str]
    speaker: str  # the primary speaker of the prompt's row of the instance ("" where it shows none)
    instructions: str
    statement: str  # the instructions' first paragraph (what is predicted, and whose turn), shown unfolded
    context: list[RenderedRow]  # the prompt's prior rows, as it encodes them
    current: RenderedRow | None  # the prompt's row of the instance itself
    given: dict[str, str | int]  # the prompt item's other plain values (support_target ...)
    media: FramesView | None


class QueuePosition(TypedDict):
    """Where a benchmark instance sits in its person's queue, with links to its neighbours."""

    position: int
    of: int
    answered: int
    previous: str | None
    next: str | None
    next_open: str | None
