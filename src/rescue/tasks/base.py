"""The contract every task fulfils, and the records that flow between layers.

A task is one module (``rescue.tasks.itp`` ..., or a module of another package, see
:mod:`rescue.tasks.registry`) that registers one object satisfying :class:`Task`:

- ``build(samples, **options)``: instances, deterministic, no randomness;
- ``render(batch, options)``: the chat messages of one request (one or more instances of ONE sample);
- ``parse(raw, batch)``: a :class:`Prediction` for every instance of the batch (ok or a recorded failure);
- ``format_answer(batch, values)``: the JSON answer a perfect model would give, in the task's own answer
  schema (used by offline baselines and by scripted test servers, so both go through ``parse``);
- ``instance_scores(record)``: per-instance scores (decomposable metrics) stored with each prediction;
- ``aggregate(records)``: the task's metrics over a set of prediction records (one scope: all, a
  scenario or a sample), always including ``instances`` and ``failures``;
- ``declaration``: every fact of the task: name, title, request defaults, answer key, build options,
  metrics, outcome kind, answer shape and scorers (:class:`rescue.tasks.spec.Declaration`), read by every
  layer above instead of the task's name. ``name``, ``title``, ``default_context_size``,
  ``default_batch_size`` and ``max_tokens`` read it (:class:`DeclaredTask` gives them).

Failures are never silently dropped and never scored as right: a record whose ``status`` is not "ok"
counts in the denominator and scores as wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, TypedDict, get_args, runtime_checkable

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    with_config,
)
from typing_extensions import TypedDict as ModelTypedDict  # pydantic reads a TypedDict from here before 3.12

from rescue.data.shapes import ChatMessage
from rescue.data.choices import MODES as MODES, PARSE_POLICIES as PARSE_POLICIES
from rescue.data.choices import Mode as Mode, ParsePolicy as ParsePolicy
from rescue.data.models import GROUP_LABELS, Sample
from rescue.tasks.render import RowCache
from rescue.tasks.spec import Declaration

# Modes that send the media of each instance's context (rescue.video) besides the transcript.
VIDEO_MODES = ("video", "video+cues")

# budget_exhausted: the answer budget ran out (finish_reason "length") before a usable answer, most often
# spent thinking; a failure like the others, counted apart so the run can name its fix (--budget-retry).
Status = Literal["ok", "parse_error", "missing", "request_error", "refused", "budget_exhausted"]
# Every outcome a prediction record can have, read from Status: tests and readers take them from here.
STATUSES: tuple[str, ...] = get_args(Status)


class InstanceExtra(TypedDict, total=False):
    """``Instance.extra``: what a task's ``build`` notes about an instance for its own ``render`` and ``parse``, for
    the offline baselines and for the run plan. Each key is set by the tasks named; none is required."""

    speaker: str  # ER, VP: the speaker of the instance's row
    participants: list[str]  # VP: the people a viewpoint can be about (rescue.tasks.vp.participants)
    gold_field: str  # RPP: the row field the gold label was read from (rpp_gold)
    gold_source: str  # STP: the strategy field the support target was read from
    support_target: str  # SSP: the support target, shown in the prompt
    target_source: str  # SSP: the strategy field the support target was read from


@dataclass(slots=True)  # a run holds every instance (135,000 at ten times the release): no __dict__ each
class Instance:
    """One thing to predict. ``instance_id`` never encodes the gold label."""

    task: str
    instance_id: str
    sample: Sample = field(repr=False)
    row_index: int  # the row being predicted (ITP: the decision row t; the therapist may enter at t+1)
    gold: Any
    labels: list[str] = field(default_factory=list)  # the closed candidate set, empty for open tasks
    extra: InstanceExtra = field(default_factory=lambda: InstanceExtra())

    @classmethod
    def at_row(cls, task: str, sample: Sample, row_index: int, gold: Any, *, local_id: str | None = None,
               labels: list[str] | None = None, extra: InstanceExtra | None = None) -> Instance:
        """An instance about one row, with the id contract ``"{sample_id}#{local_id}"`` (default ``row<k>``)."""
        return cls(task, f"{sample.sample_id}#{local_id or f'row{row_index}'}", sample, row_index, gold,
                   list(labels or []), (extra or InstanceExtra()).copy())

    @property
    def sample_id(self) -> str:
        """The id of the instance's sample."""
        return self.sample.sample_id

    @property
    def scenario(self) -> str:
        """The scenario of the instance's sample."""
        return self.sample.scenario


@dataclass
class RenderOptions:
    """How a prompt is rendered: the mode, the context size, and a cache of encoded rows."""

    mode: Mode = "dialogue"
    # The requested context size: None takes the task's default, -1 all prior rows. Everywhere, ``context_size``
    # is such a request and ``k`` the size it resolves to (rescue.tasks.prompts.resolve_context_size).
    context_size: int | None = None
    # Encoded rows reused across renders (rescue.tasks.render.RowCache); None: encode per render. It never
    # changes a prompt's bytes, only how often a row is encoded.
    rows: RowCache | None = field(default=None, compare=False, repr=False)


@with_config(ConfigDict(extra="allow"))  # a note rescue does not know is kept, never dropped on reading
class LenientNotes(ModelTypedDict, total=False):
    """What ``--parse lenient`` let through to read an answer (``Prediction.lenient``, ``PredictionRecord.lenient``);
    a task's reader writes it into the notes it is given."""

    dropped: list[str]  # labels a ranking named that are not in the task's set (rescue.tasks.ranking)
    read_from_prose: str  # the prose a yes/no was read from, cut to 200 characters (rescue.tasks.itp)


@dataclass(slots=True)  # a run holds one per instance until its pair is done
class Prediction:
    """The parsed answer for one instance. ``value`` is None unless ``status`` is "ok".

    Value shapes: ITP "yes"/"no"; RPP/STP/SSP a ranked list of labels (at most 3, no padding);
    ER ``{"emotion": str, "intensity": int}``; VP a list of ``{"source", "target", "viewpoint"}``.
    """

    instance_id: str
    status: Status
    value: Any = None
    raw: str | None = None
    error: str = ""
    lenient: LenientNotes | None = None  # what lenient parsing did to get ``value``
    reasoning: str | None = None  # a thinking model's reasoning, apart from its answer (None: none or not kept)


JudgeStatus = Literal["ok", "failed", "minimum"]


class JudgeGrade(BaseModel):
    """One judge's grade of one prediction: ``ok`` (graded), ``failed`` (no valid grade after every attempt) or
    ``minimum`` (the prediction itself failed and takes the rubric's minimum without asking the judge)."""

    model_config = ConfigDict(extra="allow")

    status: JudgeStatus
    scores: dict[str, float] = Field(default_factory=dict)
    verdict: str = ""
    notes: str = ""
    attempts: int = 0
    error: str = ""

    @property
    def graded(self) -> bool:
        """A grade that counts: the judge's own (``ok``) or the minimum of a failed prediction."""
        return self.status in ("ok", "minimum")


class JudgeResults(BaseModel):
    """``PredictionRecord.judge``: every judge's grade of one prediction on one scale."""

    model_config = ConfigDict(extra="allow")

    scale: str = "likert"
    judges: dict[str, JudgeGrade] = Field(default_factory=dict)
    failures: int = 0  # judges that gave no valid grade
    note: str = ""  # why no judge graded (no judge ran, or the prediction failed)

    def own_scores(self, key: str) -> dict[str, float]:
        """Per judge its own score on ``key``, for the judges that really graded (not a failed prediction's
        minimum)."""
        return {name: grade.scores[key] for name, grade in self.judges.items()
                if grade.status == "ok" and key in grade.scores}


class PredictionRecord(BaseModel):
    """One line of ``predictions.jsonl``: an instance, what a model answered, and how it scored."""

    # Scorers fill records in place: what they assign is checked too (a judge block given as a dict is read
    # into JudgeResults, a malformed one fails where it is made, not in the report).
    model_config = ConfigDict(validate_assignment=True)

    model: str
    task: str
    instance_id: str
    sample_id: str
    scenario: str
    row_index: int
    gold: Any
    prediction: Any = None
    raw: str | None = None
    status: Status
    error: str = ""
    scores: dict[str, float | None] = Field(default_factory=dict)
    judge: JudgeResults | None = None  # ER/VP: judge ratings and notes, per judge model
    lenient: LenientNotes | None = None  # --parse lenient: what was dropped or read from prose (None: nothing)
    # A thinking model's reasoning (--no-store-reasoning: not kept). Left out of the JSON when None, so records
    # of models that do not think are written byte for byte as before.
    reasoning: str | None = None
    # --epochs N above 1: which asking of the instance this is (0 ... N-1) and the seed it sent; left out of the
    # JSON when None (a run of one epoch), so its records are written byte for byte as before.
    epoch: int | None = None
    seed: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the model's answer was read (status ok)."""
        return self.status == "ok"

    @field_validator("scenario")
    @classmethod
    def _known_scenario(cls, value: str) -> str:
        # The report names files by scenario: a record edited to "../x" must not reach a path.
        if value not in GROUP_LABELS:
            raise ValueError(f"{value[:40]!r} is not one of: {', '.join(GROUP_LABELS)}")
        return value

    @model_serializer(mode="wrap")
    def _without_absent_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in ("reasoning", "epoch", "seed"):
            if key in data and data[key] is None:
                del data[key]
        return data


@runtime_checkable
class Task(Protocol):
    """The task contract: a declaration, instances from samples, prompts, parsing, formatting and scoring."""

    declaration: ClassVar[Declaration]

    @property
    def name(self) -> str:
        """The task's name (itp, rpp, ...)."""

    @property
    def title(self) -> str:
        """The task's title for people."""

    @property
    def default_context_size(self) -> int:
        """The rows of context a prompt shows by default (-1: every prior row)."""

    @property
    def default_batch_size(self) -> int:
        """The authors' batch size (0: a whole sample per request)."""
        ...  # the authors' batch size (0 = the whole sample)

    @property
    def max_tokens(self) -> int:
        """The answer budget of one request."""

    def build(self, samples: list[Sample], **options: object) -> list[Instance]:
        """The task's instances in ``samples``, with their gold (``options``: the task's own build options)."""

    def render(self, batch: list[Instance], options: RenderOptions) -> list[ChatMessage]:
        """The messages that ask about ``batch``."""

    def parse(self, raw: str, batch: list[Instance], policy: ParsePolicy = "strict") -> dict[str, Prediction]:
        """The prediction of each instance of ``batch`` in the answer ``raw``, under ``policy``."""

    def format_answer(self, batch: list[Instance], values: dict[str, Any]) -> str:
        """An answer in the task's format holding ``values`` (what offline baselines send)."""

    def instance_scores(self, record: PredictionRecord) -> dict[str, float | None]:
        """The scores of one record."""

    def aggregate(self, records: list[PredictionRecord]) -> dict[str, float | int | None]:
        """The task's metrics over ``records``."""


class DeclaredTask:
    """Base of a task class: the facts the :class:`Task` contract names, read from its ``declaration``."""

    declaration: ClassVar[Declaration]

    @property
    def name(self) -> str:
        """The declared name."""
        return self.declaration.name

    @property
    def title(self) -> str:
        """The declared title."""
        return self.declaration.title

    @property
    def default_context_size(self) -> int:
        """The declared default context size."""
        return self.declaration.default_context_size

    @property
    def default_batch_size(self) -> int:
        """The declared default batch size."""
        return self.declaration.default_batch_size

    @property
    def max_tokens(self) -> int:
        """The declared answer budget."""
        return self.declaration.max_tokens


def lenient_counts(records: list[PredictionRecord]) -> dict[str, int]:
    """What lenient parsing did in a scope: labels dropped from rankings and answers read from prose
    (nothing, and no keys, under strict parsing)."""
    dropped = sum(len((r.lenient or {}).get("dropped") or []) for r in records)
    prose = sum(1 for r in records if (r.lenient or {}).get("read_from_prose"))
    counts = {}
    if dropped:
        counts["lenient_dropped_labels"] = dropped
        counts["lenient_instances_with_drops"] = sum(1 for r in records if (r.lenient or {}).get("dropped"))
    if prose:
        counts["lenient_read_from_prose"] = prose
    return counts


def gold_value(task: Task, instance: Instance) -> Any:
    """The gold as a prediction value (what a perfect model answers): ranking tasks answer a list with the gold
    label first; for the others (a label, an emotion, viewpoints) the gold already has the prediction's shape."""
    if task.declaration.answer == "ranking":
        gold = instance.gold
        return list(gold) if isinstance(gold, (list, tuple)) else [gold]
    return instance.gold


def make_record(task: Task, model: str, instance: Instance, prediction: Prediction, *, epoch: int | None = None,
                seed: int | None = None) -> PredictionRecord:
    """The record stored for one instance: what was asked, what came back, and the task's per-instance scores;
    ``epoch`` and ``seed``: which asking it is of a run of several epochs, and the seed it sent."""
    record = PredictionRecord(
        model=model,
        task=task.name,
        instance_id=instance.instance_id,
        sample_id=instance.sample_id,
        scenario=instance.scenario,
        row_index=instance.row_index,
        gold=instance.gold,
        prediction=prediction.value if prediction.status == "ok" else None,
        raw=prediction.raw,
        status=prediction.status,
        error=prediction.error,
        lenient=prediction.lenient if prediction.status == "ok" else None,
        reasoning=prediction.reasoning,
        epoch=epoch,
        seed=seed,
    )
    record.scores = task.instance_scores(record)
    return held(record)


def held(record: PredictionRecord) -> PredictionRecord:
    """``record`` made again, equal, with the one set of every field name that every held record shares (a run
    or a report holds all its records). pydantic's ``model_construct`` keeps the ``_fields_set`` it is given, and
    adds a field's name to it when the field is assigned: the name is already there, so the shared set never
    changes. Records are written whole (``model_dump_json``), never by what was set."""
    return PredictionRecord.model_construct(_EVERY_RECORD_FIELD, **dict(record))


_EVERY_RECORD_FIELD = set(PredictionRecord.model_fields)
