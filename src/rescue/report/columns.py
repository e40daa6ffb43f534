"""The leaderboard's columns (the paper's Table 5 / Table 11) and where each value comes from.

Each column names its task and the key of that task's ``aggregate`` output it reads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    task: str
    key: str
    header: str
    scale: float = 100.0  # percentages are shown x100, as in the paper
    digits: int = 2

    def pick(self, metrics: Mapping[str, object] | None) -> float | None:
        value = (metrics or {}).get(self.key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return None if math.isnan(float(value)) else float(value)
        return None

    def format(self, value: float | None) -> str:
        return "—" if value is None else f"{value * self.scale:.{self.digits}f}"


# ER's judge column is the paper's S_ER = (judge emotion score + intensity score) / 2; VP's the judge's 1-5 score.
COLUMNS: tuple[Column, ...] = (
    Column("itp", "precision", "ITP P"),
    Column("itp", "recall", "ITP R"),
    Column("itp", "f1", "ITP F1"),
    Column("rpp", "accuracy", "RPP Acc"),
    Column("stp", "recall_at_1", "STP R@1"),
    Column("stp", "mrr", "STP MRR"),
    Column("ssp", "recall_at_1", "SSP R@1"),
    Column("ssp", "mrr", "SSP MRR"),
    Column("er", "s_er", "ER judge", scale=1.0, digits=2),
    Column("er", "bertscore_f1", "ER BERTScore", scale=1.0, digits=4),
    Column("vp", "judge", "VP judge", scale=1.0, digits=2),
    Column("vp", "bertscore_f1", "VP BERTScore", scale=1.0, digits=4),
)

# Compared between systems but not a leaderboard column: McNemar needs a right/wrong accuracy.
ITP_ACCURACY = Column("itp", "accuracy", "ITP Acc")
COMPARED: tuple[Column, ...] = (*COLUMNS[:3], ITP_ACCURACY, *COLUMNS[3:])
MCNEMAR_HEADERS = frozenset({"ITP Acc", "RPP Acc"})


def columns_for(task: str, columns: tuple[Column, ...] = COMPARED) -> list[Column]:
    return [c for c in columns if c.task == task]
