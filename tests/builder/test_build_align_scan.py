"""The alignment check's offset scan (issue 34 item 6): every shift scored at once gives what scoring each shift
alone gave, ties and edges included."""

from __future__ import annotations

import random
import statistics

import pytest

from rescue.builder.align import MAX_SHIFT, STEP, _matches, estimate_offset, match_counts, onsets
from rescue.media import Cue


def _scan_one_shift_at_a_time(starts: list[float], marks: list[float]) -> tuple[int, float]:
    """The scan as it was: each shift scored alone, smallest first, the first best kept."""
    best = (0, 0.0)
    steps = round(MAX_SHIFT / STEP)
    for n in sorted(range(-steps, steps + 1), key=abs):
        count = len(_matches(starts, marks, n * STEP))
        if count > best[0]:
            best = (count, n * STEP)
    return best


def _offset_one_shift_at_a_time(starts: list[float], marks: list[float]) -> tuple[int, float]:
    count, shift = _scan_one_shift_at_a_time(starts, marks)
    residuals = _matches(starts, marks, shift)
    return count, round(shift + (statistics.median(residuals) if residuals else 0.0), 3)


def _session(seed: int) -> tuple[list[Cue], list[tuple[float, float]]]:
    rng = random.Random(seed)
    silent, t = [], rng.choice([0.0, 0.4])
    while t < 120:
        length = rng.uniform(0.3, 3)
        silent.append((round(t, 3), round(t + length, 3)))
        t += length + rng.uniform(0.5, 6)
    late = rng.choice([0.0, 1.5, -2.34, 7.0, 9.99, 12.0])
    starts = [max(0.0, end + late + rng.gauss(0, 0.1)) for _, end in silent if rng.random() < 0.7]
    starts += [rng.uniform(0, 120) for _ in range(rng.randint(0, 5))]
    return [Cue(n, start, start + rng.uniform(0.5, 3), "line") for n, start in enumerate(sorted(starts), 1)], silent


@pytest.mark.parametrize("seed", range(12))
def test_every_shift_counts_what_it_counted_alone(seed):
    cues, silent = _session(seed)
    starts, marks = [c.start for c in cues], onsets(silent)
    steps = round(MAX_SHIFT / STEP)
    shifts = [n * STEP for n in range(-steps, steps + 1)]
    assert match_counts(starts, marks, shifts) == [len(_matches(starts, marks, s)) for s in shifts]
    found = estimate_offset(cues, silent, 130.0)
    assert (found.matched, found.offset) == _offset_one_shift_at_a_time(starts, marks)


def test_ties_keep_the_smallest_shift_and_the_edges_hold():
    # Onsets 2 s apart and one line: many shifts match it equally; the smallest one wins.
    silent = [(0.0, 2.0), (3.0, 4.0), (5.0, 6.0)]
    found = estimate_offset([Cue(1, 5.0, 6.0, "a")], silent, 7)
    assert (found.matched, found.offset) == _offset_one_shift_at_a_time([5.0], onsets(silent)) == (1, -1.0)
    marks = onsets(silent)
    assert match_counts([], marks, [0.0, 1.0]) == [0, 0]
    assert match_counts([1.0], [], [0.0]) == [0]
    assert match_counts([0.0], [0.25], [0.0, -0.01, 0.01]) == [1, 0, 1]  # MATCH itself counts, just beyond does not
