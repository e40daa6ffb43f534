"""The leaderboard's columns (the paper's Table 5 / Table 11) and where each value comes from.

Each column names its task and the metric keys of that task's ``aggregate`` output it reads; the
first key present wins, so a column keeps working whichever of the accepted spellings a task uses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    task: str
    keys: tuple[str, ...]
    header: str
    scale: float = 100.0  # percentages are shown x100, as in the paper
    digits: int = 2

    def pick(self, metrics: Mapping[str, object] | None) -> float | None:
        if not metrics:
            return None
        for key in self.keys:
            value = metrics.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return None if math.isnan(float(value)) else float(value)
        return None

    def format(self, value: float | None) -> str:
        return "—" if value is None else f"{value * self.scale:.{self.digits}f}"


# ER: the paper's S_ER = (judge emotion score + intensity score) / 2; VP: the judge's 1-5 score.
_ER_JUDGE_KEYS = ("s_er", "judge_score", "judge")
_VP_JUDGE_KEYS = ("judge", "judge_score")
_BERT_KEYS = ("bertscore_f1", "bertscore")

COLUMNS: tuple[Column, ...] = (
    Column("itp", ("precision", "precision_yes"), "ITP P"),
    Column("itp", ("recall", "recall_yes"), "ITP R"),
    Column("itp", ("f1", "f1_yes"), "ITP F1"),
    Column("rpp", ("accuracy", "recall_at_1"), "RPP Acc"),
    Column("stp", ("recall_at_1", "accuracy"), "STP R@1"),
    Column("stp", ("mrr",), "STP MRR"),
    Column("ssp", ("recall_at_1", "accuracy"), "SSP R@1"),
    Column("ssp", ("mrr",), "SSP MRR"),
    Column("er", _ER_JUDGE_KEYS, "ER judge", scale=1.0, digits=2),
    Column("er", _BERT_KEYS, "ER BERTScore", scale=1.0, digits=4),
    Column("vp", _VP_JUDGE_KEYS, "VP judge", scale=1.0, digits=2),
    Column("vp", _BERT_KEYS, "VP BERTScore", scale=1.0, digits=4),
)

# Compared between systems but not a leaderboard column: McNemar needs a right/wrong accuracy.
ITP_ACCURACY = Column("itp", ("accuracy",), "ITP Acc")
COMPARED: tuple[Column, ...] = (*COLUMNS[:3], ITP_ACCURACY, *COLUMNS[3:])
MCNEMAR_HEADERS = frozenset({"ITP Acc", "RPP Acc"})


def columns_for(task: str, columns: tuple[Column, ...] = COMPARED) -> list[Column]:
    return [c for c in columns if c.task == task]
