"""``rescue build``: from session videos and subtitles to a draft release and the media for review.

    sessions -> checked inputs -> segments (given or proposed) -> clips + re-timed subtitles
             -> pre-annotation (checked, re-asked once) -> DIR/draft.jsonl + DIR/manifest.json

Every input is checked before anything is written. Every output appears atomically and is reused by a
rerun: clips are not cut again, a finished segment's draft is read back from ``DIR/work``, and requests go
through the model layer's cache (``DIR/cache.sqlite``), so nothing is sent twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import platform
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rescue.builder.annotate import (
    AnnotateSettings,
    Estimate,
    SegmentDraft,
    SegmentJob,
    annotate_segment,
    estimate_segment,
    skeleton_rows,
)
from rescue.builder.inputs import BuildInputError, CheckedSession, SessionSpec, load_sessions
from rescue.builder.log import BuildLog
from rescue.builder.options import BuildOptions
from rescue.builder.manifest import (
    DroppedSegment,
    Manifest,
    ManifestRow,
    ManifestSegment,
    Problem,
    read_finished,
    write_json_atomic,
    write_manifest,
    write_text_atomic,
)
from rescue.builder.prompts import annotation_system_prompt, relation_system_prompt
from rescue.builder.segments import (
    Dropped,
    SegmentSpan,
    keep_long_enough,
    propose_segments,
    read_segments_csv,
    sample_id,
    write_segments_csv,
)
from rescue.data.models import RowValues
from rescue.data.text import clock_time
from rescue.media import Cue, cues_in, ffmpeg_exe, get_step, scene_cuts
from rescue.media._cut import REVIEW_CRF, ClipCutter, review_height

if TYPE_CHECKING:
    from rescue.llm import Model

# Bumped when the prompts or checks change what a finished segment holds, so old drafts are redone.
DRAFT_FORMAT = 1


@dataclass
class BuildConfig:
    """Everything ``rescue build`` was asked to do: the sessions, the output folder, the model and its limits."""

    out: Path
    sessions: list[SessionSpec]
    min_duration: float = BuildOptions.min_duration
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    annotate: AnnotateSettings = field(default_factory=AnnotateSettings)
    extra_body: dict[str, Any] = field(default_factory=dict)
    timeout: float = BuildOptions.timeout
    concurrency: int = BuildOptions.concurrency
    max_retries: int = BuildOptions.max_retries
    max_failures: int | None = BuildOptions.max_failures  # None: never stop
    max_cost: float | None = None
    retry_errors: bool = BuildOptions.retry_errors
    prices: str | None = None
    row_clips: bool = BuildOptions.row_clips
    dry_run: bool = BuildOptions.dry_run
    propose_only: bool = BuildOptions.propose_only
    keyframe_interval: float = 1.0
    scene_threshold: float = 0.3
    review_height: int | None = None  # review clips' height; None: the source's, at most 720
    # None: rescue run's (rescue.llm's DEFAULT_RETRY_AFTER_CAP and DEFAULT_MAX_ANSWER_BYTES), read where a model is
    # asked, so a build that asks none never imports the model layer (httpx and all; benchmarks/README.md).
    retry_after_cap: float | None = None  # the longest Retry-After obeyed, as `rescue run`
    max_answer_bytes: int | None = None  # a larger answer is a request error, as `rescue run`

    def request_limits(self) -> tuple[float, int]:
        """(retry_after_cap, max_answer_bytes), rescue run's where not set."""
        from rescue.llm import DEFAULT_MAX_ANSWER_BYTES, DEFAULT_RETRY_AFTER_CAP

        return (DEFAULT_RETRY_AFTER_CAP if self.retry_after_cap is None else self.retry_after_cap,
                DEFAULT_MAX_ANSWER_BYTES if self.max_answer_bytes is None else self.max_answer_bytes)
    # --transcribe: sessions whose spec says ``transcribe`` get their subtitles from this speech-to-text model.
    transcribe: str | None = None
    transcribe_model: str | None = None  # --transcribe-model: weights on disk for local/faster-whisper
    transcribe_base_url: str | None = None
    transcribe_api_key_env: str | None = None
    language: str | None = None
    check_alignment: bool = not BuildOptions.no_align_check  # subtitles checked against the speech in the audio
    chunk_seconds: float = BuildOptions.chunk_seconds  # --transcribe: the longest audio sent in one request (cut at silences)


@dataclass
class Planned:
    """A segment to build: where it comes from and where its outputs go (relative to DIR)."""

    session: CheckedSession
    segment: SegmentSpan
    sample_id: str
    cues: tuple[Cue, ...]  # re-timed to the clip
    segments_from: str

    @property
    def stem(self) -> str:
        """The segment's path stem under the output folder (its sample id)."""
        return self.sample_id  # "<group>/<video stem>_segmentNN" is a safe relative path

    @property
    def clip(self) -> str:
        """Where the segment's clip goes, relative to the output folder."""
        return f"clips/{self.stem}.mp4"

    @property
    def subtitles(self) -> str:
        """Where the segment's WebVTT goes, relative to the output folder."""
        return f"subtitles/{self.stem}.vtt"

    @property
    def work(self) -> str:
        """The segment's scratch folder, relative to the output folder."""
        return f"work/{self.stem}"


@dataclass
class BuildOutcome:
    """What a build did: segments written and dropped, proposals, problems, failures and notes."""

    out: Path
    segments: list[str] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    proposals: list[Path] = field(default_factory=list)
    problems: int = 0
    failed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the user should know (an earlier proposal used)
    key_problem: str | None = None  # why --model could not answer (a dry run reports it, a run stops)
    estimate: Estimate | None = None
    cost: float | None = None
    requests: int = 0  # the requests behind the drafts, earlier runs' included
    sent: int = 0  # requests this run sent to the endpoint
    cached: int = 0  # answers this run took from DIR/cache.sqlite
    reasked: int = 0  # re-asks this run sent
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)  # sample id -> (start, end) in the source
    transcripts: list[Path] = field(default_factory=list)  # written by this run
    audio_seconds: float = 0.0  # of the sessions still to transcribe (a dry run) or transcribed now
    transcribe_cost: float | None = None
    untranscribed: list[str] = field(default_factory=list)  # a dry run: videos with no transcript yet
    offsets: dict[str, float] = field(default_factory=dict)  # video -> the offset the alignment check found

    @property
    def complete(self) -> bool:
        """Whether nothing failed."""
        return not self.failed


def _plan(config: BuildConfig, notes: list[str]) -> tuple[list[Planned], list[Dropped], list[tuple[Path, list[SegmentSpan]]]]:
    """Check every input and choose segments (``notes`` gets what the user should know about the choice);
    raises :class:`BuildInputError` before anything is written."""
    sessions = load_sessions(config.sessions)
    planned: list[Planned] = []
    dropped: list[Dropped] = []
    proposals: list[tuple[Path, list[SegmentSpan]]] = []
    problems: list[str] = []
    for session in sessions:
        spec = session.spec
        notes += session.notes
        if spec.segments is not None:
            try:
                segments = read_segments_csv(spec.segments, session)
            except BuildInputError as exc:
                problems += exc.problems
                continue
            source = str(spec.segments)
        else:
            source = f"segments/{spec.group}/{session.stem}.csv"
            earlier = config.out / source
            if earlier.is_file():
                # Proposed by an earlier run and perhaps edited since: the user's word, never proposed over.
                try:
                    segments = read_segments_csv(earlier, session)
                except BuildInputError as exc:
                    problems += exc.problems
                    continue
                notes.append(f"{spec.video.name}: using the segments in {earlier} (proposed earlier, edits "
                             "included); delete it to propose again, or pass --segments FILE")
            else:
                cuts = scene_cuts(spec.video, threshold=config.scene_threshold)
                segments = propose_segments(session.cues, session.media.duration, cuts)
                proposals.append((earlier, segments))
        kept, gone = keep_long_enough(spec.group, spec.video, segments, session.cues, config.min_duration)
        dropped += gone
        for segment in kept:
            cues = tuple(cues_in(session.cues, segment.start, segment.end))
            planned.append(Planned(session, segment, sample_id(spec.group, session.stem, segment.number), cues,
                                   source))
    if problems:
        raise BuildInputError(problems)
    return planned, dropped, proposals


def _job(config: BuildConfig, item: Planned) -> SegmentJob:
    spec = item.session.spec
    return SegmentJob(item.sample_id, spec.scenario, spec.participants, item.cues, config.out / item.clip,
                      item.segment.duration, config.out / item.work)


def _draft_key(config: BuildConfig, item: Planned) -> str:
    """What a finished segment's draft depends on; a change means it is annotated again."""
    spec = item.session.spec
    parts = {
        "format": DRAFT_FORMAT, "model": config.model, "base_url": config.base_url,
        "settings": asdict(config.annotate), "extra_body": config.extra_body,
        "prompts": [annotation_system_prompt(spec.scenario, spec.participants),
                    relation_system_prompt(spec.scenario, spec.participants)],
        "cues": [asdict(c) for c in item.cues], "duration": item.segment.duration,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _load_finished(path: Path, key: str) -> SegmentDraft | None:
    found = read_finished(path, key)
    if found is None:
        return None
    return SegmentDraft(found.rows, found.problems, found.requests, found.reasked)


def _run_step(log: BuildLog, name: str, subject: str, *args: Any, fields: dict[str, Any] | None = None,
              **options: Any) -> None:
    """Run the media step ``name`` (found in the registry) and log it as done, or skipped when its output exists."""
    done = get_step(name).run(*args, **options)
    log.step(name, subject, bool(done), **(fields or {}))


def _submit_cut(cutter: ClipCutter, config: BuildConfig, item: Planned) -> tuple[Future[bool], dict[str, Any]]:
    """Queue the segment's clip on ``cutter``; the fields its log line carries."""
    spec = item.session.spec
    height = review_height(item.session.media.height, config.review_height)
    future = cutter.submit(spec.video, item.segment.start, item.segment.end, config.out / item.clip,
                           keyframe_interval=config.keyframe_interval, height=height, crf=REVIEW_CRF)
    return future, {"source": str(spec.video), "start": item.segment.start, "end": item.segment.end, "height": height}


def _media(config: BuildConfig, planned: list[Planned], dropped: list[Dropped], log: BuildLog,
           outcome: BuildOutcome) -> dict[str, set[int]]:
    """Cut every segment's clip (in the background, one encode at a time) and write its subtitles, while this
    thread checks the alignment; the log reads as if one ran after the other. A clip is logged done once it
    is checked and in place. Returns the lines with no speech under them (see :func:`_check_alignment`)."""
    with ClipCutter() as cutter:
        cuts = [] if config.propose_only else [(item, *_submit_cut(cutter, config, item)) for item in planned]
        silent_lines = _check_alignment(config, planned, log, outcome) if config.check_alignment else {}
        for note in outcome.notes:
            log.event("note", message=note)
        for gone in dropped:
            log.event("dropped", sample_id=gone.sample_id, reason=gone.reason)
        for item, future, fields in cuts:
            log.step("cut", item.sample_id, future.result(), **fields)
            _run_step(log, "retime", item.sample_id, list(item.cues), config.out / item.subtitles,
                      fields={"cues": len(item.cues)})
    return silent_lines


def _row_clips(config: BuildConfig, item: Planned, rows: list[RowValues], log: BuildLog) -> list[str]:
    paths = []
    for row in rows:
        start, end = row["start_time"], min(row["end_time"], item.segment.duration)
        if end <= start:
            continue
        relative = f"row_clips/{item.stem}/row{row['row_index']:03d}.mp4"
        _run_step(log, "cut", f"{item.sample_id}#row{row['row_index']}", config.out / item.clip, start, end,
                  config.out / relative, keyframe_interval=config.keyframe_interval, crf=REVIEW_CRF,
                  height=review_height(item.session.media.height, config.review_height))
        paths.append(relative)
    return paths


def _split_problems(item: Planned, rows: list[RowValues]) -> list[Problem]:
    """A problem on each row that starts where a line holding two speakers was split (the time is a guess)."""
    out = []
    for start, message in item.session.split:
        if not item.segment.start <= start < item.segment.end:
            continue
        clip_time = start - item.segment.start
        for row in rows:
            if abs(row["start_time"] - clip_time) <= 0.05:
                out.append(Problem(row_index=row["row_index"], field="start_time", message=message))
                break
        else:
            out.append(Problem(field="start_time", message=message))
    return out


def _attribution_problems(item: Planned, rows: list[RowValues]) -> list[Problem]:
    """A transcript without speakers leaves lines unnamed and the model names who speaks: each row over such a
    line is a guess for the reviewer to confirm."""
    if not item.session.spec.transcribe:
        return []
    unnamed = [c for c in item.cues if not c.speakers]
    out = []
    for row in rows:
        if any(c.start < row["end_time"] and c.end > row["start_time"] for c in unnamed):
            out.append(Problem(row_index=row["row_index"], field="primary_speaker",
                               message=f"the transcript names no speaker here: {row.get('primary_speaker')!r} is "
                                       "the model's attribution; confirm it"))
    return out


def _chunk_problems(item: Planned, rows: list[RowValues]) -> list[Problem]:
    """A ``primary_speaker`` problem on every row of a transcription chunk whose speaker labels the shared speech
    could not match to the chunk before (they are numbered apart: the same person may have two labels)."""
    chunks = item.session.chunks
    if chunks is None:
        return []
    out = []
    for chunk in (c for c in chunks.chunks if not c.reconciled):
        for row in rows:
            start, end = item.segment.start + row["start_time"], item.segment.start + row["end_time"]
            if chunk.holds(start, end):
                out.append(Problem(row_index=row["row_index"], field="primary_speaker", message=(
                    f"transcription chunk {chunk.number} ({clock_time(chunk.own_from)}-{clock_time(chunk.own_to)} "
                    f"in the source) could not be matched to chunk {chunk.number - 1}: its speaker labels are "
                    f"numbered apart, so {row.get('primary_speaker')!r} may be another person; confirm the speaker")))
    return out


def _silent_line_problems(item: Planned, rows: list[RowValues], silent: set[int]) -> list[Problem]:
    """A problem for each line of the segment with no speech under it in the audio, on the first row over it."""
    out = []
    for cue in item.cues:
        if cue.index not in silent:
            continue
        row = next((r for r in rows if r["start_time"] < cue.end and r["end_time"] > cue.start), None)
        out.append(Problem(row_index=None if row is None else row["row_index"], field="start_time",
                           message=f"subtitle line {cue.index} ({cue.start:g}-{cue.end:g} s in the clip) has no "
                                   "speech under it in the audio: check its timing (--subs-offset) or its text"))
    return out


def _manifest_rows(rows: list[RowValues], cues: tuple[Cue, ...]) -> list[ManifestRow]:
    """Each row's span with the subtitle text and speakers of the cues it spans (the ground truth)."""
    out = []
    for row in rows:
        spanned = [c for c in cues if c.start < row["end_time"] and c.end > row["start_time"]] or [
            c for c in cues if c.start <= row["start_time"] <= c.end]
        speakers: list[str] = []
        for cue in spanned:
            speakers += [s for s in cue.speakers if s not in speakers]
        out.append(ManifestRow(row_index=row["row_index"], start_time=row["start_time"], end_time=row["end_time"],
                               text=" ".join(c.text for c in spanned) or row["dialogue_cleaned"],
                               speakers=speakers or [row["primary_speaker"]]))
    return out


def _sample(item: Planned, rows: list[RowValues]) -> dict[str, Any]:
    spec = item.session.spec
    for row in rows:
        row.setdefault("relation_pattern", None)
        row.setdefault("relation_pattern_reason", None)
        row.setdefault("relation_pattern_evidence_rows", [])
    return {"sample_id": item.sample_id, "scenario": spec.scenario, "participants": list(spec.participants),
            "source_file": item.clip, "rows": rows}


def _provenance(config: BuildConfig, item: Planned, draft: SegmentDraft, annotated: str | None) -> dict[str, Any]:
    from rescue._version import __version__

    spec = item.session.spec
    stat = spec.video.stat()
    return {
        "source_video_bytes": stat.st_size, "subtitles_file": _relative(spec.subtitles, config.out),
        # A proposal's path is DIR/segments/...: already relative to DIR.
        "segments_from": item.segments_from if spec.segments is None else _relative(spec.segments, config.out),
        "segment_number": item.segment.number, "segment_name": item.segment.name,
        "group": spec.group, "model": annotated,
        "base_url": _redacted(config.base_url) if annotated else None, "video_input": config.annotate.video_input,
        "settings": asdict(config.annotate), "requests": draft.requests, "reasked": draft.reasked,
        "ffmpeg": ffmpeg_exe(), "rescue_version": __version__, "python": platform.python_version(),
        # The subtitles' own history: made by --transcribe (which model), moved by --subs-offset.
        "transcribed_by": (config.transcribe or "your own model") if spec.transcribe else None,
        "transcribe_base_url": _redacted(config.transcribe_base_url) if spec.transcribe else None,
        "subs_offset": spec.subs_offset,
    }


def _redacted(url: str | None) -> str | None:
    if not url:  # no endpoint, no model layer to import
        return url
    from rescue.llm._secrets import redact_url

    return redact_url(url)


def _check_model(config: BuildConfig) -> str | None:
    """What stops ``--model`` from answering (no key, a refused key, no endpoint), else None."""
    from rescue.llm import CredentialError, check_endpoint, resolve_endpoint

    assert config.model is not None
    if config.model.startswith("local/"):
        return None
    try:
        endpoint = resolve_endpoint(config.model, base_url=config.base_url, api_key_env=config.api_key_env)
        if not config.dry_run:
            check_endpoint(endpoint)
    except CredentialError as exc:
        return str(exc)
    return None


def _transcripts(config: BuildConfig, model: Model | None, transcriber: Model | None,
                 echo: Callable[[str], None], notes: list[str]) -> BuildOutcome:
    """Transcribe every ``--transcribe`` session that has no transcript yet (a dry run counts their audio and
    its cost instead); the keys of both models are checked before a second of audio is sent."""
    outcome = BuildOutcome(config.out)
    wanted = [s for s in config.sessions if s.transcribe]
    pending = [s for s in wanted if not s.subtitles.is_file()]
    for spec in wanted:
        if spec.subtitles.is_file():
            notes.append(f"{spec.video.name}: using the transcript {spec.subtitles} (written earlier, edits "
                         "included); delete it to transcribe again")
    if not pending:
        return outcome
    if config.transcribe is None and transcriber is None:
        raise BuildInputError([f"{s.video}: no subtitles and no --transcribe MODEL" for s in pending])
    if config.dry_run:
        from rescue.llm import PriceTable, Usage
        from rescue.media import MediaError, probe

        for spec in pending:
            try:
                outcome.audio_seconds += probe(spec.video).duration
            except MediaError as exc:
                raise BuildInputError([str(exc)]) from None
            outcome.untranscribed.append(str(spec.video))
        name = config.transcribe or str(getattr(transcriber, "name", ""))
        outcome.transcribe_cost = PriceTable.load(config.prices).cost(name, Usage(audio_seconds=outcome.audio_seconds))
        return outcome
    from rescue.builder.transcribe import TranscriptJob, transcribe_all
    from rescue.llm import CredentialError, check_endpoint
    from rescue.llm._transcribe import TranscriptionModel, resolve_transcriber

    if transcriber is None:
        assert config.transcribe is not None
        resolved = resolve_transcriber(config.transcribe, weights=config.transcribe_model,
                                       base_url=config.transcribe_base_url, api_key_env=config.transcribe_api_key_env,
                                       language=config.language, timeout=config.timeout,
                                       max_answer_bytes=config.request_limits()[1])
        if isinstance(resolved, TranscriptionModel):
            check_endpoint(resolved.endpoint)
        transcriber = resolved
    if config.model is not None and model is None:
        problem = _check_model(config)  # before paying for the audio, not after
        if problem:
            raise CredentialError(problem)
    jobs = [TranscriptJob(spec.video, spec.subtitles,
                          config.out / "audio" / spec.group / f"{spec.video.stem}.wav", f"{spec.group}/{spec.video.stem}")
            for spec in pending]
    config.out.mkdir(parents=True, exist_ok=True)
    log = BuildLog(config.out / "build.log")
    try:
        done = asyncio.run(transcribe_all(jobs, transcriber, cache=config.out / "cache.sqlite",
                                          concurrency=config.concurrency, max_retries=config.max_retries,
                                          retry_errors=config.retry_errors, max_failures=config.max_failures,
                                          max_cost=config.max_cost, prices=config.prices, log=log, echo=echo,
                                          chunk_seconds=config.chunk_seconds, retry_after_cap=config.request_limits()[0]))
    finally:
        log.close()
    outcome.transcripts, outcome.failed = done.written, done.failed
    outcome.sent, outcome.cached, outcome.transcribe_cost = done.sent, done.cached, done.cost
    notes += done.notes
    outcome.notes = notes
    return outcome


def _check_alignment(config: BuildConfig, planned: list[Planned], log: BuildLog,
                     outcome: BuildOutcome) -> dict[str, set[int]]:
    """Each session's lines against the speech in its audio: the global offset reported (a note and
    ``build.log``), and the lines with no speech under them (their indices, by video)."""
    from rescue.builder.align import estimate_offset
    from rescue.media import silences

    sessions = {str(item.session.spec.video): item.session for item in planned}
    silent_lines: dict[str, set[int]] = {}
    for video, session in sessions.items():
        if not session.media.has_audio or not session.cues:
            continue
        found = estimate_offset(session.cues, silences(session.spec.video, duration=session.media.duration),
                                session.media.duration)
        silent_lines[video] = {cue.index for cue in found.silent}
        if found.reliable:
            outcome.offsets[video] = found.offset
        log.event("alignment", video=video, offset=found.offset, matched=found.matched, lines=found.lines,
                  reliable=found.reliable, silent_lines=sorted(silent_lines[video]))
        if found.reportable:
            when = "after" if found.offset < 0 else "before"
            outcome.notes.append(
                f"{session.spec.subtitles}: the lines start {abs(found.offset):.2f} s {when} the speech in the audio "
                f"({found.matched} of {found.lines} line starts match at that offset); "
                f"--subs-offset {found.offset:+.2f} moves them onto it")
        if found.silent:
            outcome.notes.append(f"{session.spec.subtitles}: {len(found.silent)} line(s) have no speech under them "
                                 "in the audio (flagged as problems)")
    return silent_lines


def _relative(path: Path, out: Path) -> str:
    """A path as the manifest holds every path: relative to DIR (one base, so the folder can move with its
    sources)."""
    return os.path.relpath(path.resolve(), out.resolve())


async def _annotate_all(config: BuildConfig, items: list[Planned], log: BuildLog, model: Model | None,
                        echo: Callable[[str], None], outcome: BuildOutcome) -> tuple[dict[str, SegmentDraft], float | None]:
    from rescue.llm import ModelSession, resolve_model

    drafts: dict[str, SegmentDraft] = {}
    todo = []
    for item in items:
        key = _draft_key(config, item)
        finished = _load_finished(config.out / item.work / "draft.json", key)
        if finished is not None:
            drafts[item.sample_id] = finished
            log.step("annotate", item.sample_id, False)
        else:
            todo.append((item, key))
    if not todo:
        return drafts, 0.0
    async with ModelSession(cache=config.out / "cache.sqlite", concurrency=config.concurrency,
                       max_retries=config.max_retries, retry_errors=config.retry_errors,
                       max_failures=config.max_failures, max_cost=config.max_cost, prices=config.prices,
                       retry_after_cap=config.request_limits()[0], log=log, notice=echo) as session:
        if model is None:
            assert config.model is not None
            model = resolve_model(config.model, base_url=config.base_url, api_key_env=config.api_key_env,
                                  json_mode=True, timeout=config.timeout, extra_body=config.extra_body,
                                  max_answer_bytes=config.request_limits()[1])
        wrapped = session.wrap(model)

        async def one(item: Planned, key: str) -> None:
            draft = await annotate_segment(wrapped, _job(config, item), config.annotate)
            drafts[item.sample_id] = draft
            log.step("annotate", item.sample_id, True, requests=draft.requests, reasked=draft.reasked,
                     problems=len(draft.problems), failed=draft.failed)
            if draft.complete:
                write_json_atomic(config.out / item.work / "draft.json", {
                    "key": key, "rows": draft.rows, "problems": [p.model_dump() for p in draft.problems],
                    "requests": draft.requests, "reasked": draft.reasked})

        await asyncio.gather(*(one(item, key) for item, key in todo))
        for (_purpose, tag), stats in wrapped.stats.items():
            outcome.sent += stats.requests
            outcome.cached += stats.cache_hits
            if tag.endswith("-reask"):
                outcome.reasked += stats.requests
        return drafts, session.spent


def _dry_run(config: BuildConfig, planned: list[Planned], outcome: BuildOutcome, annotating: bool) -> BuildOutcome:
    outcome.estimate = Estimate()
    if annotating:
        for item in planned:
            outcome.estimate.add(estimate_segment(_job(config, item), config.annotate))
    outcome.segments = [item.sample_id for item in planned]
    return outcome


def _drafts(config: BuildConfig, planned: list[Planned], log: BuildLog, model: Model | None,
            echo: Callable[[str], None], outcome: BuildOutcome, annotating: bool) -> dict[str, SegmentDraft]:
    """Each segment's draft: pre-annotated by the model, or the subtitles' skeleton rows without one."""
    if annotating:
        drafts, outcome.cost = asyncio.run(_annotate_all(config, planned, log, model, echo, outcome))
        return drafts
    drafts = {}
    for item in planned:
        rows, problems = skeleton_rows(item.cues)
        drafts[item.sample_id] = SegmentDraft(rows, [Problem(message="not pre-annotated (no --model)"), *problems])
    return drafts


def _write_outputs(config: BuildConfig, planned: list[Planned], dropped: list[Dropped],
                   drafts: dict[str, SegmentDraft], silent_lines: dict[str, set[int]], log: BuildLog,
                   outcome: BuildOutcome, annotating: bool, annotated: str | None) -> None:
    """``draft.jsonl`` and ``manifest.json`` (and the row clips): each draft with the problems the build adds;
    ``annotated`` names the model that pre-annotated them."""
    manifest = Manifest(dropped=[DroppedSegment(sample_id=d.sample_id, source_video=d.source_video,
                                                start=d.start, end=d.end, reason=d.reason) for d in dropped])
    lines = []
    for item in planned:
        draft = drafts[item.sample_id]
        extra = [*_split_problems(item, draft.rows), *_chunk_problems(item, draft.rows),
                 *_silent_line_problems(item, draft.rows, silent_lines.get(str(item.session.spec.video), set()))]
        if annotating:
            extra += _attribution_problems(item, draft.rows)
        draft = SegmentDraft(draft.rows, [*draft.problems, *extra], draft.requests, draft.reasked, draft.failed)
        outcome.failed += [f"{item.sample_id}: {f}" for f in draft.failed]
        outcome.requests += draft.requests
        outcome.problems += len(draft.problems)
        row_clips = _row_clips(config, item, draft.rows, log) if config.row_clips else []
        lines.append(json.dumps(_sample(item, draft.rows), ensure_ascii=False))
        spec = item.session.spec
        manifest.segments.append(ManifestSegment(
            sample_id=item.sample_id, scenario=spec.scenario, participants=list(spec.participants),
            source_video=_relative(spec.video, config.out), start=item.segment.start, end=item.segment.end,
            clip=item.clip, subtitles=item.subtitles, rows=_manifest_rows(draft.rows, item.cues),
            problems=draft.problems, provenance=_provenance(config, item, draft, annotated), row_clips=row_clips))
        outcome.segments.append(item.sample_id)
    write_text_atomic(config.out / "draft.jsonl", "".join(line + "\n" for line in lines))
    write_manifest(config.out / "manifest.json", manifest)


def build(config: BuildConfig, *, model: Model | None = None, transcriber: Model | None = None,
          echo: Callable[[str], None] = lambda message: None) -> BuildOutcome:
    """Run the whole build; ``model`` replaces ``--model`` (a notebook's own :class:`~rescue.llm.Model`),
    ``transcriber`` replaces ``--transcribe``."""
    notes: list[str] = []
    first = _transcripts(config, model, transcriber, echo, notes)
    if first.failed:
        return first
    if first.untranscribed:  # a dry run: nothing to plan for a session not transcribed yet
        config = replace(config, sessions=[s for s in config.sessions if str(s.video) not in first.untranscribed])
    planned, dropped, proposals = _plan(config, notes)
    outcome = BuildOutcome(config.out, dropped=dropped, notes=notes,
                           spans={item.sample_id: (item.segment.start, item.segment.end) for item in planned},
                           transcripts=first.transcripts, audio_seconds=first.audio_seconds,
                           transcribe_cost=first.transcribe_cost, untranscribed=first.untranscribed)
    annotating = model is not None or config.model is not None
    if config.model is not None and model is None:
        # The key (and the endpoint, where it lists /models) before anything is cut: a missing or refused key
        # found after an hour of cutting is an hour lost. A dry run sends nothing, so it checks the key only.
        outcome.key_problem = _check_model(config)
        if outcome.key_problem and not config.dry_run:
            from rescue.llm import CredentialError

            raise CredentialError(outcome.key_problem)
    if config.dry_run:
        return _dry_run(config, planned, outcome, annotating)
    config.out.mkdir(parents=True, exist_ok=True)
    log = BuildLog(config.out / "build.log")
    try:
        log.event("start", sessions=len(config.sessions), segments=len(planned), dropped=len(dropped),
                  model=config.model, video_input=config.annotate.video_input)
        for path, segments in proposals:
            if not path.exists():  # an edited proposal is the user's: never overwrite it
                write_segments_csv(path, segments)
            outcome.proposals.append(path)
            log.step("propose", str(path.relative_to(config.out)), True, segments=len(segments))
        silent_lines = _media(config, planned, dropped, log, outcome)
        if config.propose_only:
            return outcome
        drafts = _drafts(config, planned, log, model, echo, outcome, annotating)
        _write_outputs(config, planned, dropped, drafts, silent_lines, log, outcome, annotating,
                       config.model or getattr(model, "name", None))
        log.event("finish", segments=len(planned), problems=outcome.problems, failed=outcome.failed,
                  requests=outcome.requests, sent=outcome.sent, cached=outcome.cached, reasked=outcome.reasked,
                  cost=outcome.cost)
        return outcome
    finally:
        log.close()
