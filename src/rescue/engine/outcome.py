"""What a run hands back: one model on one task (:class:`PairResult`) while it runs, the whole run
(:class:`RunOutcome`) when it is done."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rescue.runs.results import RunResults
from rescue.tasks.base import PredictionRecord

if TYPE_CHECKING:
    from rescue.scoring.judge import JudgeUsage


@dataclass
class PairResult:
    """One model on one task."""

    model: str
    task: str
    records: list[PredictionRecord]
    judge_usage: list[JudgeUsage] = field(default_factory=list)


@dataclass(repr=False)
class RunOutcome:
    """What a run produced: results (JSON and typed), records, the folder, whether it completed or why it stopped."""

    results: dict[str, Any]
    records: list[PredictionRecord]
    out: Path
    complete: bool
    stopped: str | None
    typed: RunResults  # the results as the typed model; ``results`` is its JSON form, as in results.json

    @property
    def cache_hits(self) -> int:
        """Answers the run took from the cache."""
        return int(self.results.get("run", {}).get("cache_hits", 0))

    def __repr__(self) -> str:
        # Short on purpose: asyncio.run formats the finished main task, result included, when it restores the
        # SIGINT handler, and the generated repr of every record cost a release-sized run a noticeable moment.
        return (f"RunOutcome(out={str(self.out)!r}, complete={self.complete}, stopped={self.stopped!r}, "
                f"records={len(self.records)})")
