"""Ranking metrics against hand-computed values."""

from __future__ import annotations

import pytest

from rescue.metrics import gold_rank, hit_at_k, mrr, ranking_scores, recall_at_k, reciprocal_rank

# Gold ranks 1, 2, 3 and 0 (a failed prediction).
GOLD = ["x", "y", "z", "w"]
RANKINGS = [["x", "y", "z"], ["x", "y"], ["a", "b", "z"], None]


def test_per_instance():
    assert [gold_rank(g, r) for g, r in zip(GOLD, RANKINGS)] == [1, 2, 3, 0]
    assert hit_at_k("y", ["x", "y"], 1) == 0.0 and hit_at_k("y", ["x", "y"], 2) == 1.0
    assert reciprocal_rank("z", ["a", "b", "z"]) == pytest.approx(1 / 3)
    assert reciprocal_rank("q", []) == 0.0


def test_means_by_hand():
    assert recall_at_k(GOLD, RANKINGS, 1) == 0.25
    assert recall_at_k(GOLD, RANKINGS, 2) == 0.5
    assert recall_at_k(GOLD, RANKINGS, 3) == 0.75
    assert mrr(GOLD, RANKINGS) == pytest.approx((1 + 1 / 2 + 1 / 3 + 0) / 4)  # 11/24
    assert ranking_scores(GOLD, RANKINGS) == {
        "recall_at_1": 0.25,
        "recall_at_2": 0.5,
        "recall_at_3": 0.75,
        "mrr": pytest.approx(11 / 24),
    }


def test_empty_and_mismatch():
    assert mrr([], []) == 0.0
    with pytest.raises(ValueError):
        recall_at_k(["x"], [], 1)
