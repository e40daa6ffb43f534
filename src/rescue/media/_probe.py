"""What a media file holds: duration and streams, parsed from ``ffmpeg -i`` (no ffprobe needed)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rescue.media._ffmpeg import MediaError, ffmpeg_exe, ffmpeg_info, run_bounded

_DURATION = re.compile(r"Duration:\s*(\d+):(\d\d):(\d\d(?:\.\d+)?)")
_STREAM = re.compile(r"Stream #\d+:\d+[^:]*:\s*(Video|Audio|Subtitle|Data):\s*([^\s,]+)(.*)")
_SIZE = re.compile(r",\s*(\d{2,5})x(\d{2,5})[\s,\[]")
_FPS = re.compile(r"([\d.]+)\s*fps")
_RATE = re.compile(r"(\d+)\s*Hz")


@dataclass(frozen=True)
class MediaInfo:
    """What ffmpeg says of a media file: duration, codecs, size, frame rate, sample rate."""

    path: str
    duration: float
    video_codec: str | None = None
    audio_codec: str | None = None
    width: int | None = None
    height: int | None = None
    fps: float | None = None
    sample_rate: int | None = None

    @property
    def has_video(self) -> bool:
        """Whether the file has a video stream."""
        return self.video_codec is not None

    @property
    def has_audio(self) -> bool:
        """Whether the file has an audio stream."""
        return self.audio_codec is not None


def parse_info(text: str, path: str) -> MediaInfo:
    """Parse ``ffmpeg -i`` output; raise :class:`MediaError` for an input ffmpeg cannot read."""
    if "Input #0" not in text:
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        raise MediaError(f"{path}: not a readable video ({lines[-1] if lines else 'ffmpeg printed nothing'})")
    match = _DURATION.search(text)
    if not match:
        raise MediaError(f"{path}: not a readable video (ffmpeg reports no duration)")
    hours, minutes, seconds = match.groups()
    duration = int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    fields: dict[str, object] = {}
    for kind, codec, rest in _STREAM.findall(text):
        if kind == "Video" and "video_codec" not in fields and "attached pic" not in rest:
            fields["video_codec"] = codec
            if size := _SIZE.search(rest):
                fields["width"], fields["height"] = int(size.group(1)), int(size.group(2))
            if fps := _FPS.search(rest):
                fields["fps"] = float(fps.group(1))
        elif kind == "Audio" and "audio_codec" not in fields:
            fields["audio_codec"] = codec
            if rate := _RATE.search(rest):
                fields["sample_rate"] = int(rate.group(1))
    return MediaInfo(path=path, duration=duration, **fields)  # type: ignore[arg-type]


_PROBED: dict[tuple[str, int, int], MediaInfo] = {}


def probe(path: str | Path) -> MediaInfo:
    """Duration and streams of ``path``; :class:`MediaError` when it is missing or unreadable. A file probed
    before and unchanged since (same size and modification time) is not probed again: every cut of a
    session asks about its source."""
    try:
        stat = Path(path).stat()
    except OSError:
        raise MediaError(f"{path}: no such file") from None
    if not Path(path).is_file():
        raise MediaError(f"{path}: no such file")
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    info = _PROBED.get(key)
    if info is None:
        info = parse_info(ffmpeg_info(path), str(path))
        if len(_PROBED) > 1024:
            _PROBED.clear()
        _PROBED[key] = info
    return info


def verify_output(path: str | Path, *, duration: float, video: bool, audio: bool, tolerance: float = 0.25) -> MediaInfo:
    """Check a file a step just made holds what was asked: the streams (a video one iff ``video``, an audio
    one iff ``audio``), ``duration`` seconds within ``tolerance``, and every packet readable to the end.

    One ffmpeg reads the header and every packet, copied, never decoded (a decode would cost a good share of the
    cut itself; benchmarks/README.md); that catches a file cut short or written over by another writer, which the
    header alone does not show. Its messages carry their level, so an error is told from the header.
    """
    result = run_bounded([ffmpeg_exe(), "-hide_banner", "-nostdin", "-nostats", "-loglevel", "level+info", "-xerror",
                          "-i", str(path), "-map", "0", "-c", "copy", "-f", "null", "-"], step="verify", subject=path,
                         duration=duration)
    text = result.stderr.decode("utf-8", "replace")
    errors = [line for line in text.splitlines() if "[error]" in line or "[fatal]" in line]
    if result.returncode != 0 or errors:
        tail = "\n".join(errors)[-600:]
        raise MediaError(f"{path}: unreadable to its end (ffmpeg exit {result.returncode}): {tail or 'no message'}")
    info = parse_info(text.replace("[info] ", ""), str(path))
    wanted = [kind for kind, asked in (("video", video), ("audio", audio)) if asked]
    held = [kind for kind, has in (("video", info.has_video), ("audio", info.has_audio)) if has]
    if held != wanted:
        raise MediaError(f"{path}: holds {' + '.join(held) or 'no'} stream(s), {' + '.join(wanted)} asked")
    if abs(info.duration - duration) > tolerance:
        raise MediaError(f"{path}: lasts {info.duration:.3f} s, {duration:.3f} s asked")
    return info
