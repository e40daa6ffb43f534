"""Label normalisation and id matching shared by every task's parse."""

from __future__ import annotations

import pytest

from rescue.tasks.parsing import (
    AnswerError,
    label_key,
    match_items,
    normalize_label,
    normalize_ranking,
    resolve_local_id,
)

LABELS = ["goal_align", "track", "counterbalance"]


@pytest.mark.parametrize(
    "text",
    [
        "goal_align",
        "Goal Align",
        " GOAL-ALIGN ",
        "goal__align",
        "goal_align (Goal align)",
        "goal_align: orient to a task",
    ],
)
def test_case_spacing_and_gloss_variants(text):
    assert normalize_label(text, LABELS) == "goal_align"


def test_synonyms_map_only_into_the_closed_set():
    synonyms = {"goal alignment": "goal_align", "boundary making": "boundary"}
    assert normalize_label("Goal-Alignment", LABELS, synonyms) == "goal_align"
    with pytest.raises(AnswerError, match="unknown label 'boundary making'"):
        normalize_label("boundary making", LABELS, synonyms)  # boundary is not in this closed set


@pytest.mark.parametrize("value", ["", "   ", None, 3, ["track"]])
def test_non_labels_are_errors(value):
    with pytest.raises(AnswerError):
        normalize_label(value, LABELS)


def test_rankings():
    assert normalize_ranking(["Track", "track", "goal align"], LABELS) == ["track", "goal_align"]
    assert normalize_ranking("track, counterbalance > goal_align", LABELS) == ["track", "counterbalance", "goal_align"]
    assert normalize_ranking(["track", "goal_align", "counterbalance", "track"], LABELS, k=2) == ["track", "goal_align"]
    with pytest.raises(AnswerError, match="empty ranking"):
        normalize_ranking([], LABELS)
    with pytest.raises(AnswerError, match="unknown label 'evoke'"):
        normalize_ranking(["track", "evoke"], LABELS)  # an unknown label fails the answer, never dropped
    with pytest.raises(AnswerError):
        normalize_ranking({"track": 1}, LABELS)


def test_label_key():
    assert label_key(" Pursue-Withdraw ") == "pursue_withdraw"


def test_resolve_local_id():
    ids = ["after_row3", "after_row12"]
    assert resolve_local_id("after_row3", ids) == "after_row3"
    assert resolve_local_id("g/s1#after_row12", ids) == "after_row12"
    assert resolve_local_id("g/s1__after_row12", ids) == "after_row12"
    assert resolve_local_id("After Row 3", ids) == "after_row3"
    assert resolve_local_id("12", ids) == "after_row12"
    assert resolve_local_id("2", ids) is None  # no local id ends in exactly 2
    assert resolve_local_id("row9", ids) is None


def test_match_items_first_wins_and_single_items():
    items = [{"id": "row1", "v": 1}, {"turn_id": "row1", "v": 2}, {"id": "row2", "v": 3}, {"v": 4}]
    assert {k: v["v"] for k, v in match_items(items, ["row1", "row2"]).items()} == {"row1": 1, "row2": 3}
    assert match_items([{"v": 5}], ["row7"]) == {"row7": {"v": 5}}
    assert match_items([{"v": 5}], ["row7", "row8"]) == {}
