"""Video mode for a run: find every sample's media, plan and make each instance's frames or clip before
any request, then put them into the instance's prompt.

A request in video mode holds one instance (windows differ per instance, and a batch sharing media would
show an earlier item the rows hidden from it). Its single user message becomes: a note on what the media
is, the media (each frame labelled with its time and row), then the task's own text prompt, rendered with
the dialogue fields (``video``) or with the annotated cues as well (``video+cues``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rescue.errors import RescueError
from rescue.data.models import Sample
from rescue.llm import ImagePart, Message, MessageLike, Part, TextPart, VideoPart
from rescue.tasks.base import Instance, RenderOptions, Task
from rescue.video._locate import find_media
from rescue.video._options import VideoError, VideoOptions
from rescue.video._plan import MediaPlan, clip_plan, frame_plan
from rescue.video._store import MediaStore, SourceInfo, scaled_size
from rescue.video._tokens import clip_tokens, frames_tokens
from rescue.video._window import media_window

# A row may end a little after the video does (subtitle timing); more than this means the wrong video.
DURATION_SLACK = 1.0


@dataclass
class PreparedMedia:
    """Counts for the run log and the dry run."""

    requests: int = 0
    frames: int = 0  # frames sent, over all requests
    clip_seconds: float = 0.0
    unique_files: int = 0
    made: int = 0
    reused: int = 0
    per_task: dict[str, dict[str, float]] = field(default_factory=dict)


class VideoContext:
    """The media of every instance of a run, made once, keyed by content (see :mod:`rescue.video._store`)."""

    def __init__(self, options: VideoOptions, sources: Mapping[str, Path], store: MediaStore,
                 infos: Mapping[str, SourceInfo]):
        self.options = options
        self.sources = dict(sources)
        self.store = store
        self.infos = dict(infos)
        self._plans: dict[tuple[str, str, int | None], MediaPlan] = {}
        self._lock = threading.Lock()

    # -- set-up --------------------------------------------------------------------------------------------

    @classmethod
    def locate(cls, options: VideoOptions, samples: Sequence[Sample], cache_folder: str | Path | None) -> VideoContext:
        """Find and probe every sample's media; raises :class:`VideoError` before anything is written when a
        sample has none, a file is unreadable or too short for its rows. ``cache_folder`` None: probe only
        (a dry run: nothing can be made)."""
        sources = find_media(samples, options.media_root, options.media_match)
        store = MediaStore(cache_folder, options)
        infos: dict[str, SourceInfo] = {}
        problems = []
        with ThreadPoolExecutor(options.workers) as pool:
            probed = dict(zip(sources, pool.map(lambda p: _try(store.source, p), sources.values())))
        for sample in samples:
            result = probed[sample.sample_id]
            if isinstance(result, Exception):
                problems.append(f"{sample.sample_id}: {result}")
                continue
            last = max((row.start_time for row in sample.rows), default=0.0)
            if last > result.duration + DURATION_SLACK:
                problems.append(f"{sample.sample_id}: a row starts at {last:.2f} s but {sources[sample.sample_id]} "
                                f"lasts {result.duration:.2f} s (is it the right video?)")
            infos[sample.sample_id] = result
        if problems:
            raise VideoError("unusable media:\n  " + "\n  ".join(problems))
        return cls(options, sources, store, infos)

    def plan(self, task: Task, instance: Instance, context_size: int | None) -> MediaPlan:
        """The frames or clip one instance sends (made once per task, instance and context size)."""
        key = (task.name, instance.instance_id, context_size)
        with self._lock:
            known = self._plans.get(key)
        if known is not None:
            return known
        window = media_window(task, instance, context_size)
        info = self.infos[instance.sample_id]
        if self.options.video_input == "clip":
            plan = clip_plan(window, info)
        else:
            plan = frame_plan(window, info, self.options.frame_rate, self.options.max_frames)
        with self._lock:
            self._plans[key] = plan
        return plan

    def prepare(self, work: Mapping[str, tuple[Task, Sequence[Instance]]], context_size: int | None, *,
                show: bool = False) -> PreparedMedia:
        """Plan every instance and make every frame or clip not yet in the store (``options.workers`` at once)."""
        summary = PreparedMedia()
        frames: dict[str, set[int]] = {}
        clips: dict[Path, Callable[[], object]] = {}
        for name, (task, instances) in work.items():
            counts = summary.per_task.setdefault(name, {"requests": 0, "frames": 0, "clip_seconds": 0.0})
            for instance in instances:
                plan = self.plan(task, instance, context_size)
                sample_id = instance.sample_id
                source, info = self.sources[sample_id], self.infos[sample_id]
                counts["requests"] += 1
                counts["frames"] += len(plan.frames)
                counts["clip_seconds"] += (plan.clip_stop - plan.clip_first) / info.fps
                frames.setdefault(sample_id, set()).update(pick.index for pick in plan.frames)
                if plan.clip_stop > plan.clip_first:
                    clips.setdefault(self.store.clip_path(info, plan.clip_first, plan.clip_stop),
                                     _bind(self.store.make_clip, source, info, plan.clip_first, plan.clip_stop))
        for counts in summary.per_task.values():
            summary.requests += int(counts["requests"])
            summary.frames += int(counts["frames"])
            summary.clip_seconds += counts["clip_seconds"]
        # Samples that share a video (two ids, one file) share its frames.
        by_digest: dict[str, tuple[Path, SourceInfo, set[int]]] = {}
        for sample_id, indices in frames.items():
            info = self.infos[sample_id]
            by_digest.setdefault(info.digest, (self.sources[sample_id], info, set()))[2].update(indices)
        summary.unique_files = sum(len(v[2]) for v in by_digest.values()) + len(clips)
        self.store.flush()
        before_made, before_reused = self.store.made, self.store.reused
        jobs: list[Callable[[], object]] = list(clips.values())
        for source, info, indices in by_digest.values():
            chunks = self.store.frame_chunks(info, indices)
            jobs += [_bind(self.store.make_chunk, source, info, chunk) for chunk in chunks]
        with _progress(show, len(jobs), summary.unique_files) as advance, ThreadPoolExecutor(self.options.workers) as pool:
            for _ in pool.map(lambda job: job(), jobs):
                advance()
        summary.made = self.store.made - before_made
        summary.reused = self.store.reused - before_reused
        return summary

    def wrap_tasks(self, tasks: Mapping[str, Task], instances: Mapping[str, Sequence[Instance]],
                   context_size: int | None, log: Any = None, *, show: bool = False) -> dict[str, Task]:
        """Make every instance's media, then the tasks whose prompts carry it (what the runner asks with).
        ``show``: a progress bar on stderr while ffmpeg works (a first run on real videos takes minutes)."""
        summary = self.prepare({name: (task, instances[name]) for name, task in tasks.items()}, context_size,
                               show=show)
        if log is not None:
            log.event("media", video_input=self.options.video_input, samples=len(self.sources),
                      requests=summary.requests, frames=summary.frames, clip_seconds=round(summary.clip_seconds, 3),
                      files=summary.unique_files, made=summary.made, reused=summary.reused,
                      store=str(self.store.folder), tasks=summary.per_task)
        return {name: VideoTask(task, self) for name, task in tasks.items()}  # type: ignore[misc]

    def media_count(self, task: Task, instance: Instance, context_size: int | None) -> tuple[int, float, int]:
        """Images, clip seconds and estimated media tokens of one instance's request (for ``--dry-run``)."""
        plan = self.plan(task, instance, context_size)
        info = self.infos[instance.sample_id]
        size = scaled_size(info.width, info.height, self.options.frame_size)
        seconds = (plan.clip_stop - plan.clip_first) / info.fps
        images = frames_tokens(len(plan.frames), *size, detail=self.options.image_detail)
        return len(plan.frames), seconds, images + clip_tokens(seconds, *size)

    # -- requests ------------------------------------------------------------------------------------------

    def media_parts(self, task: Task, instance: Instance, context_size: int | None) -> list[Part]:
        """The content parts of one instance's media, with the note that introduces them."""
        plan = self.plan(task, instance, context_size)
        info = self.infos[instance.sample_id]
        if plan.empty:
            return [TextPart("No video is attached: no shown row has footage before the first hidden row.")]
        if plan.frames:
            step = 1 / self.options.frame_rate
            parts: list[Part] = [TextPart(
                f"Video frames of the shown rows, in time order (about one every {step:g} s inside each row's "
                f"timestamp span, at most {self.options.max_frames}); each is labelled with its time in seconds "
                "and its row_index. No frame comes from after the shown rows."
            )]
            for pick in plan.frames:
                parts.append(TextPart(f"[frame at {pick.time:.2f} s, row {pick.row_index}]"))
                parts.append(ImagePart.from_file(self.store.frame_path(info, pick.index), mime="image/jpeg",
                                                 detail=self.options.image_detail))
            return parts
        start, end = plan.clip_first / info.fps, plan.clip_stop / info.fps
        sound = "with its sound" if info.has_audio else "without sound"
        return [
            TextPart(f"A video clip of the session {sound}, from {start:.2f} s to {end:.2f} s of the transcript's "
                     "timeline: the shown rows and the pauses between them, ending before anything hidden."),
            VideoPart.from_file(self.store.clip_path(info, plan.clip_first, plan.clip_stop), mime="video/mp4"),
        ]

    def render(self, task: Task, batch: list[Instance], options: RenderOptions) -> list[MessageLike]:
        """The task's own messages with the instance's media put before the text of the last one."""
        if len(batch) != 1:
            raise VideoError(f"video mode sends one instance per request, got a batch of {len(batch)}")
        messages: list[MessageLike] = list(task.render(batch, options))
        last = messages[-1]
        role, text = (last.role, last.content) if isinstance(last, Message) else (last["role"], last["content"])
        if not isinstance(text, str):
            raise VideoError(f"task {task.name}: expected a text prompt to attach the media to")
        media = self.media_parts(task, batch[0], options.context_size)
        return [*messages[:-1], Message(role, [*media, TextPart(text)])]


@contextmanager
def _progress(show: bool, jobs: int, files: int) -> Iterator[Callable[[], None]]:
    if not show or not jobs:
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from rescue.display import PLAIN_PROGRESS_INTERVAL, PlainProgress, live_console

    console = Console(stderr=True)
    live = live_console(console)
    columns = (TextColumn("media"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    # No terminal (a log file, CI): the bar's count as plain lines at a steady interval, as the run's bars.
    plain = None if live else PlainProgress(bar := Progress(*columns, console=console, disable=True), console,
                                            PLAIN_PROGRESS_INTERVAL)
    if plain is not None:
        task = bar.add_task(f"media · {files} files", total=jobs)
        plain.start()
        try:
            yield lambda: bar.advance(task)
        finally:
            plain.stop()
        return
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(f"{files} files", total=jobs)
        yield lambda: bar.advance(task)


def _bind(function: Callable[..., object], *args: Any) -> Callable[[], object]:
    return lambda: function(*args)


def _try(function: Callable[[Path], SourceInfo], path: Path) -> SourceInfo | Exception:
    try:
        return function(path)
    except (RescueError, OSError) as exc:  # every unreadable file is listed in one error
        return exc


class VideoTask:
    """A task whose prompts carry the instance's media: what the runner sees in video mode.

    Everything but ``render`` (and the batch size: one instance per request) is the task's own.
    """

    default_batch_size = 1

    def __init__(self, task: Task, context: VideoContext):
        self.task = task
        self.context = context

    def __getattr__(self, name: str) -> Any:
        return getattr(self.task, name)

    def render(self, batch: list[Instance], options: RenderOptions) -> list[MessageLike]:
        """The task's prompt with the media of each instance."""
        return self.context.render(self.task, batch, options)
