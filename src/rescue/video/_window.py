"""Which stretch of a sample's video an instance may see: the spans of the rows its prompt shows, cut where
the first hidden row starts.

The prompt of every task shows the rows of its context window and, for ITP, ER and VP, the instance's own
row (``rescue.tasks.batching.shown_rows``); RPP, STP and SSP hide their row. The first hidden row is
therefore row t+1 or row t (``Declaration.shows_row``); the media ends at the earliest start of that row or any
later one, so no frame shown from that moment on, and no audio from it, is ever sent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rescue.data.models import Sample
from rescue.tasks.base import Instance, Task
from rescue.tasks.batching import shown_rows
from rescue.tasks.prompts import resolve_context_size


@dataclass(frozen=True)
class Span:
    """The visible part of one row in an instance's media window, in clip seconds."""

    row_index: int
    start: float  # seconds in the clip
    end: float  # exclusive; already cut at the window's limit


@dataclass(frozen=True)
class MediaWindow:
    """The visible spans of one instance (in row order) and the time nothing may reach."""

    sample_id: str
    spans: tuple[Span, ...]
    limit: float  # start of the first hidden row; math.inf when every later row is visible (none left)

    @property
    def empty(self) -> bool:
        """Whether no row of the window is visible."""
        return not self.spans

    @property
    def start(self) -> float:
        """Where the first visible span starts (0 when none is)."""
        return min(s.start for s in self.spans) if self.spans else 0.0

    @property
    def end(self) -> float:
        """Where the last visible span ends (0 when none is)."""
        return max(s.end for s in self.spans) if self.spans else 0.0


def hidden_limit(sample: Sample, first_hidden: int) -> float:
    """The earliest start time of row ``first_hidden`` (1-based) or any later row; inf when there is none."""
    starts = [row.start_time for row in sample.rows[first_hidden - 1:]]
    return min(starts) if starts else math.inf


def media_window(task: Task, instance: Instance, context_size: int | None) -> MediaWindow:
    """The visible spans of ``instance``'s rows (those its prompt shows at context size ``k``), cut where the first
    hidden row starts."""
    sample = instance.sample
    # The rows the prompt renders, by the same rule that keeps batches leak-free.
    shown = sorted(shown_rows(task, instance, resolve_context_size(context_size, task.default_context_size)))
    first_hidden = instance.row_index + 1 if task.declaration.shows_row else instance.row_index
    limit = hidden_limit(sample, first_hidden)
    spans = []
    for row in (sample.row(index) for index in shown):
        end = min(row.end_time, limit)
        if end > row.start_time:
            spans.append(Span(row.row_index, row.start_time, end))
    return MediaWindow(sample.sample_id, tuple(spans), limit)
