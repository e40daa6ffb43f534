"""Ranking metrics for the top-3 tasks (RPP, STP, SSP) as plain functions, gold first.

A ranking is the list of distinct labels a model returned, most likely first, at most three and never
padded. ``None`` is a failed prediction: rank 0, so it scores 0 everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence


def gold_rank(gold: str, ranking: Sequence[str] | None) -> int:
    """1-based position of ``gold`` in ``ranking``; 0 when absent or when the prediction failed."""
    if not ranking:
        return 0
    try:
        return list(ranking).index(gold) + 1
    except ValueError:
        return 0


def hit_at_k(gold: str, ranking: Sequence[str] | None, k: int) -> float:
    """1.0 when ``gold`` is among the first ``k`` entries, else 0.0."""
    rank = gold_rank(gold, ranking)
    return 1.0 if 1 <= rank <= k else 0.0


def reciprocal_rank(gold: str, ranking: Sequence[str] | None) -> float:
    """1 / rank of ``gold``; 0.0 when absent."""
    rank = gold_rank(gold, ranking)
    return 1.0 / rank if rank else 0.0


def _check(gold: Sequence[str], rankings: Sequence[Sequence[str] | None]) -> None:
    if len(gold) != len(rankings):
        raise ValueError(f"gold and rankings differ in length ({len(gold)} vs {len(rankings)})")


def recall_at_k(gold: Sequence[str], rankings: Sequence[Sequence[str] | None], k: int) -> float:
    """Share of instances whose gold label is in the top ``k`` (micro mean; 0.0 for no instances)."""
    _check(gold, rankings)
    if not gold:
        return 0.0
    return sum(hit_at_k(g, r, k) for g, r in zip(gold, rankings)) / len(gold)


def mrr(gold: Sequence[str], rankings: Sequence[Sequence[str] | None]) -> float:
    """Mean reciprocal rank of the gold label (micro mean; 0.0 for no instances)."""
    _check(gold, rankings)
    if not gold:
        return 0.0
    return sum(reciprocal_rank(g, r) for g, r in zip(gold, rankings)) / len(gold)


def ranking_scores(
    gold: Sequence[str], rankings: Sequence[Sequence[str] | None], *, ks: Sequence[int] = (1, 2, 3)
) -> dict[str, float]:
    """``recall_at_k`` for each k and ``mrr``, in one dict."""
    scores = {f"recall_at_{k}": recall_at_k(gold, rankings, k) for k in ks}
    scores["mrr"] = mrr(gold, rankings)
    return scores
