"""Segments: windows of a source video that become one sample each.

Given by hand (``--segments FILE``, CSV ``start,end[,name]``), or proposed from the silences between
subtitle cues and the video's scene cuts and written to a file the user can edit and pass back.
"""

from __future__ import annotations

import csv
import itertools
from dataclasses import dataclass
from pathlib import Path

from rescue.builder.inputs import BuildInputError, CheckedSession, read_csv_text
from rescue.data.text import clock_time
from rescue.media import Cue, parse_timestamp
from rescue.atomic import write_atomic

# Proposal: a segment is closed at the first good boundary once it is `target` long, and at the widest
# silence before it reaches `longest`.
PROPOSE_TARGET = 300.0
PROPOSE_LONGEST = 900.0
PROPOSE_MIN_GAP = 1.5
# A silence this long, or one holding a scene cut, is a good boundary.
STRONG_GAP = 4.0


@dataclass(frozen=True)
class SegmentSpan:
    """Where one segment of a session's video runs: its number in the session, start and end in seconds, a name."""

    number: int  # 1-based position in the session's segment list; the NN of the sample id
    start: float
    end: float
    name: str = ""

    @property
    def duration(self) -> float:
        """The span's length in seconds."""
        return round(self.end - self.start, 3)


@dataclass(frozen=True)
class Dropped:
    """A segment left out of the build, with its span and the reason."""

    sample_id: str
    source_video: str
    start: float
    end: float
    reason: str


def sample_id(group: str, stem: str, number: int) -> str:
    """The sample id of segment ``number`` of a video: ``<group>/<stem>_segmentNN``."""
    return f"{group}/{stem}_segment{number:02d}"


def read_segments_csv(path: Path, session: CheckedSession) -> list[SegmentSpan]:
    """``start,end[,name]`` per line (a header line is optional); times in seconds or HH:MM:SS.mmm."""
    problems: list[str] = []
    segments: list[SegmentSpan] = []
    lines = list(csv.reader(read_csv_text(path).splitlines()))
    duration = session.media.duration
    for line_number, fields in enumerate(lines, start=1):
        fields = [f.strip() for f in fields]
        if not any(fields) or fields[0].startswith("#"):
            continue
        if line_number == 1 and fields[0].lower() == "start":
            continue
        where = f"{path}:{line_number}"
        if len(fields) < 2:
            problems.append(f"{where}: expected start,end[,name]")
            continue
        try:
            start, end = parse_timestamp(fields[0]), parse_timestamp(fields[1])
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if end <= start:
            problems.append(f"{where}: end {fields[1]} is not after start {fields[0]}")
        elif end > duration + 0.1:
            problems.append(f"{where}: end {fields[1]} is past the video's end ({clock_time(duration)})")
        elif segments and start < segments[-1].end:
            problems.append(f"{where}: starts before the previous segment ends ({clock_time(segments[-1].end)})")
        else:
            segment = SegmentSpan(len(segments) + 1, start, min(end, duration), fields[2] if len(fields) > 2 else "")
            problems += [f"{where}: segment boundary {clock_time(t)} falls inside "
                         f"{session.spec.subtitles}: cue {cue.index} ({clock_time(cue.start)} --> {clock_time(cue.end)})"
                         for cue, t in _split_cues(session.cues, segment)]
            segments.append(segment)
    if not segments and not problems:
        problems.append(f"{path}: lists no segments")
    if problems:
        raise BuildInputError(problems)
    return segments


def _split_cues(cues: list[Cue], segment: SegmentSpan) -> list[tuple[Cue, float]]:
    return [(cue, t) for cue in cues for t in (segment.start, segment.end) if cue.start < t < cue.end]


def propose_segments(cues: list[Cue], duration: float, cuts: list[float], *, target: float = PROPOSE_TARGET,
                     longest: float = PROPOSE_LONGEST, min_gap: float = PROPOSE_MIN_GAP) -> list[SegmentSpan]:
    """Boundaries in silences between cues: the first strong one (long, or holding a scene cut) once a
    segment is ``target`` long, else the widest one before it reaches ``longest``."""
    candidates: list[tuple[float, float, bool]] = []  # (boundary time, silence length, holds a scene cut)
    for before, after in itertools.pairwise(cues):
        gap = after.start - before.end
        if gap < min_gap:
            continue
        inside = [t for t in cuts if before.end <= t <= after.start]
        boundary = inside[0] if inside else round((before.end + after.start) / 2, 3)
        candidates.append((boundary, gap, bool(inside)))
    bounds: list[float] = []
    start = 0.0
    window: list[tuple[float, float, bool]] = []
    for candidate in candidates:
        time, gap, scene = candidate
        length = time - start
        if length < target:
            continue
        if length > longest and window:
            best = max(window, key=lambda c: (c[2], c[1]))
            bounds.append(best[0])
            start = best[0]
            window = [c for c in window if c[0] > start]
            length = time - start
            if length < target:
                continue
        if gap >= STRONG_GAP or scene:
            bounds.append(time)
            start, window = time, []
        else:
            window.append(candidate)
    edges = [0.0, *bounds, duration]
    return [SegmentSpan(i, a, b) for i, (a, b) in enumerate(itertools.pairwise(edges), start=1) if b > a]


def write_segments_csv(path: Path, segments: list[SegmentSpan]) -> None:
    """Write the segments as an editable CSV (start,end,name), atomically."""
    lines = ["start,end,name"] + [f"{clock_time(s.start)},{clock_time(s.end)},{s.name}" for s in segments]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, "\n".join(lines) + "\n")


def keep_long_enough(group: str, video: Path, segments: list[SegmentSpan], cues: list[Cue],
                     min_duration: float) -> tuple[list[SegmentSpan], list[Dropped]]:
    """The segments at least ``min_duration`` long, and the others as dropped with the reason."""
    kept, dropped = [], []
    for segment in segments:
        sid = sample_id(group, video.stem, segment.number)
        if segment.duration < min_duration:
            dropped.append(Dropped(sid, str(video), segment.start, segment.end,
                                   f"shorter than --min-duration {min_duration:g} s ({segment.duration:g} s)"))
        elif not any(segment.start <= cue.start < segment.end for cue in cues):
            dropped.append(Dropped(sid, str(video), segment.start, segment.end, "holds no subtitle cue"))
        else:
            kept.append(segment)
    return kept, dropped
