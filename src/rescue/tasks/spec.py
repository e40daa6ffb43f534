"""What a task declares about itself, once, for the layers above it to read.

A task module states as data: its name and title, its request defaults (context size, batch size, answer
budget), its answer key and the synonyms parsing may map, its build options (a pydantic model that rejects unknown names), its
metrics and which of them are leaderboard columns, headline numbers or right/wrong accuracies for
McNemar, its outcome kind, the shape of its answers (which the offline baselines and the test oracle
work from), its scorers (judge rubric, BERTScore texts) and the paper's instance counts. The engine,
report, baselines, CLI and test oracle iterate over the registry instead of naming tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from rescue.errors import TaskOptionError as TaskOptionError

OutcomeKind = Literal["right_wrong", "graded"]
# The shape of a prediction value: one label, a ranked list of labels, or free text graded by scorers.
AnswerKind = Literal["label", "ranking", "emotion", "viewpoints"]


class TaskOptions(BaseModel):
    """Base of every task's build options: unknown names are an error, never silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoOptions(TaskOptions):
    """The options of a task that takes none."""

    pass


@dataclass(frozen=True)
class Metric:
    """One key of a task's ``aggregate`` output as the report shows it.

    ``column``: a leaderboard column (the paper's Table 5); ``headline``: the task's one number in short
    boards and the pooled figure; ``compared``: tested between systems; ``right_wrong``: a mean of per-instance
    right/wrong outcomes (McNemar applies). ``percent`` values are shown x100.
    """

    key: str
    label: str
    column: bool = True
    headline: bool = False
    compared: bool = True
    right_wrong: bool = False
    percent: bool = True
    digits: int = 2


@dataclass(frozen=True)
class TextScorer:
    """What BERTScore compares for a task: the phrases of a prediction or gold value, and how several are
    matched (``single``: one phrase each; ``one_to_one``: an optimal assignment)."""

    texts: Callable[[Any], list[str]]
    matching: Literal["single", "one_to_one"] = "single"


@dataclass(frozen=True)
class JudgeRubric:
    """How an LLM judge grades one instance of a task, per scale.

    ``prompts[scale]``: the rubric text; ``grades[scale]``: the pydantic model a valid answer must satisfy
    (its ``scores()`` gives ``record.scores`` entries); ``data(prediction, gold)``: what the judge sees
    besides the turn; ``minimum[scale]``: what a failed prediction scores without being judged;
    ``human_key``: the score human ratings are compared with; ``finish(record)``: scores computed by formula
    after judging (ER: S_int and S_ER).
    """

    prompts: Mapping[str, str]
    grades: Mapping[str, type[Any]]
    data: Callable[[Any, Any], Mapping[str, object]]  # the task's own TypedDict of what the judge sees
    minimum: Mapping[str, Mapping[str, float]]
    human_key: str
    finish: Callable[[Any], None] | None = None

    def judged_keys(self, scale: str) -> tuple[str, ...]:
        """The record.scores keys the judges' grades fill on ``scale``."""
        return tuple(self.minimum[scale])


@dataclass(frozen=True)
class Declaration:
    """Every fact of a task (everything that is not building, rendering or parsing), the way an lm-eval YAML
    or an inspect_ai ``@task`` holds them. Only ``name`` and ``title`` have no default."""

    name: str
    title: str
    # Where the task sits in tables and default runs: the paper's six are 1-6 (ITP, RPP, STP, SSP, ER, VP);
    # a task not in the paper keeps the default and comes after them, in the order it registered.
    order: int = 100
    # The authors' request defaults: rows of context before an instance's row (-1: all prior rows), instances
    # per request (0: the whole sample) and the answer budget in tokens.
    default_context_size: int = 3
    default_batch_size: int = 3
    max_tokens: int = 1800
    # Closed-set tasks: the key the answer schema asks for ("should_speak", "relation_top3", ...), other keys
    # an answer item's value is read from after it, and synonyms parsing may map onto the closed set.
    answer_key: str = ""
    answer_aliases: tuple[str, ...] = ()
    synonyms: Mapping[str, str] = field(default_factory=dict)
    options: type[TaskOptions] = NoOptions
    metrics: tuple[Metric, ...] = ()
    outcome: OutcomeKind = "right_wrong"
    answer: AnswerKind = "label"
    # A label task's positive class: the one its precision, recall and F1 are of (ITP: "yes").
    positive: str | None = None
    judge: JudgeRubric | None = None
    bertscore: TextScorer | None = None
    # Graded tasks: the worst value of each score they report, what a failed instance scores (a failure is
    # never better than the worst real answer). The report's vectorised means read it too.
    score_floors: Mapping[str, float] = field(default_factory=dict)
    # A baseline that carries the latest earlier gold of the same sample forward makes sense (RPP).
    gold_persists: bool = False
    # Every row of a sample that could be an instance, with its gold (retrieval baselines draw from it).
    gold_rows: Callable[[Any], list[tuple[Any, Any]]] | None = None
    # Analyses: the closed set in the order tables show it, per scenario, and how a gold or predicted label
    # is shown there (STP shows people's names, which differ per sample, as the role "individual"/"group").
    label_order: Callable[[str], list[str]] | None = None
    shown_label: Callable[[str], str] | None = None
    # Paper analyses that apply: "position" (accuracy and gold labels across the dialogue), "per_label"
    # (accuracy per gold label), "preference" (Bradley-Terry preference bias over the label set).
    analyses: tuple[str, ...] = ()
    # The paper's Table 6 on the full release: scenario -> (instances, samples); empty for a task not in it.
    paper_counts: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # Whether the prompt shows the instance's own row (ITP's decision row, ER/VP's current turn) or hides it
    # (RPP/STP/SSP predict it). Video mode's media runs up to the first hidden row, never into it.
    shows_row: bool = False
    # What an instance hides that would give its answer away, and so must not appear in another item of its
    # batch: its own row (RPP, STP, SSP), the row after it (ITP: its speaker is the answer) or nothing (ER, VP).
    hidden: Literal["row", "next_row", "none"] = "row"


O = TypeVar("O", bound=TaskOptions)  # noqa: E741 - the options type, as in the signatures


def validate_options(name: str, options_model: type[O], values: Mapping[str, object]) -> O:
    """``values`` as the task's options model; TaskOptionError naming the task and the known options."""
    # None means "the task's default", as the CLI and run config pass an option they were not given.
    try:
        return options_model.model_validate({k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        known = ", ".join(options_model.model_fields) or "none"
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'options'}: "
            + ("unknown option" if err["type"] == "extra_forbidden" else err["msg"])
            for err in exc.errors()
        )
        raise TaskOptionError(f"task {name}: {problems} (known options: {known})") from None
