"""Pre-annotation of one segment through :mod:`rescue.llm`: windows of cues, visual evidence, checks,
one re-ask with the list of violations, merging, then the relation-pattern pass.

Requests are planned first (:func:`plan_segment`) so ``--dry-run`` counts exactly what a real run sends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rescue.builder.checks import (
    TIME_TOLERANCE,
    RelationFields,
    check_relations,
    check_rows,
    parse_draft,
    uncovered_cues,
)
from rescue.builder.manifest import Problem
from rescue.builder.options import BuildOptions
from rescue.builder.prompts import (
    ROW_KEYS,
    annotation_system_prompt,
    annotation_user_prompt,
    relation_system_prompt,
    relation_user_prompt,
    retry_prompt,
)
from rescue.data.models import THERAPIST, RowValues, Scenario
from rescue.data.choices import BuildVideoInput
from rescue.media import Cue, cut_clip, frame_times, grab_frames

if TYPE_CHECKING:
    from rescue.llm import ChatAnswer, Message, Model

# Rough token sizes for --dry-run estimates: a ~512 px image, a second of video (Gemini's rates).
IMAGE_TOKENS = 260
VIDEO_TOKENS_PER_SECOND = 300
OUTPUT_TOKENS_PER_CUE = 350
RELATION_OUTPUT_TOKENS_PER_ROW = 80


@dataclass(frozen=True)
class AnnotateSettings:
    """How pre-annotation asks: frames or clips, how many images, and the size and overlap of cue windows."""

    # The defaults are rescue build's (rescue.builder.options, their one declaration).
    video_input: BuildVideoInput = BuildOptions.video_input
    frame_rate: float = BuildOptions.frame_rate  # frames per second of speech
    frames_per_cue: int = BuildOptions.frames_per_line
    max_images: int = BuildOptions.max_images  # per request, spread over its cues
    frame_width: int = BuildOptions.frame_width
    window_cues: int = BuildOptions.window_lines
    window_overlap: int = BuildOptions.window_overlap
    max_tokens: int = BuildOptions.max_tokens
    relation_max_tokens: int = 4000
    temperature: float | None = None


@dataclass(frozen=True)
class SegmentJob:
    """One segment to pre-annotate: its sample, cast, cues re-timed to the clip, the clip and a scratch folder."""

    sample_id: str
    scenario: Scenario
    participants: tuple[str, ...]
    cues: tuple[Cue, ...]  # re-timed to the clip, numbered from 1
    clip: Path
    clip_duration: float
    work: Path  # a folder for this segment's scratch media (window clips)


@dataclass(frozen=True)
class Window:
    """One request's share of a segment: its cues, the cues whose rows it provides, and its image times."""

    number: int
    cues: tuple[Cue, ...]
    owned: tuple[int, int]  # cue indices (inclusive) whose rows this window's answer provides
    image_times: tuple[tuple[int, float], ...] = ()  # (cue index, time in clip)

    @property
    def span(self) -> tuple[float, float]:
        """The window's start and end in the clip."""
        return self.cues[0].start, self.cues[-1].end


def make_windows(cues: Sequence[Cue], size: int, overlap: int) -> list[tuple[tuple[Cue, ...], tuple[int, int]]]:
    """Windows of ``size`` cues, neighbours sharing ``overlap``; each owns the cues up to the middle of
    its overlaps, so every cue is owned by exactly one window."""
    if len(cues) <= size:
        return [(tuple(cues), (cues[0].index, cues[-1].index))]
    overlap = max(0, min(overlap, size - 1))
    step = size - overlap
    starts = list(range(0, max(1, len(cues) - overlap), step))
    out = []
    for n, begin in enumerate(starts):
        chunk = tuple(cues[begin : begin + size])
        first = chunk[0].index + (overlap // 2 if n > 0 else 0)
        last = chunk[-1].index - (overlap - overlap // 2 if n < len(starts) - 1 else 0)
        out.append((chunk, (first, last)))
    return out


def _image_times(cues: Sequence[Cue], settings: AnnotateSettings) -> tuple[tuple[int, float], ...]:
    per_cue = [(c.index, t) for c in cues for t in frame_times(c.start, c.end, settings.frame_rate,
                                                                 settings.frames_per_cue)]
    if len(per_cue) <= settings.max_images:
        return tuple(per_cue)
    step = len(per_cue) / settings.max_images
    return tuple(per_cue[int(i * step)] for i in range(settings.max_images))


def plan_segment(job: SegmentJob, settings: AnnotateSettings) -> list[Window]:
    """The annotation windows of ``job``, each with the frame times it sends."""
    windows = []
    for n, (chunk, owned) in enumerate(make_windows(job.cues, settings.window_cues, settings.window_overlap), 1):
        times = _image_times(chunk, settings) if settings.video_input == "frames" else ()
        windows.append(Window(n, chunk, owned, times))
    return windows


@dataclass
class Estimate:
    """What pre-annotation sends: requests, images, video seconds and estimated tokens."""

    requests: int = 0
    images: int = 0
    video_seconds: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Estimate) -> None:
        """Add ``other``'s counts to these."""
        for name in ("requests", "images", "video_seconds", "input_tokens", "output_tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def estimate_segment(job: SegmentJob, settings: AnnotateSettings) -> Estimate:
    """What pre-annotating ``job`` sends, without re-asks: annotation windows plus the relation pass."""
    system = annotation_system_prompt(job.scenario, job.participants)
    est = Estimate()
    for window in plan_segment(job, settings):
        text = system + annotation_user_prompt(window.cues, job.clip_duration, window=(1, 1))
        est.requests += 1
        est.images += len(window.image_times)
        est.input_tokens += len(text) // 4 + len(window.image_times) * IMAGE_TOKENS
        if settings.video_input == "clip":
            seconds = window.span[1] - window.span[0]
            est.video_seconds += seconds
            est.input_tokens += int(seconds * VIDEO_TOKENS_PER_SECOND)
        est.output_tokens += OUTPUT_TOKENS_PER_CUE * len(window.cues)
    rows = len(job.cues)
    est.requests += 1
    est.input_tokens += (len(relation_system_prompt(job.scenario, job.participants)) + 300 * rows) // 4
    est.output_tokens += RELATION_OUTPUT_TOKENS_PER_ROW * rows
    return est


@dataclass
class SegmentDraft:
    """The draft rows of one segment, the open problems, the requests made and those that failed."""

    rows: list[RowValues]
    problems: list[Problem]
    requests: int = 0
    reasked: int = 0
    failed: list[str] = field(default_factory=list)  # request errors: the draft is not final, a rerun asks again

    @property
    def complete(self) -> bool:
        """Whether every request was answered (a rerun asks again for those that failed)."""
        return not self.failed


def skeleton_rows(cues: Sequence[Cue]) -> tuple[list[RowValues], list[Problem]]:
    """One row per cue, for a segment built without a model (or whose requests failed): times, speaker and
    words from the subtitles, every other field empty."""
    rows, problems = [], []
    for cue in cues:
        speaker = cue.speakers[0] if len(cue.speakers) == 1 else THERAPIST
        row: RowValues = {key: [] for key in ROW_KEYS}
        row.update(start_time=cue.start, end_time=cue.end, primary_speaker=speaker, dialogue_cleaned=cue.text,
                   utterance_type="", tone_of_voice="")
        rows.append(row)
        if len(cue.speakers) != 1:
            problems.append(Problem(row_index=len(rows), field="primary_speaker",
                                    message=f"the subtitle line names {'no' if not cue.speakers else 'several'} "
                                            f"speaker(s); shown as {THERAPIST} until reviewed"))
    for index, row in enumerate(rows, start=1):
        row["row_index"] = index
    return rows, problems


async def _window_messages(job: SegmentJob, window: Window, settings: AnnotateSettings, total: int) -> list[Message]:
    from rescue.llm import ImagePart, Message, TextPart, VideoPart

    system = Message("system", annotation_system_prompt(job.scenario, job.participants))
    span = (window.cues[0].index, window.cues[-1].index) if total > 1 else None
    if settings.video_input == "none":
        return [system, Message("user", annotation_user_prompt(window.cues, job.clip_duration, window=span))]
    if settings.video_input == "clip":
        # The model gets a copy scaled to --frame-width: a full-resolution segment would be a huge request.
        clip = job.work / f"window{window.number:02d}.mp4"
        start, end = (0.0, job.clip_duration) if total == 1 else window.span
        await asyncio.to_thread(cut_clip, job.clip, start, end, clip, width=settings.frame_width)
        evidence = ("The video of these lines is attached." if total == 1 else
                    f"The attached video starts at {window.span[0]:.2f} s of the clip; the times below are clip times.")
        text = annotation_user_prompt(window.cues, job.clip_duration, window=span, evidence=evidence)
        data = await asyncio.to_thread(clip.read_bytes)
        return [system, Message("user", [VideoPart(data, "video/mp4"), TextPart(text)])]
    parts: list[Any] = []
    by_cue: dict[int, list[float]] = {}
    for index, time in window.image_times:
        by_cue.setdefault(index, []).append(time)
    for index, times in by_cue.items():
        cue = next(c for c in window.cues if c.index == index)
        frames = await asyncio.to_thread(grab_frames, job.clip, cue.start, cue.end, rate=settings.frame_rate,
                                         cap=settings.frames_per_cue, width=settings.frame_width)
        for frame in frames:
            if any(abs(frame.time - t) < 1e-6 for t in times):
                parts += [TextPart(f"Frame at {frame.time:.2f} s (line [{index}]):"), ImagePart(frame.jpeg, frame.mime)]
    evidence = "Frames sampled inside the lines come first, each labelled with its time." if parts else ""
    parts.append(TextPart(annotation_user_prompt(window.cues, job.clip_duration, window=span, evidence=evidence)))
    return [system, Message("user", parts)]


def _describe(problems: Sequence[Problem], rows: Sequence[RowValues]) -> list[str]:
    out = []
    for p in problems:
        if p.row_index is not None and 1 <= p.row_index <= len(rows):
            row = rows[p.row_index - 1]
            out.append(f"row starting at {row['start_time']} s ({p.field or 'row'}): {p.message}")
        else:
            out.append(f"{p.field + ': ' if p.field else ''}{p.message}")
    return out


async def _ask(model: Model, messages: list[Message], max_tokens: int, settings: AnnotateSettings,
               tag: str, ids: tuple[str, ...]) -> ChatAnswer:
    from rescue.llm import ChatRequest

    return await model.complete(ChatRequest(list(messages), max_tokens=max_tokens, temperature=settings.temperature,
                                            json_mode=True, purpose="annotate", tag=tag, ids=ids))


_Found = TypeVar("_Found", list[RowValues], dict[int, RelationFields])


@dataclass(frozen=True)
class _Asked:
    """A first request whose answer broke the rules, and how its re-ask is sent."""

    messages: list[Message]
    answer_text: str | None
    max_tokens: int
    tag: str
    ids: tuple[str, ...]


async def _reask(
        model: Model, asked: _Asked, first: tuple[_Found, list[Problem]], broken: list[str],
        check: Callable[[str | None], tuple[_Found, list[Problem]]], settings: AnnotateSettings, draft: SegmentDraft,
        where: str) -> tuple[_Found, list[Problem]]:
    """The one re-ask with the broken rules listed, shared by the rows and the relation pass: the second answer
    replaces the first when it found anything or the first found nothing, and a failed re-ask is noted, so a
    draft never silently keeps less than the first answer gave."""
    from rescue.llm import Message

    draft.reasked += 1
    retry = [*asked.messages, Message("assistant", asked.answer_text or ""), Message("user", retry_prompt(broken))]
    second = await _ask(model, retry, asked.max_tokens, settings, asked.tag, asked.ids)
    draft.requests += 1
    if second.status != "ok":
        return first[0], [*first[1], Problem(message=f"{where}the re-ask failed: {second.error}")]
    again = check(second.text)
    return again if again[0] or not first[0] else first


async def _annotate_window(model: Model, job: SegmentJob, window: Window, settings: AnnotateSettings,
                           total: int, draft: SegmentDraft) -> tuple[list[RowValues], list[Problem]]:

    messages = await _window_messages(job, window, settings, total)
    ids = (f"{job.sample_id}#window{window.number}",)

    def check(answer_text: str | None) -> tuple[list[RowValues], list[Problem]]:
        value, problems = parse_draft(answer_text)
        if value is None:
            return [], problems
        rows, more = check_rows(value, window.cues, scenario=job.scenario, participants=job.participants,
                                clip_duration=job.clip_duration)
        return rows, problems + more

    answer = await _ask(model, messages, settings.max_tokens, settings, "rows", ids)
    draft.requests += 1
    if answer.status != "ok":
        draft.failed.append(f"window {window.number}: {answer.error}")
        return [], [Problem(message=f"window {window.number}: request failed: {answer.error}")]
    rows, problems = check(answer.text)
    if problems:
        asked = _Asked(messages, answer.text, settings.max_tokens, "rows-reask", ids)
        rows, problems = await _reask(model, asked, (rows, problems), _describe(problems, rows), check, settings,
                                      draft, f"window {window.number}: ")
    if not rows:
        # Nothing usable even after the re-ask: the subtitles stand in as rows so no line is lost.
        rows, stand_in = skeleton_rows(window.cues)
        problems = [*problems, *stand_in, Problem(message="the model gave no usable rows; the subtitle lines are "
                                                          "shown as rows, not annotated")]
    return rows, problems


def _owner(row: RowValues, cues: Sequence[Cue]) -> int:
    """The index of the cue a row belongs to: the one holding its start, else the nearest."""
    start = row["start_time"] if isinstance(row.get("start_time"), int | float) else 0.0
    for cue in cues:
        if cue.start - TIME_TOLERANCE <= start <= cue.end + TIME_TOLERANCE:
            return cue.index
    return min(cues, key=lambda c: abs(c.start - start)).index


def merge_windows(job: SegmentJob, results: Sequence[tuple[Window, list[RowValues], list[Problem]]]
                  ) -> tuple[list[RowValues], list[Problem]]:
    """The rows each window owns, in time order and renumbered; row problems follow their rows. Coverage is
    checked again on the merged rows, and every line they still leave out becomes a row of its own (the
    subtitles' words and speaker, nothing annotated, a problem on it), so no line is ever lost."""
    tagged: list[tuple[RowValues, list[Problem]]] = []
    segment_problems: list[Problem] = []
    single = len(results) == 1
    for window, rows, problems in results:
        first, last = window.owned
        keep = {i for i, row in enumerate(rows, start=1) if first <= _owner(row, job.cues) <= last}
        for i, row in enumerate(rows, start=1):
            if i in keep:
                tagged.append((row, [p for p in problems if p.row_index == i]))
        for p in problems:
            if p.row_index is None and not p.message.startswith("subtitle line ["):
                segment_problems.append(p if single else Problem(field=p.field, message=f"window {window.number}: {p.message}"))
    for cue in uncovered_cues([row for row, _ in tagged], job.cues):
        rows, stand_in = skeleton_rows([cue])
        tagged.append((rows[0], [*stand_in, Problem(field="dialogue_cleaned", message=(
            f"subtitle line [{cue.index}] ({cue.start:.2f}-{cue.end:.2f}) {cue.text!r} is not quoted in full by the "
            "model's rows; kept as a row of its own from the subtitles, not annotated"))]))
    tagged.sort(key=lambda item: item[0]["start_time"])
    rows_out, problems_out = [], []
    for index, (row, row_problems) in enumerate(tagged, start=1):
        row["row_index"] = index
        rows_out.append(row)
        problems_out += [Problem(row_index=index, field=p.field, message=p.message) for p in row_problems]
    return rows_out, segment_problems + problems_out


async def _relations(model: Model, job: SegmentJob, rows: list[RowValues], settings: AnnotateSettings,
                     draft: SegmentDraft) -> list[Problem]:
    from rescue.llm import Message

    for row in rows:
        row.update(relation_pattern=None, relation_pattern_reason=None, relation_pattern_evidence_rows=[])
    if not rows:
        return []
    messages = [Message("system", relation_system_prompt(job.scenario, job.participants)),
                Message("user", relation_user_prompt(rows))]
    ids = (f"{job.sample_id}#relations",)
    answer = await _ask(model, messages, settings.relation_max_tokens, settings, "relations", ids)
    draft.requests += 1
    if answer.status != "ok":
        draft.failed.append(f"relations: {answer.error}")
        return [Problem(field="relation_pattern", message=f"request failed: {answer.error}")]

    def check(text: str | None) -> tuple[dict[int, RelationFields], list[Problem]]:
        value, problems = parse_draft(text)
        if value is None:
            return {}, [Problem(field="relation_pattern", message=p.message) for p in problems]
        found, more = check_relations(value, rows, job.scenario)
        return found, problems + more

    found, problems = check(answer.text)
    if problems:
        asked = _Asked(messages, answer.text, settings.relation_max_tokens, "relations-reask", ids)
        found, problems = await _reask(model, asked, (found, problems), [str(p) for p in problems], check, settings,
                                       draft, "relations: ")
    for index, fields in found.items():
        row = rows[index - 1]
        invalid = fields.pop("draft_invalid", None)
        row.update(fields)
        if invalid:
            row.setdefault("draft_invalid", {}).update(invalid)
    return problems


async def annotate_segment(model: Model, job: SegmentJob, settings: AnnotateSettings) -> SegmentDraft:
    """Pre-annotate one segment: each window asked (and re-asked on broken rules), the rows merged, the relation pass
    run."""
    draft = SegmentDraft([], [])
    windows = plan_segment(job, settings)
    job.work.mkdir(parents=True, exist_ok=True)
    answers = await asyncio.gather(*(_annotate_window(model, job, w, settings, len(windows), draft) for w in windows))
    results = [(w, rows, problems) for w, (rows, problems) in zip(windows, answers)]
    if draft.failed:
        # Keep what failed visible and reviewable: the subtitles as rows, the failure as a problem.
        rows, problems = skeleton_rows(job.cues)
        draft.rows = rows
        draft.problems = problems + [p for _, _, ps in results for p in ps if p.row_index is None]
        return draft
    draft.rows, draft.problems = merge_windows(job, results)
    draft.problems += await _relations(model, job, draft.rows, settings, draft)
    return draft
