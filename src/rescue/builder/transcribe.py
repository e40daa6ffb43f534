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
from rescue.llm import DEFAULT_RETRY_AFTER_CAP
from rescue.builder.chunks import TranscriptChunk, TranscriptChunks, write_chunks
from rescue.llm._client import MalformedAnswer
from rescue.llm._transcribe import read_transcription, transcription_request
from rescue.media import extract_audio, silences, wav_seconds, wav_slice

if TYPE_CHECKING:
    from rescue.builder.log import BuildLog
    from rescue.llm import Model

# Chunks stay well under OpenAI's 25 MB upload limit (16 kHz mono 16-bit is 1.9 MB a minute).
CHUNK_SECONDS = 600.0
# Each chunk reaches this far past its cut on either side (at most a quarter of a chunk): a word the cut split is
# heard whole, and neighbouring chunks share enough speech (twice this) that a diarizing endpoint's labels,
# numbered per request, can be matched across them.
CHUNK_OVERLAP = 15.0
# A cut at the widest silence in the last third of the chunk, else at the chunk's end.
_SEARCH_SHARE = 1 / 3
# A label is matched to the previous chunk's when at least this much of its speech in the shared audio lies
# under one label there, and that share is at least _MATCH_SHARE of it (and the same holds the other way).
_MATCH_SECONDS = 0.5
_MATCH_SHARE = 0.8
# Control characters in an answer's text (a confused model emits them): dropped, as a subtitle reader refuses
# a file holding them.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f]")
# A SubRip time ("00:00:09,000") inside an answer's text: its comma becomes a space.
_SRT_TIME = re.compile(r"(\d{1,2}:\d{1,2}:\d{1,2})[.,](\d{1,3})")
# Words this close to the edge of the shared audio may be cut by one chunk's edge: not evidence.
_EDGE = 0.3


@dataclass(frozen=True)
class Chunk:
    """One piece of audio sent for transcription, and the part of it whose lines are kept."""

    start: float  # what is sent, in the source's seconds
    end: float
    own_from: float  # what this chunk's answer is kept for (the cut points)
    own_to: float


def plan_chunks(duration: float, silent: list[tuple[float, float]], *, max_seconds: float = CHUNK_SECONDS,
                overlap: float | None = None) -> list[Chunk]:
    """Chunks of at most ``max_seconds`` (plus the overlap), cut in the middle of the widest silence of each
    chunk's last third (at its end when that has none)."""
    if overlap is None:
        overlap = min(CHUNK_OVERLAP, max_seconds / 4)
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


@dataclass(frozen=True)
class Heard:
    """A segment or a word as one chunk heard it, on the source's clock, with that chunk's own speaker label."""

    start: float
    end: float
    text: str
    label: str | None


@dataclass
class ChunkHeard:
    """One chunk's answer read: its segments and words on the source's clock."""

    chunk: Chunk
    segments: list[Heard]
    words: list[Heard]


def _label(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value.strip() or None if isinstance(value, str) else None


def read_chunk(chunk: Chunk, answer: dict[str, Any]) -> ChunkHeard:
    """A checked answer (:func:`~rescue.llm._transcribe.read_transcription`) on the source's clock: segments
    timed by the words inside them where the server gave words (tighter than segment bounds), each word with
    its own label or its segment's, text on one line."""
    length = chunk.end - chunk.start
    words = [Heard(chunk.start + min(float(w["start"]), length), chunk.start + min(float(w["end"]), length),
                   " ".join(str(w.get("word") or "").split()), _label(w.get("speaker")))
             for w in answer.get("words") or []]
    segments, labelled = [], []
    for segment in answer.get("segments") or []:
        start, end = chunk.start + min(float(segment["start"]), length), chunk.start + min(float(segment["end"]), length)
        inside = [w for w in words if start - 0.05 <= (w.start + w.end) / 2 <= end + 0.05]
        label = _label(segment.get("speaker"))
        if label is None and inside:
            label = inside[0].label
        labelled += [(w, label) for w in inside]
        text = " ".join(str(segment.get("text") or "").split())
        if not text or end <= start:
            continue
        if inside:
            start, end = inside[0].start, inside[-1].end
        segments.append(Heard(start, end, text, label))
    named = {id(w): label for w, label in labelled}
    words = [w if w.label is not None else Heard(w.start, w.end, w.text, named.get(id(w))) for w in words]
    return ChunkHeard(chunk, segments, words)


@dataclass
class Reconciled:
    """How one chunk's labels became the transcript's: the mapping, and whether the shared speech decided it."""

    names: dict[str, str]  # the endpoint's label in this chunk -> the transcript's SPEAKER_n
    reconciled: bool
    shared_seconds: float = 0.0
    unmatched: list[str] = field(default_factory=list)  # the transcript's labels numbered apart


def _shared(heard: ChunkHeard, lo: float, hi: float) -> list[Heard]:
    """What a chunk heard inside the shared audio, away from its edges, with a label."""
    items = heard.words if any(w.label for w in heard.words) else heard.segments
    return [h for h in items if h.label is not None and lo + _EDGE <= h.start and h.end <= hi - _EDGE]


def _votes(before: list[Heard], after: list[Heard], names: dict[str, str]) -> dict[str, dict[str, float]]:
    """Seconds of speech each label of the later chunk shares with each transcript label of the earlier."""
    votes: dict[str, dict[str, float]] = {}
    for item in after:
        for other in before:
            both = min(item.end, other.end) - max(item.start, other.start)
            if both > 0 and item.label is not None and other.label is not None:
                into = votes.setdefault(item.label, {})
                into[names[other.label]] = into.get(names[other.label], 0.0) + both
    return votes


def _decided(votes: dict[str, dict[str, float]]) -> dict[str, str]:
    """The labels the shared speech names without doubt: most of a label's shared speech under one earlier
    label, most of that label's under it, and no two labels matched to one."""
    matched: dict[str, str] = {}
    for label, counts in votes.items():
        best, seconds = max(counts.items(), key=lambda kv: kv[1])
        back = sum(v.get(best, 0.0) for v in votes.values())
        if seconds >= _MATCH_SECONDS and seconds >= _MATCH_SHARE * sum(counts.values()) and \
                seconds >= _MATCH_SHARE * back:
            matched[label] = best
    taken = list(matched.values())
    return {label: name for label, name in matched.items() if taken.count(name) == 1}


def reconcile(chunks: list[ChunkHeard], used: list[set[str]]) -> list[Reconciled]:
    """Each chunk's labels as the transcript's ``SPEAKER_n``: the first chunk's in the order they speak; a later
    chunk's matched to the earlier chunk's from the speech both heard (the chunks overlap), and those the shared
    speech cannot decide numbered apart. ``used``: each chunk's labels on the lines it keeps."""
    out: list[Reconciled] = []
    count = 0
    for n, heard in enumerate(chunks):
        order = list(dict.fromkeys(h.label for h in [*heard.segments, *heard.words] if h.label is not None))
        if n == 0:
            names = {label: f"SPEAKER_{i}" for i, label in enumerate(order, start=1)}
            count = len(names)
            out.append(Reconciled(names, True))
            continue
        lo, hi = heard.chunk.start, chunks[n - 1].chunk.end
        before, after = _shared(chunks[n - 1], lo, hi), _shared(heard, lo, hi)
        matched = _decided(_votes(before, after, out[-1].names))
        names, unmatched = {}, []
        for label in order:
            if label in matched:
                names[label] = matched[label]
            else:
                count += 1
                names[label] = f"SPEAKER_{count}"
                if label in used[n]:
                    unmatched.append(names[label])
        shared = sum(h.end - h.start for h in after)
        out.append(Reconciled(names, not unmatched, round(shared, 3), unmatched))
    return out


def _kept(heard: ChunkHeard, last: Chunk) -> list[Heard]:
    """The segments this chunk keeps: those whose middle lies in the span it owns."""
    chunk = heard.chunk
    return [h for h in heard.segments
            if chunk.own_from <= (h.start + h.end) / 2 < chunk.own_to or (h.start + h.end) / 2 == chunk.own_to == last.own_to]


def merge_answers(chunks: list[Chunk], answers: list[dict[str, Any]]) -> list[Line]:
    """The chunks' segments on the source's clock, each kept by the chunk that owns its middle, with the
    speakers reconciled across chunks (see :func:`merge_chunks`)."""
    return merge_chunks(chunks, answers)[0]


def merge_chunks(chunks: list[Chunk], answers: list[dict[str, Any]]) -> tuple[list[Line], list[Reconciled]]:
    """The transcript's lines and how each chunk's speaker labels were named."""
    heard = [read_chunk(c, a) for c, a in zip(chunks, answers)]
    kept = [_kept(h, chunks[-1]) for h in heard]
    labels = reconcile(heard, [{k.label for k in keep if k.label is not None} for keep in kept])
    lines = [Line(round(k.start, 3), round(k.end, 3), k.text, None if k.label is None else names.names[k.label])
             for keep, names in zip(kept, labels) for k in keep]
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
    return merged, labels


def srt_text(lines: list[Line]) -> str:
    """The lines as SubRip text (``Speaker: text`` when the speaker is known). A line's text is one line, with
    no control character, no timing arrow and no SubRip time in it (a reader takes a line with two for a timing line): an answer's text
    never becomes a cue of its own."""
    import pysubs2

    subs = pysubs2.SSAFile()
    for line in lines:
        prefix = f"{line.speaker}: " if line.speaker else ""
        text = _SRT_TIME.sub(r"\1 \2", " ".join(_CONTROL.sub("", line.text).replace("-->", "->").split()))
        subs.append(pysubs2.SSAEvent(start=round(line.start * 1000), end=round(line.end * 1000), text=prefix + text))
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


def _chunk_name(job: TranscriptJob, chunks: list[Chunk], n: int) -> str:
    chunk = chunks[n]
    return f"{job.name}: chunk {n + 1} of {len(chunks)} (audio {chunk.start:.1f}-{chunk.end:.1f} s)"


def _read_answers(job: TranscriptJob, chunks: list[Chunk],
                  answers: list[tuple[str, str | None, str]]) -> tuple[list[Any], list[str]]:
    """Each chunk's answer checked (times within its audio, fields of their types); the failures, each naming
    its chunk. A chunk refused here has None in place of its answer."""
    read: list[Any] = []
    failed = []
    for n, (chunk, (status, text, error)) in enumerate(zip(chunks, answers)):
        if status != "ok" or text is None:
            failed.append(f"{_chunk_name(job, chunks, n)}: {error}")
            read.append(False)
            continue
        try:
            read.append(read_transcription(text, chunk.end - chunk.start))
        except MalformedAnswer as exc:
            failed.append(f"{_chunk_name(job, chunks, n)}: malformed_answer: {exc}")
            read.append(None)
    return read, failed


def chunk_record(duration: float, chunks: list[Chunk], labels: list[Reconciled]) -> TranscriptChunks:
    """The record written beside a transcript: its chunks and how each one's speaker labels were named."""
    return TranscriptChunks(audio_seconds=round(duration, 3), chunks=[
        TranscriptChunk(number=n, start=c.start, end=c.end, own_from=c.own_from, own_to=c.own_to,
                        reconciled=r.reconciled, shared_seconds=r.shared_seconds, unmatched=r.unmatched,
                        labels={name: label[:80] for label, name in r.names.items()})
        for n, (c, r) in enumerate(zip(chunks, labels), start=1)])


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
            read, failed = _read_answers(job, chunks, [(a.status, a.text, a.error) for a in answers])
            lines, labels = merge_chunks(chunks, read) if not failed else ([], [])
            refused = [request for request, item in zip(requests, read) if item is None]
            if not failed and not lines:
                failed = [f"{job.name}: the transcription holds no speech ({len(chunks)} chunk(s) answered with no "
                          "timed text): no transcript written; the rerun asks again"]
                refused = requests
            for request in refused:
                wrapped.forget(request)  # taken by the model layer, refused here: the next run asks again
            if failed:
                outcome.failed += failed
                log.event("transcribe", subject=job.name, done=False, chunks=len(chunks), failed=len(failed))
                return
            job.out.parent.mkdir(parents=True, exist_ok=True)
            write_chunks(job.out, chunk_record(duration, chunks, labels))
            write_atomic(job.out, srt_text(lines))
            outcome.written.append(job.out)
            speakers = sorted({line.speaker for line in lines if line.speaker})
            log.event("transcribe", subject=job.name, done=True, chunks=len(chunks), lines=len(lines),
                      speakers=speakers, audio_seconds=round(duration, 3),
                      unreconciled=[n for n, r in enumerate(labels, start=1) if not r.reconciled])

        await asyncio.gather(*(one(job) for job in jobs))
        for stats in wrapped.stats.values():
            outcome.sent += stats.requests
            outcome.cached += stats.cache_hits
        outcome.cost = session.spent
    return outcome
