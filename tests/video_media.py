"""Synthetic media for the video-mode tests: every frame's colour encodes its frame index, so a test can
read back, from the bytes a request carried, which moment of the video each frame came from."""

from __future__ import annotations

import base64
import io
import subprocess
import tempfile
from pathlib import Path

FPS = 4
SIZE = "64x48"


def _ffmpeg() -> str:
    from rescue.media import ffmpeg_exe

    return ffmpeg_exe()


def make_indexed_video(path: Path, seconds: float, *, fps: int = FPS, audio: bool = True,
                       sample_rate: int = 8000) -> Path:
    """An H.264 (+AAC) MP4 whose frame n is one flat colour: R, G, B = 16 * (n's base-16 digits) + 8."""
    path.parent.mkdir(parents=True, exist_ok=True)
    colour = "r='mod(N,16)*16+8':g='mod(floor(N/16),16)*16+8':b='mod(floor(N/256),16)*16+8'"
    command = [_ffmpeg(), "-v", "error", "-y", "-f", "lavfi",
               "-i", f"nullsrc=s={SIZE}:r={fps}:d={seconds},format=rgb24,geq={colour}"]
    if audio:
        # The fast AAC coder: still AAC (the same frames and encoder priming a clip is cut against), at a third of
        # the default coder's CPU, which was most of this file's encode time.
        command += ["-f", "lavfi", "-i", f"sine=f=440:sample_rate={sample_rate}:d={seconds}", "-c:a", "aac",
                    "-aac_coder", "fast", "-b:a", "16k", "-shortest"]
    command += ["-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-pix_fmt", "yuv444p", "-g", "8", str(path)]
    subprocess.run(command, check=True)
    return path


def index_of(rgb: tuple[int, int, int]) -> int:
    r, g, b = (max(0, min(15, round((value - 8) / 16))) for value in rgb)
    return r + 16 * g + 256 * b


def jpeg_index(data: bytes) -> int:
    from PIL import Image

    image = Image.open(io.BytesIO(data)).convert("RGB")
    return index_of(image.getpixel((image.width // 2, image.height // 2)))


def clip_indices(data: bytes) -> list[int]:
    """The source frame index of every frame of an MP4 clip."""
    import imageio_ffmpeg

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "clip.mp4"
        path.write_bytes(data)
        reader = imageio_ffmpeg.read_frames(str(path))
        meta = next(reader)
        width, height = meta["size"]
        indices = []
        for frame in reader:
            middle = (height // 2 * width + width // 2) * 3
            indices.append(index_of((frame[middle], frame[middle + 1], frame[middle + 2])))
        return indices


def data_url_bytes(url: str) -> tuple[str, bytes]:
    head, _, payload = url.partition(",")
    return head.removeprefix("data:").removesuffix(";base64"), base64.b64decode(payload)


AUDIO_RATE = 48000  # clip audio is decoded at this rate (the rate rescue writes clips at)
AUDIBLE = 0.01  # a sample louder than this (full scale 1) is heard; the test tones peak at 0.125 to 0.5


def clip_audio(data: bytes, *, ignore_editlist: bool) -> list[float]:
    """A clip's audio as mono samples at AUDIO_RATE, from its first decoded sample. With ``ignore_editlist``
    the MP4 edit list is ignored, as some players do: AAC's encoder priming is then played too."""
    import array

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "clip.mp4"
        path.write_bytes(data)
        command = [_ffmpeg(), "-v", "error", *(["-ignore_editlist", "1"] if ignore_editlist else []),
                   "-i", str(path), "-vn", "-ac", "1", "-ar", str(AUDIO_RATE), "-f", "f32le", "-"]
        samples = array.array("f", subprocess.run(command, check=True, capture_output=True).stdout)
        return samples.tolist()


def audible_at_or_after(samples: list[float], seconds: float) -> int:
    """How many samples at or after ``seconds`` (clip time) are audible."""
    return sum(abs(value) > AUDIBLE for value in samples[max(0, round(seconds * AUDIO_RATE)):])
