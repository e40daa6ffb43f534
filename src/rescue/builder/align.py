"""Subtitles checked against the audio: where is there sound (ffmpeg's energy-based ``silencedetect``), do
the lines start where speech starts, and is there speech under every line?

- **Global offset**: every shift in ``[-MAX_SHIFT, MAX_SHIFT]`` (``STEP`` apart) is scored by how many line
  starts land within ``MATCH`` seconds of a speech onset (the end of a silence); the best (ties: the smallest
  shift) is refined to the median of its matched differences. Onsets, not overlap, because a line is often
  longer than the speech it holds, which makes overlap flat over a range of shifts.
- **Lines with no speech under them**: less than ``min(MIN_SPEECH, a fifth of the line)`` of sound inside.

``--subs-offset SECONDS`` shifts the subtitles before anything else reads them (:mod:`rescue.builder.inputs`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from rescue.media import Cue, speech_spans

MAX_SHIFT = 10.0
STEP = 0.02
MATCH = 0.25
MIN_SPEECH = 0.2
# An offset smaller than this is reported as none: subtitle timing is rarely closer to the speech than that.
REPORTED = 0.15


@dataclass
class Alignment:
    """How a session's subtitles sit on its speech: the offset that fits best, how many lines it matches, and the
    silent lines."""

    offset: float  # seconds to add to the lines' times to put them on the speech (what --subs-offset takes)
    matched: int  # line starts within MATCH of an onset at that offset
    lines: int
    silent: list[Cue] = field(default_factory=list)  # lines with no speech under them (at their own times)

    @property
    def reliable(self) -> bool:
        """Whether enough lines match for the offset to mean something (at least 2 and a third of them)."""
        return self.lines > 0 and self.matched >= max(2, self.lines // 3)

    @property
    def reportable(self) -> bool:
        """Whether the offset is reliable and large enough to tell the user (--subs-offset)."""
        return self.reliable and abs(self.offset) >= REPORTED


def onsets(silent: list[tuple[float, float]]) -> list[float]:
    """The times speech starts: the end of each silence, and 0 when the audio does not open silent."""
    starts = [end for _start, end in silent]
    if not silent or silent[0][0] > 0.0:
        starts.insert(0, 0.0)
    return starts


def _matches(starts: list[float], marks: list[float], shift: float) -> list[float]:
    """For each line start moved by ``shift``, the distance to the nearest onset when within MATCH."""
    import bisect

    out = []
    for start in starts:
        t = start + shift
        at = bisect.bisect_left(marks, t)
        near = min((abs(marks[i] - t), marks[i] - t) for i in (at - 1, at) if 0 <= i < len(marks)) \
            if marks else (MATCH + 1, 0.0)
        if near[0] <= MATCH:
            out.append(near[1])
    return out


def match_counts(starts: list[float], marks: list[float], shifts: list[float]) -> list[int]:
    """For each shift, how many line starts moved by it land within MATCH of an onset: what ``_matches`` counts,
    for every shift at once (numpy, a block of shifts at a time), the same arithmetic on the same floats."""
    import numpy as np

    if not marks or not starts:
        return [0] * len(shifts)
    onset = np.asarray(marks, dtype=float)
    line = np.asarray(starts, dtype=float)
    counts: list[int] = []
    block = max(1, 1_000_000 // len(line))
    for first in range(0, len(shifts), block):
        moved = line[None, :] + np.asarray(shifts[first:first + block], dtype=float)[:, None]
        at = np.searchsorted(onset, moved, side="left")
        before = np.abs(onset[np.clip(at - 1, 0, len(onset) - 1)] - moved)
        after = np.abs(onset[np.clip(at, 0, len(onset) - 1)] - moved)
        near = np.minimum(np.where(at > 0, before, np.inf), np.where(at < len(onset), after, np.inf))
        counts.extend((near <= MATCH).sum(axis=1).tolist())
    return counts


def estimate_offset(cues: list[Cue], silent: list[tuple[float, float]], duration: float) -> Alignment:
    """The shift (within MAX_SHIFT, smallest first on ties) that puts the most line starts on speech onsets."""
    starts = [cue.start for cue in cues]
    marks = onsets(silent)
    steps = round(MAX_SHIFT / STEP)
    order = sorted(range(-steps, steps + 1), key=abs)  # 0, -1, 1, -2, 2 ...: the first best is the smallest
    shifts = [n * STEP for n in order]
    counts = match_counts(starts, marks, shifts)
    best = (0, 0.0)
    for count, shift in zip(counts, shifts):
        if count > best[0]:
            best = (count, shift)
    count, shift = best
    residuals = _matches(starts, marks, shift)
    offset = round(shift + (statistics.median(residuals) if residuals else 0.0), 3)
    speech = speech_spans(silent, duration)
    quiet = []
    for cue in cues:
        heard = sum(max(0.0, min(cue.end, b) - max(cue.start, a)) for a, b in speech)
        if heard < min(MIN_SPEECH, (cue.end - cue.start) / 5):
            quiet.append(cue)
    return Alignment(offset, count, len(cues), quiet)


def shift_cues(cues: list[Cue], seconds: float) -> list[Cue]:
    """``--subs-offset``: every line moved by ``seconds`` (later when positive); a line moved wholly before
    the video's start is left out, one moved partly before it starts at 0."""
    from dataclasses import replace

    out = []
    for cue in cues:
        moved = cue.shifted(-seconds)
        if moved.end <= 0:
            continue
        out.append(replace(moved, start=max(0.0, moved.start)))
    return out
