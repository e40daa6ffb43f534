"""Frames sampled inside a span of a video, as JPEG bytes: at most ``rate`` per second and ``cap`` per
span, spread evenly, resized to ``width`` pixels wide. One ffmpeg call per span."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rescue.media._ffmpeg import run_ffmpeg
from rescue.media._steps import media_step

_JPEG_END = b"\xff\xd9"


@dataclass(frozen=True)
class Frame:
    """One frame grabbed from a video: its time in the source and the JPEG bytes."""

    time: float  # seconds in the source
    jpeg: bytes
    mime: str = "image/jpeg"


def frame_times(start: float, end: float, rate: float, cap: int) -> list[float]:
    """The sampling times: the middles of ``min(cap, span*rate)`` equal slices of the span."""
    span = max(0.0, end - start)
    if span == 0 or rate <= 0 or cap <= 0:
        return []
    count = max(1, min(cap, int(span * rate)))
    step = span / count
    return [round(start + step * (i + 0.5), 3) for i in range(count)]


def sampling(times: list[float]) -> tuple[float, str]:
    """Where to seek and the filter that picks the frames nearest each of the evenly spaced ``times``."""
    step = times[1] - times[0] if len(times) > 1 else 1.0
    # Seeking to the first time and sampling at 1/step gives the frames nearest each time in one decode.
    return times[0], f"fps=1/{step:.6f}"


def frame_args(source: str | Path, seek: float, pick: str, count: int, out: str | Path = "-", *,
               width: int | None = None, size: tuple[int, int] | None = None, quality: int = 4) -> list[str]:
    """The ffmpeg arguments that write ``count`` JPEG frames of ``source``, chosen by the filter ``pick`` from
    ``seek`` seconds on, scaled to ``width`` (height follows) or exactly to ``size``: to stdout as one stream
    (``out`` "-", see :func:`split_jpegs`) or to files numbered from 0 (``out`` a pattern such as ``%07d.jpg``).
    Every frame rescue grabs (a build's frames for the model, video mode's frames) and the benchmark's."""
    scale = f"scale={size[0]}:{size[1]}" if size else f"scale={width}:-2"
    sink = ["-f", "image2pipe", "-c:v", "mjpeg", "-"] if str(out) == "-" else \
        ["-f", "image2", "-start_number", "0", str(out)]
    return [
        "-y", "-ss", f"{seek:.6f}", "-i", str(source), "-an", "-sn", "-dn",
        "-vf", f"{pick},{scale}", "-fps_mode", "passthrough", "-frames:v", str(count), "-q:v", str(quality), *sink,
    ]


def split_jpegs(stream: bytes) -> list[bytes]:
    """Split concatenated JPEGs (ffmpeg's mjpeg pipe: no embedded thumbnails, so each ends at FFD9)."""
    images, begin = [], 0
    while begin < len(stream):
        end = stream.find(_JPEG_END, begin)
        if end < 0:
            break
        images.append(stream[begin : end + 2])
        begin = end + 2
    return images


@media_step("frames", "JPEG frames sampled inside a span")
def grab_frames(source: str | Path, start: float, end: float, *, rate: float = 1.0, cap: int = 8,
                width: int = 512) -> list[Frame]:
    """Frames of ``source`` between ``start`` and ``end`` (``rate`` per second, at most ``cap``), ``width`` px wide,
    in one ffmpeg call."""
    times = frame_times(start, end, rate, cap)
    if not times:
        return []
    seek, pick = sampling(times)
    data = run_ffmpeg(frame_args(source, seek, pick, len(times), width=width), step="frames", subject=source, capture=True,
                      duration=end - start)
    images = split_jpegs(data)
    return [Frame(time, jpeg) for time, jpeg in zip(times, images)]
