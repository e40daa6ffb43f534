"""A video's audio for transcription and alignment: extracted once as 16 kHz mono 16-bit WAV (what every
Whisper-family server takes), where its silences lie (ffmpeg's ``silencedetect``, energy-based), and exact
slices of it as WAV bytes to upload."""

from __future__ import annotations

import io
import re
import wave
from pathlib import Path

from rescue import proc
from rescue.media._ffmpeg import MediaError, ffmpeg_exe, run_ffmpeg
from rescue.media._steps import media_step, produce

SAMPLE_RATE = 16000
# Quieter than this for at least MIN_SILENCE seconds is a silence (speech in a room sits around -30 to -15 dB).
SILENCE_DB = -35.0
MIN_SILENCE = 0.3

_START = re.compile(r"silence_start:\s*(-?[\d.]+)")
_END = re.compile(r"silence_end:\s*(-?[\d.]+)")


def _check_wav(path: Path) -> None:
    try:
        with wave.open(str(path)) as reader:
            if reader.getnchannels() != 1 or reader.getsampwidth() != 2 or reader.getframerate() != SAMPLE_RATE:
                raise MediaError(f"{path}: expected 16 kHz mono 16-bit audio")
    except (wave.Error, EOFError) as exc:
        raise MediaError(f"{path}: the extracted audio is not a readable WAV ({exc})") from None


@media_step("audio", "a video's audio as 16 kHz mono 16-bit WAV")
def extract_audio(source: str | Path, out: str | Path) -> bool:
    """``source``'s first audio stream as WAV at ``out``; False (nothing done) when ``out`` exists."""
    return produce(out, lambda tmp: run_ffmpeg(
        ["-y", "-i", source, "-map", "0:a:0", "-vn", "-sn", "-dn", "-ac", "1", "-ar", str(SAMPLE_RATE),
         "-c:a", "pcm_s16le", "-f", "wav", tmp], step="audio", subject=source), _check_wav)


def wav_seconds(path: str | Path) -> float:
    """The length of a WAV file in seconds."""
    with wave.open(str(path)) as reader:
        return float(reader.getnframes()) / float(reader.getframerate())


def silences(path: str | Path, *, noise_db: float = SILENCE_DB, min_duration: float = MIN_SILENCE,
             duration: float | None = None) -> list[tuple[float, float]]:
    """The silent spans of ``path``'s audio, in order; a silence still open at the end closes at ``duration``
    (the audio's length by default)."""
    # silencedetect reports at info level, which run_ffmpeg silences: run it as the scene filter is run.
    result = proc.run([ffmpeg_exe(), "-hide_banner", "-nostdin", "-i", str(path), "-vn", "-af",
                       f"silencedetect=noise={noise_db:g}dB:d={min_duration:g}", "-f", "null", "-"])
    text = result.stderr.decode("utf-8", "replace")
    if result.returncode != 0:
        raise MediaError(f"{path}: silence detection failed: {text.strip()[-600:]}")
    spans: list[tuple[float, float]] = []
    start: float | None = None
    for line in text.splitlines():
        if (match := _START.search(line)) is not None:
            start = max(0.0, float(match.group(1)))
        elif (match := _END.search(line)) is not None and start is not None:
            spans.append((round(start, 3), round(float(match.group(1)), 3)))
            start = None
    if start is not None:
        end = duration if duration is not None else wav_seconds(path)
        if end > start:
            spans.append((round(start, 3), round(end, 3)))
    return spans


def speech_spans(silent: list[tuple[float, float]], duration: float) -> list[tuple[float, float]]:
    """What lies between the silences: where there is sound (speech, or anything loud)."""
    spans, at = [], 0.0
    for start, end in silent:
        if start > at:
            spans.append((at, start))
        at = max(at, end)
    if at < duration:
        spans.append((at, duration))
    return spans


def wav_slice(path: str | Path, start: float, end: float) -> bytes:
    """``[start, end)`` seconds of a WAV as a WAV of their own: the exact samples, no re-encoding."""
    with wave.open(str(path)) as reader:
        rate = reader.getframerate()
        first = max(0, round(start * rate))
        reader.setpos(min(first, reader.getnframes()))
        frames = reader.readframes(max(0, round(end * rate) - first))
        out = io.BytesIO()
        with wave.open(out, "wb") as writer:
            writer.setnchannels(reader.getnchannels())
            writer.setsampwidth(reader.getsampwidth())
            writer.setframerate(rate)
            writer.writeframes(frames)
    return out.getvalue()
