"""The parts of a run's configuration that the engine's helpers read, each a small frozen group.

:class:`~rescue.engine.config.RunConfig` holds every option of ``rescue run``; a helper is handed the group it
reads (``config.part(Judging)``), never the whole configuration, so what a helper depends on is in its signature.
Each field is named as the ``RunConfig`` field it copies and typed as :class:`~rescue.engine.run_options.RunOptions`
declares it (``tests/engine/test_parts.py`` holds both), so no default or type is written here a second time.
Video mode's group is :class:`rescue.video.VideoOptions` (``RunConfig.video``); how prompts are rendered
is :class:`rescue.tasks.base.RenderOptions`.
"""

from __future__ import annotations

from dataclasses import Field, dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from rescue.data.choices import JudgeScale, Mode, ParsePolicy
from rescue.engine.run_options import SampleChoice
from rescue.tasks.base import RenderOptions
from rescue.tasks.render import RowCache

__all__ = ["Asking", "Batching", "BertScoring", "Judging", "Resuming", "Roster", "Selection", "part"]


@dataclass(frozen=True)
class Selection:
    """Which samples a run evaluates: ``--split`` of ``--splits``, then ``--limit-samples`` by ``--sample-choice``;
    and how many instances of each task (``--limit``)."""

    split: str | None
    splits: str | None
    limit_samples: int | None
    sample_choice: SampleChoice
    limit: int | None


@dataclass(frozen=True)
class Asking:
    """How a run asks one model one task: the mode, the batches (``--batch-size``, ``--context-size``), the
    requests in flight (``--concurrency``), how answers are read (``--parse``, ``--store-reasoning``,
    ``--budget-retry``) and how often each instance is asked (``--epochs``, each epoch's seed from ``--seed``)."""

    mode: Mode
    batch_size: str
    context_size: int | None
    concurrency: int
    parse: ParsePolicy
    store_reasoning: bool
    budget_retry: float | None
    epochs: int
    seed: int | None

    def render(self, rows: RowCache | None) -> RenderOptions:
        """How this run renders prompts, encoding rows through ``rows`` (the run's row cache)."""
        return RenderOptions(mode=self.mode, context_size=self.context_size, rows=rows)


@dataclass(frozen=True)
class Judging:
    """How the judges grade: who (``--judge``), on which scale, how often, and with what concurrency and retries."""

    judges: list[str]
    judge_scale: JudgeScale
    judge_repeats: int
    concurrency: int
    retry_errors: bool


@dataclass(frozen=True)
class Batching:
    """How ``--batch`` waits: a batch's status read every ``--batch-poll`` seconds; an upload or create whose answer
    was lost waited for in the endpoint's list for ``--batch-settle`` seconds."""

    batch_poll: float
    batch_settle: float


@dataclass(frozen=True)
class BertScoring:
    """``--bertscore`` and its backbone (``--bertscore-model``, ``--bertscore-layers``, ``--bertscore-rescale``)."""

    bertscore: bool
    bertscore_model: str | None
    bertscore_layers: int | None
    bertscore_rescale: bool


@dataclass(frozen=True)
class Resuming:
    """What decides how a run treats a folder that holds a run: ``--overwrite``, ``--cache-dir`` and ``--data``."""

    overwrite: bool
    cache_dir: str | None
    data: str | None


@dataclass(frozen=True)
class Roster:
    """The models a run reports: those given (``--model``) and those it ran (given, else the offline baselines)."""

    models: list[str]
    model_specs: list[str]


class _Group(Protocol):
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]


G = TypeVar("G", bound=_Group)


def part(config: object, group: type[G]) -> G:
    """The ``group`` of ``config``'s values (each field read from the attribute of its name)."""
    return group(**{name: getattr(config, name) for name in group.__dataclass_fields__})
