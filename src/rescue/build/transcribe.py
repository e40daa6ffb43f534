"""``rescue build VIDEO --transcribe MODEL``: subtitles of rescue's own for a session that has none.

    video -> DIR/audio/<stem>.wav (16 kHz mono) -> chunks cut at silences (overlapping)
          -> one transcription request per chunk (the model layer: cache, retries, budgets)
          -> segments merged (each chunk owns the span up to the middle of its overlaps)
          -> DIR/transcripts/<group>/<stem>.srt with SPEAKER_n names where the server diarized

The transcript is written whole or not at all: a chunk that fails leaves no transcript, the build stops
incomplete (exit 3) and the rerun sends only what is not cached. Once written it is the user's (to edit, or to
map its speakers with ``--speaker-map``) and is never transcribed over; delete it to transcribe again.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rescue.atomic import write_atomic
from rescue.llm.reliable import DEFAULT_RETRY_AFTER_CAP
from rescue.llm.transcribe import read_transcription, transcription_request
from rescue.media import extract_audio, silences, wav_seconds, wav_slice

if TYPE_CHECKING:
    from rescue.build.log import BuildLog
    from rescue.llm import Model

# Chunks stay well under OpenAI's 25 MB upload limit (16 kHz mono 16-bit is 1.9 MB a minute).
CHUNK_SECONDS = 600.0
# Each chunk reaches this far past its cut on either side, so a word the silence detector cut is heard whole.
CHUNK_OVERLAP = 2.0
# A cut at the widest silence in the last third of the chunk, else at the chunk's end.
_SEARCH_SHARE = 1 / 3
_SPEAKER_NUMBER = re.compile(r"(\d+)\s*$")


@dataclass(frozen=True)
class Chunk:
    """One piece of audio sent for transcription, and the part of it whose lines are kept."""

    start: float  # what is sent, in the source's seconds
    end: float
    own_from: float  # what this chunk's answer is kept for (the cut points)
    own_to: float


def plan_chunks(duration: float, silent: list[tuple[float, float]], *, max_seconds: float = CHUNK_SECONDS,
                overlap: float = CHUNK_OVERLAP) -> list[Chunk]:
    """Chunks of at most ``max_seconds`` (plus the overlap), cut in the middle of the widest silence of each
    chunk's last third (at its end when that has none)."""
    cuts: list[float] = []
    at = 0.0
    while duration - at > max_seconds:
        limit = at + max_seconds
        inside = [(b - a, (a + b) / 2) for a, b in silent
                  if limit - max_seconds * _SEARCH_SHARE <= (a + b) / 2 < limit]
        cut = max(inside)[1] if inside else limit
        cuts.append(round(cut, 3))
        at = cut
    bounds = [0.0, *cuts, duration]
    return [Chunk(max(0.0, a - (overlap if n else 0.0)), min(duration, b + (overlap if b < duration else 0.0)), a, b)
            for n, (a, b) in enumerate(zip(bounds, bounds[1:]))]


@dataclass
class Line:
    """One transcribed line: its times, text and speaker when known."""

    start: float
    end: float
    text: str
    speaker: str | None = None


def _speaker_name(label: Any, names: dict[str, str]) -> str | None:
    """A diarizer's label (``SPEAKER_00``, ``A``, ``spk_1``) as ``SPEAKER_n``, numbered from 1 in the order
    the labels first appear."""
    if not isinstance(label, str) or not label.strip():
        return None
    label = label.strip()
    if label not in names:
        names[label] = f"SPEAKER_{len(names) + 1}"
    return names[label]


def merge_answers(chunks: list[Chunk], answers: list[dict[str, Any]]) -> list[Line]:
    """The chunks' segments on the source's clock, each kept by the chunk that owns its middle; times from the
    words inside a segment where the server gave words (tighter than segment bounds)."""
    names: dict[str, str] = {}
    lines: list[Line] = []
    for chunk, answer in zip(chunks, answers):
        words = [w for w in answer.get("words") or [] if isinstance(w, dict)]
        for segment in answer.get("segments") or []:
            text = str(segment.get("text") or "").strip()
            start, end = float(segment["start"]), float(segment["end"])
            if not text or end <= start:
                continue
            inside = [w for w in words if start - 0.05 <= (float(w["start"]) + float(w["end"])) / 2 <= end + 0.05]
            if inside:
                start, end = float(inside[0]["start"]), float(inside[-1]["end"])
            label = segment.get("speaker")
            if label is None and inside:
                label = inside[0].get("speaker")
            start, end = chunk.start + start, chunk.start + end
            middle = (start + end) / 2
            if not chunk.own_from <= middle < chunk.own_to and not (middle == chunk.own_to == chunks[-1].own_to):
                continue
            lines.append(Line(round(start, 3), round(end, 3), text, _speaker_name(label, names)))
    lines.sort(key=lambda line: line.start)
    merged: list[Line] = []
    for line in lines:
        if merged and line.start < merged[-1].end:
            # Two segments overlapping (a chunk's edge heard twice, or servers' loose bounds): the later starts
            # where the earlier ends; one left with no time of its own joins the earlier's text.
            if line.end <= merged[-1].end + 0.05:
                merged[-1].text += " " + line.text
                continue
            line.start = merged[-1].end
        merged.append(line)
    return merged


def srt_text(lines: list[Line]) -> str:
    """The lines as SubRip text (``Speaker: text`` when the speaker is known)."""
    import pysubs2

    subs = pysubs2.SSAFile()
    for line in lines:
        prefix = f"{line.speaker}: " if line.speaker else ""
        subs.append(pysubs2.SSAEvent(start=round(line.start * 1000), end=round(line.end * 1000),
                                     text=prefix + line.text))
    return str(subs.to_string("srt"))


@dataclass
class TranscriptJob:
    """One video to transcribe: where its audio and its transcript go."""

    video: Path
    out: Path  # DIR/transcripts/<group>/<stem>.srt
    audio: Path  # DIR/audio/<group>/<stem>.wav
    name: str  # for logs: <group>/<stem>


@dataclass
class TranscriptOutcome:
    """What transcription did: transcripts written, videos failed, chunks sent and cached, cost, notes."""

    written: list[Path] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    sent: int = 0
    cached: int = 0
    chunks: int = 0
    cost: float | None = 0.0
    notes: list[str] = field(default_factory=list)


def audio_plan(job: TranscriptJob, log: BuildLog | None = None, *,
               chunk_seconds: float = CHUNK_SECONDS) -> tuple[float, list[Chunk]]:
    """Extract the audio (once) and cut it into chunks."""
    made = extract_audio(job.video, job.audio)
    if log is not None:
        log.step("audio", job.name, bool(made), source=str(job.video))
    duration = wav_seconds(job.audio)
    return duration, plan_chunks(duration, silences(job.audio, duration=duration), max_seconds=chunk_seconds)


async def transcribe_all(jobs: list[TranscriptJob], model: Model, *, cache: Path, concurrency: int, max_retries: int,
                         retry_errors: bool, max_failures: int | None, max_cost: float | None, prices: str | None,
                         log: BuildLog, echo: Callable[[str], None],
                         chunk_seconds: float = CHUNK_SECONDS,
                         retry_after_cap: float = DEFAULT_RETRY_AFTER_CAP) -> TranscriptOutcome:
    """Transcribe every job's audio in chunks through ``model`` (cached, limited, retried) and write each transcript."""
    from rescue.llm import ModelSession

    outcome = TranscriptOutcome()
    async with ModelSession(cache=cache, concurrency=concurrency, max_retries=max_retries, retry_errors=retry_errors,
                       max_failures=max_failures, max_cost=max_cost, prices=prices, log=log, notice=echo,
                       retry_after_cap=retry_after_cap) as session:
        wrapped = session.wrap(model)

        async def one(job: TranscriptJob) -> None:
            duration, chunks = audio_plan(job, log, chunk_seconds=chunk_seconds)
            outcome.chunks += len(chunks)
            requests = [transcription_request(wav_slice(job.audio, c.start, c.end),
                                              ids=(f"{job.name}@{c.start:.1f}-{c.end:.1f}",)) for c in chunks]
            answers = await asyncio.gather(*(wrapped.complete(r) for r in requests))
            failed = [f"{job.name}: audio {c.start:.1f}-{c.end:.1f} s: {a.error}"
                      for c, a in zip(chunks, answers) if a.status != "ok" or a.text is None]
            if failed:
                outcome.failed += failed
                log.event("transcribe", subject=job.name, done=False, chunks=len(chunks), failed=len(failed))
                return
            lines = merge_answers(chunks, [read_transcription(a.text or "") for a in answers])
            job.out.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(job.out, srt_text(lines))
            outcome.written.append(job.out)
            speakers = sorted({line.speaker for line in lines if line.speaker})
            if len(chunks) > 1 and speakers:
                outcome.notes.append(f"{job.out}: speakers were labelled chunk by chunk ({len(chunks)} chunks); "
                                     "a label may name different people in different chunks — check them")
            log.event("transcribe", subject=job.name, done=True, chunks=len(chunks), lines=len(lines),
                      speakers=speakers, audio_seconds=round(duration, 3))

        await asyncio.gather(*(one(job) for job in jobs))
        for stats in wrapped.stats.values():
            outcome.sent += stats.requests
            outcome.cached += stats.cache_hits
        outcome.cost = session.spent
    return outcome
