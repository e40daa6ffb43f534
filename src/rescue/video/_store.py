"""The on-disk media cache of video mode: every frame and clip a request sends is made once and reused
by every task, model and run that shares the cache folder.

Files are keyed by the SHA-256 of the source video's *content* (never its path), the frame index or the
cut window, and the settings that decide their bytes, so a moved or renamed media folder finds its frames
again, and the requests built from them keep their response-cache keys. Hashing a large video once is the
price; the digest is remembered per (path, size, mtime) in ``hashes.json``.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import tempfile
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config

from rescue.atomic import atomic_output, move_into_place, write_atomic
from rescue.data.readback import read_json_file
from rescue.video._options import VideoError, VideoOptions

_CHUNK = 1 << 20
# Frames further apart than this are fetched by a new seek rather than by decoding everything between them.
CHUNK_GAP_SECONDS = 8.0
CHUNK_FRAMES = 48  # frames per ffmpeg call (the select expression grows with it)
# A clip's AAC audio starts with one frame (1024 samples) of encoder priming that only the MP4 edit list
# hides: a player that ignores the edit list plays every sample 1024 samples late, and the sound of the
# clip's last moment would then be heard past the first hidden row (issue 24 item 4: 22 ms at 44.1 kHz).
# So the sound stops two AAC frames before the clip's end (one for the priming, one for the MDCT window
# that spreads a frame's coding noise over the next) and silence fills the track to the clip's end: any
# decoder hears nothing at or after the limit, and a player that honours the edit list gets audio and video
# of the same length. A fixed rate makes the guard a fixed time (2048 / 48000 s = 42.7 ms).
CLIP_AUDIO_RATE = 48000
CLIP_AUDIO_GUARD = 2 * 1024


@with_config(ConfigDict(allow_inf_nan=False))  # as read back from the index (_indexed)
@dataclass(frozen=True)
class SourceInfo:
    """What the cache needs to know of one source video."""

    digest: str
    duration: float
    fps: float
    width: int
    height: int
    has_audio: bool

    @property
    def frames(self) -> int:
        """Frames whose display starts before the end."""
        return max(1, math.ceil(self.duration * self.fps - 1e-6))


_SOURCE_INFO = TypeAdapter(SourceInfo)


def _indexed(value: object) -> SourceInfo | None:
    """An index entry's facts when they are what rescue writes (a digest, a week at most, sane sizes), else None."""
    try:
        info = _SOURCE_INFO.validate_python(value)
    except ValidationError:
        return None
    sane = (len(info.digest) in (0, 64) and 0 <= info.duration <= 7 * 24 * 3600 and 0 < info.fps <= 1000
            and 0 < info.width <= 65536 and 0 < info.height <= 65536)
    return info if sane else None


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes."""
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


def frame_chunks(indices: list[int], *, gap: int, size: int = CHUNK_FRAMES) -> list[list[int]]:
    """Sorted frame indices split where two are more than ``gap`` apart, at most ``size`` per chunk."""
    chunks: list[list[int]] = []
    for index in indices:
        if chunks and index - chunks[-1][-1] <= gap and len(chunks[-1]) < size:
            chunks[-1].append(index)
        else:
            chunks.append([index])
    return chunks


def scaled_size(width: int, height: int, longest: int) -> tuple[int, int]:
    """``width`` x ``height`` shrunk (never enlarged) so the longest side is at most ``longest``; even sides."""
    scale = min(1.0, longest / max(width, height))
    return max(2, int(width * scale) // 2 * 2), max(2, int(height * scale) // 2 * 2)


class MediaStore:
    """Frames and clips made once, kept by the video's content digest, shared by tasks, models and runs."""

    def __init__(self, folder: str | Path | None, options: VideoOptions):
        """``folder`` None: a store that only probes (a dry run), never hashes or makes anything."""
        self.folder = Path(folder) if folder is not None else Path()
        self.probe_only = folder is None
        self.options = options
        self.made = 0  # files made by ffmpeg in this process
        self.reused = 0  # files found already made
        self._lock = threading.Lock()
        self._index_path = self.folder / "hashes.json"
        self._index: dict[str, dict[str, object]] = {} if self.probe_only else self._read_index()
        self._dirty = False

    def _read_index(self) -> dict[str, dict[str, object]]:
        try:  # read as every file rescue wrote is (rescue.data.readback)
            data = read_json_file(self._index_path, VideoError)
        except (OSError, VideoError):
            return {}  # a lost or damaged index only costs re-hashing (an entry that does not fit, too: source())
        return data if isinstance(data, dict) else {}

    def _write_index(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_atomic(self._index_path, json.dumps(self._index, indent=1, sort_keys=True))

    def source(self, path: Path) -> SourceInfo:
        """The content digest and stream facts of ``path``, from the index when the file is unchanged."""
        from rescue.media import probe

        stat = path.stat()
        key = str(path.resolve())
        stamp = [stat.st_size, stat.st_mtime_ns]
        with self._lock:
            known = self._index.get(key)
        # An entry edited or of another version is hashed again, as for a file never seen.
        indexed = _indexed(known.get("info")) if isinstance(known, dict) and known.get("stamp") == stamp else None
        if indexed is not None:
            return indexed
        info = probe(path)
        if not info.has_video or not info.width or not info.height:
            raise VideoError(f"{path}: has no video stream that ffmpeg can read")
        digest = "" if self.probe_only else file_digest(path)
        result = SourceInfo(digest, info.duration, info.fps or 25.0, info.width, info.height, info.has_audio)
        with self._lock:
            self._index[key] = {"stamp": stamp, "info": asdict(result)}
            self._dirty = True
        return result

    def flush(self) -> None:
        """Write the digest index (deferred so that a run that stops on bad media writes nothing)."""
        with self._lock:
            if self._dirty and not self.probe_only:
                self._write_index()
                self._dirty = False

    # -- frames --------------------------------------------------------------------------------------------

    def frame_path(self, source: SourceInfo, index: int) -> Path:
        """Where frame ``index`` of ``source`` is kept at these options' size and quality."""
        o = self.options
        return (self.folder / "frames" / source.digest[:2] / source.digest / f"s{o.frame_size}q{o.jpeg_quality}"
                / f"{index:07d}.jpg")

    def frame_chunks(self, source: SourceInfo, indices: set[int]) -> list[list[int]]:
        """The frames of ``indices`` not yet in the store, in runs that one ffmpeg decode makes each."""
        wanted = sorted(indices)
        missing = [i for i in wanted if not self.frame_path(source, i).is_file()]
        self._count(0, len(wanted) - len(missing))
        return frame_chunks(missing, gap=int(CHUNK_GAP_SECONDS * source.fps) + 1)

    def make_chunk(self, path: Path, source: SourceInfo, chunk: list[int]) -> None:
        """Make the frames ``chunk`` (sorted, from :meth:`frame_chunks`) in one ffmpeg decode."""
        from rescue.media._ffmpeg import run_ffmpeg
        from rescue.media._frames import frame_args

        width, height = scaled_size(source.width, source.height, self.options.frame_size)
        first = chunk[0]
        # With -ss before -i ffmpeg decodes from the previous key frame and drops every frame before the seek
        # time, so the select filter's n counts from the first frame at or after it: a quarter frame early
        # lands n = 0 on frame `first` itself. One decode then yields every frame of the chunk.
        seek = max(0.0, (first - 0.25) / source.fps)
        pick = "+".join(f"eq(n\\,{index - first})" for index in chunk)
        self.folder.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".frames-", dir=self.folder))
        try:
            run_ffmpeg(frame_args(path, seek, f"select='{pick}'", len(chunk), scratch / "%07d.jpg",
                                  size=(width, height), quality=self.options.jpeg_quality),
                       step="frames", subject=path, duration=(chunk[-1] - first + 1) / source.fps)
            made = sorted(scratch.glob("*.jpg"))
            if len(made) != len(chunk):
                raise VideoError(f"{path}: asked ffmpeg for {len(chunk)} frames from frame {first}, got {len(made)} "
                                 f"(the video may end before its rows do)")
            for index in chunk:
                self.frame_path(source, index).parent.mkdir(parents=True, exist_ok=True)
            move_into_place((file, self.frame_path(source, index)) for index, file in zip(chunk, made))
            self._count(len(chunk), 0)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    # -- clips ---------------------------------------------------------------------------------------------

    def clip_path(self, source: SourceInfo, first: int, stop: int) -> Path:
        # "clips2": clips cut before the audio guard (issue 24) may sound past their limit; never reuse them.
        """Where the clip of frames ``first`` to ``stop - 1`` of ``source`` is kept."""
        return (self.folder / "clips2" / source.digest[:2] / source.digest / f"s{self.options.frame_size}"
                / f"{first:07d}-{stop:07d}.mp4")

    def make_clip(self, path: Path, source: SourceInfo, first: int, stop: int) -> Path:
        """Frames ``first`` to ``stop - 1`` (and their audio) as an H.264/AAC MP4, made once."""
        from rescue.media._cut import cut_args
        from rescue.media._ffmpeg import run_ffmpeg

        out = self.clip_path(source, first, stop)
        if out.is_file():
            self._count(0, 1)
            return out
        width, height = scaled_size(source.width, source.height, self.options.frame_size)
        start = first / source.fps
        duration = (stop - first) / source.fps
        out.parent.mkdir(parents=True, exist_ok=True)
        # A name of its own per maker (.NAME.PID.tmp): two runs sharing a --cache-dir may cut the same clip at once.
        with atomic_output(out) as tmp:
            # Re-encoding after an input seek makes the cut frame-accurate: the clip holds the frames whose
            # timestamps lie in [start, start + duration). The audio track lasts exactly as long, but its
            # sound ends CLIP_AUDIO_GUARD earlier and digital silence fills the rest (see the constant).
            samples = round(duration * CLIP_AUDIO_RATE)
            audio = (f"aresample={CLIP_AUDIO_RATE},atrim=end_sample={max(0, samples - CLIP_AUDIO_GUARD)},"
                     f"apad=whole_len={samples}")
            seek = max(0.0, start - 0.25 / source.fps)
            run_ffmpeg(cut_args(path, seek, seek + duration, tmp, keyframe_interval=None, crf=28, size=(width, height),
                                audio_filter=audio, audio_rate=CLIP_AUDIO_RATE, audio_bitrate="64k",
                                video_required=True), step="clip", subject=path, duration=duration)
        self._count(1, 0)
        return out

    def _count(self, made: int, reused: int) -> None:
        with self._lock:
            self.made += made
            self.reused += reused
