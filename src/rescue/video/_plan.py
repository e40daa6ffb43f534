"""What one instance's request carries: the source frames (or the clip) inside its media window.

Frames lie on a grid of ``frame_rate`` per second anchored at the clip's start, so the instances whose
windows overlap (consecutive rows, the same rows across tasks) share their frames, and the on-disk store
makes each one once. A frame belongs to a span only when its whole display interval lies inside the span:
the frame shown at the start of the first hidden row is never taken.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rescue.data.evenly import pick_evenly
from rescue.video._store import SourceInfo
from rescue.video._window import MediaWindow

_EPS = 1e-6


@dataclass(frozen=True)
class FramePick:
    """One source frame chosen for an instance, with the row it shows and its time."""

    index: int  # source frame, shown from index / fps to (index + 1) / fps
    row_index: int
    time: float  # index / fps


@dataclass(frozen=True)
class MediaPlan:
    """Frames (``video_input`` frames) or one clip window of source frames ``[clip_first, clip_stop)``."""

    sample_id: str
    frames: tuple[FramePick, ...] = ()
    clip_first: int = 0
    clip_stop: int = 0

    @property
    def empty(self) -> bool:
        """Whether the plan sends no media."""
        return not self.frames and self.clip_stop <= self.clip_first


def _frame_range(start: float, end: float, source: SourceInfo) -> tuple[int, int]:
    """Source frames wholly inside ``[start, end)``: ``range(first, stop)``."""
    first = max(0, math.ceil(start * source.fps - _EPS))
    stop = min(source.frames, math.floor(end * source.fps + _EPS))
    return first, stop


def frame_plan(window: MediaWindow, source: SourceInfo, rate: float, limit: int) -> MediaPlan:
    """The frames of ``window``: ``rate`` per second of each visible span, at most ``limit`` in all."""
    picks: dict[int, FramePick] = {}
    for span in window.spans:
        first, stop = _frame_range(span.start, span.end, source)
        if stop <= first:
            continue
        chosen = []
        for j in range(math.ceil(span.start * rate - _EPS), math.ceil(span.end * rate - _EPS)):
            index = math.floor(j / rate * source.fps + _EPS)
            if first <= index < stop:
                chosen.append(index)
        if not chosen:  # a row shorter than the grid step still gets its middle frame
            chosen = [(first + stop - 1) // 2]
        for index in chosen:
            picks.setdefault(index, FramePick(index, span.row_index, index / source.fps))
    ordered = [picks[i] for i in sorted(picks)]
    return MediaPlan(window.sample_id, frames=tuple(pick_evenly(ordered, limit, single="last")))


def clip_plan(window: MediaWindow, source: SourceInfo) -> MediaPlan:
    """One continuous cut from the first shown row's start to the end of the last shown span."""
    if window.empty:
        return MediaPlan(window.sample_id)
    first, stop = _frame_range(window.start, window.end, source)
    if stop <= first:
        return MediaPlan(window.sample_id)
    return MediaPlan(window.sample_id, clip_first=first, clip_stop=stop)
