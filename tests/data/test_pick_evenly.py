"""The one "pick items evenly" (issue #25, item 5): one rule, the single pick named by the caller."""

from __future__ import annotations

from rescue.data.evenly import pick_evenly


def test_all_when_room_or_no_limit_and_both_ends_kept_otherwise():
    assert pick_evenly([1, 2, 3], 5) == [1, 2, 3]
    assert pick_evenly([1, 2, 3], 0) == [1, 2, 3]
    assert pick_evenly(list(range(10)), 4) == [0, 3, 6, 9]
    assert pick_evenly(list(range(10)), 5) == [0, 2, 4, 7, 9]  # round(2.25)=2, round(4.5)=4 (half to even)


def test_the_single_pick_is_the_callers_choice():
    items = list(range(7))
    assert pick_evenly(items, 1) == [0]  # ER/VP checkpoints
    assert pick_evenly(items, 1, single="middle") == [3]  # ITP balancing
    assert pick_evenly(items, 1, single="last") == [6]  # video frames


def test_a_key_keeps_picks_of_one_row_together_in_order():
    pairs = [(1, "a"), (1, "b"), (2, "c"), (3, "d"), (3, "e"), (4, "f")]
    assert pick_evenly(pairs, 3, key=lambda p: p[0]) == [(1, "a"), (2, "c"), (4, "f")]
