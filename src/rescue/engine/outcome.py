"""What a run hands back: one model on one task (:class:`PairResult`) while it runs, the whole run
(:class:`RunOutcome`) when it is done."""

from __future__ import annotations

import pickle
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
    # The records while packed (pack): pickled, a thousand to a piece.
    packed: list[bytes] | None = field(default=None, repr=False)

    def pack(self) -> None:
        """The records held as pickles until :meth:`unpack`, while the run's other pairs are asked: a run's
        records take several times less memory as pickles than as objects (benchmarks/README.md).
        Pickle gives back every value exactly (what a JSON round trip would not promise: tuples, NaN), so
        nothing written changes. Records that cannot be pickled (a model of your own answering with objects
        pickle refuses) stay as they are."""
        if self.packed is not None:
            return
        try:  # pieces keep the pickler's memo (an entry per object it writes) small
            packed = [pickle.dumps(self.records[n:n + _PIECE], pickle.HIGHEST_PROTOCOL)
                      for n in range(0, len(self.records), _PIECE)]
        except (pickle.PicklingError, TypeError, AttributeError):
            return
        self.packed, self.records = packed, []

    def unpack(self) -> None:
        """The records as objects again (after :meth:`pack`)."""
        if self.packed is not None:
            self.records = [record for piece in self.packed for record in pickle.loads(piece)]
            self.packed = None


_PIECE = 1000


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
