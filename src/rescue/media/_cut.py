"""Cutting a window of a video into a clip browsers play and seek: H.264/AAC MP4, accurate cuts,
a key frame every ``keyframe_interval`` seconds and the index up front (``+faststart``). Many clips:
:class:`ClipCutter` (one encode at a time, each clip's check overlapping the next clip's encode)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

from rescue.media._ffmpeg import MediaError, run_ffmpeg
from rescue.media._probe import MediaInfo, probe, verify_output
from rescue.media._steps import media_step, produce

DEFAULT_KEYFRAME_INTERVAL = 1.0
# Review clips: the source's height up to 720 lines unless asked otherwise, at CRF 28 with the video's bitrate capped
# at 2 Mbit/s at 1080p, in proportion to the pixels below it (so an hour of video is at most 0.9 GB).
REVIEW_MAX_HEIGHT = 720
REVIEW_CRF = 28
_MAXRATE_1080P_KBIT = 2000


def review_height(source_height: int | None, asked: int | None = None) -> int | None:
    """The height review clips are cut at: ``asked`` (``--review-height``), else the source's capped at 720."""
    if asked is not None:
        return asked
    return min(source_height, REVIEW_MAX_HEIGHT) if source_height else REVIEW_MAX_HEIGHT


def cut_args(source: str | Path, start: float, end: float, out: str | Path, *,
             keyframe_interval: float | None = DEFAULT_KEYFRAME_INTERVAL, preset: str = "veryfast", crf: int = 23,
             width: int | None = None, height: int | None = None, size: tuple[int, int] | None = None,
             audio_filter: str | None = None, audio_rate: int | None = None, audio_bitrate: str = "128k",
             video_required: bool = False) -> list[str]:
    """The ffmpeg arguments of one cut of ``[start, end)`` seconds into an H.264/AAC MP4 (after the binary and
    global flags): every clip rescue makes (review clips, the model's copies, video mode's clips) and the
    benchmark's bare commands. ``width`` scales the picture down to at most that width (height follows), e.g.
    for a copy sent to a model; ``height`` to at most that height (width follows), with the bit rate capped for
    it, e.g. for review; ``size`` to exactly ``(width, height)``. ``keyframe_interval`` None: the encoder's own
    key frames. ``audio_filter``/``audio_rate``/``audio_bitrate`` shape the audio; ``video_required``: a source
    without video is an error rather than an audio-only clip."""
    # Even dimensions are required by yuv420p H.264; a smaller source is never scaled up.
    if size:
        scale = f"scale={size[0]}:{size[1]}"
    elif width:
        scale = f"scale='trunc(min({width},iw)/2)*2':-2"
    elif height:
        scale = f"scale=-2:'trunc(min({height},ih)/2)*2'"
    else:
        scale = "scale=trunc(iw/2)*2:trunc(ih/2)*2"
    rate: list[str] = []
    if height and not size:
        cap = max(300, round(_MAXRATE_1080P_KBIT * (height / 1080) ** 2))
        rate = ["-maxrate", f"{cap}k", "-bufsize", f"{2 * cap}k"]
    keys = [] if keyframe_interval is None else ["-force_key_frames", f"expr:gte(t,n_forced*{keyframe_interval:g})"]
    audio = [*(["-af", audio_filter] if audio_filter else []), "-c:a", "aac", "-b:a", audio_bitrate,
             *(["-ar", str(audio_rate)] if audio_rate else [])]
    # -ss before -i seeks the input; with re-encoding, ffmpeg decodes from the previous key frame and
    # drops frames before `start`, so the cut is frame-accurate and the clip's timeline starts at 0.
    return [
        "-y", "-ss", f"{start:.6f}", "-i", str(source), "-t", f"{end - start:.6f}",
        "-map", "0:v:0" if video_required else "0:v:0?", "-map", "0:a:0?", "-sn", "-dn", "-map_metadata", "-1",
        "-c:v", "libx264", "-preset", preset, "-crf", str(crf), *rate, "-pix_fmt", "yuv420p",
        "-vf", scale, *keys, *audio,
        "-movflags", "+faststart", "-f", "mp4", str(out),
    ]


@media_step("cut", "a window of the source as a seekable H.264/AAC MP4 clip")
def cut_clip(source: str | Path, start: float, end: float, out: str | Path, *,
             keyframe_interval: float = DEFAULT_KEYFRAME_INTERVAL, width: int | None = None,
             height: int | None = None, crf: int = 23,
             encoding: contextlib.AbstractContextManager[object] | None = None) -> bool:
    """Cut ``[start, end)`` seconds of ``source`` to ``out``; False (nothing done) when ``out`` exists.

    The clip appears only once it holds the source's streams for the whole window (see :func:`verify_output`).
    ``encoding`` is entered around the encode alone, not the check (:class:`ClipCutter` passes its lock).
    """
    if end <= start:
        raise MediaError(f"{source}: cannot cut an empty window {start:.3f}-{end:.3f}s")
    source_info: list[MediaInfo] = []  # probed only when a cut is needed: a rerun skips it

    def make(tmp: Path) -> None:
        info = probe(source)
        if start >= info.duration:
            raise MediaError(f"{source}: cannot cut {start:.3f}-{end:.3f}s of a {info.duration:.3f} s video")
        source_info.append(info)
        with encoding if encoding is not None else contextlib.nullcontext():
            run_ffmpeg(cut_args(source, start, end, tmp, keyframe_interval=keyframe_interval, width=width,
                                height=height, crf=crf), step="cut", subject=source,
                       duration=min(end, info.duration) - start)

    def verify(tmp: Path) -> None:
        info = source_info[0]
        verify_output(tmp, duration=min(end, info.duration) - start, video=info.has_video,
                      audio=info.has_audio, tolerance=_tolerance(info))

    return produce(out, make, verify)


class ClipCutter:
    """Cuts clips in the order they are submitted, on two threads of its own: one encode at a time (ffmpeg's
    encoder already uses every core), while the clip just encoded is checked (:func:`verify_output` reads it
    to its end) and moved into place. The check and the caller's own work (e.g. the alignment check) thus
    overlap the next encode instead of waiting between encodes. Every output path must differ.

    Use it as a context manager: leaving the block waits for the cuts; leaving it by an exception cancels
    the cuts not started, and the one under way is left to finish (SIGTERM and Ctrl-C kill its ffmpeg).
    """

    def __init__(self) -> None:
        self._encoder = threading.Lock()
        self._stopped = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="rescue-cut")
        self._futures: list[Future[bool]] = []

    def submit(self, source: str | Path, start: float, end: float, out: str | Path, **options: Any) -> Future[bool]:
        """Queue a :func:`cut_clip`; the future's result is its return value (False: ``out`` existed)."""
        future = self._pool.submit(cut_clip, source, start, end, out, encoding=self._encoding(), **options)
        self._futures.append(future)
        return future

    @contextlib.contextmanager
    def _encoding(self) -> Iterator[None]:
        with self._encoder:
            if self._stopped.is_set():
                raise MediaError("cut cancelled: an earlier step failed")
            yield

    def __enter__(self) -> ClipCutter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 _trace: TracebackType | None) -> None:
        if kind is not None:
            self._stopped.set()
            for future in self._futures:
                future.cancel()
        self._pool.shutdown(wait=True)


def _tolerance(info: MediaInfo) -> float:
    # -t stops at the first frame past the window: up to a frame (two at a variable rate) of slack, and the
    # audio encoder's own padding.
    return 0.15 + 2.0 / (info.fps or 10.0)


def clip_bytes(source: str | Path, start: float, end: float, scratch: str | Path) -> bytes:
    """A window of ``source`` as MP4 bytes (cut once into ``scratch`` and reused), e.g. for a ``video_url``."""
    cut_clip(source, start, end, scratch)
    return Path(scratch).read_bytes()
