"""A clip's audio as a waveform: peaks of the mono signal, small enough to draw under a video in a browser."""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

from rescue.media._ffmpeg import run_ffmpeg
from rescue.media._probe import probe

SAMPLE_RATE = 8000  # speech's envelope needs no more, and a 30-minute clip decodes to 29 MB
PEAKS_PER_SECOND = 50
MAX_PEAKS = 20_000  # a long clip gets fewer peaks a second, so the JSON stays small


def waveform(path: str | Path) -> dict[str, Any]:
    """``{"duration", "fps", "rate", "peaks"}``: ``rate`` peaks a second, each the loudest absolute sample of
    its window scaled to 0-255 against the clip's loudest (a silent clip is all zeros, a clip without audio has
    none); ``fps`` is the video's frame rate (for frame steps). Raises MediaError for a clip ffmpeg cannot read."""
    info = probe(path)
    if not info.has_audio:
        return {"duration": info.duration, "fps": info.fps, "rate": PEAKS_PER_SECOND, "peaks": []}
    raw = run_ffmpeg(["-i", path, "-vn", "-ac", "1", "-ar", str(SAMPLE_RATE), "-f", "s16le", "-acodec", "pcm_s16le", "-"],
                     step="waveform", subject=path, capture=True, duration=info.duration)
    samples = array("h")
    samples.frombytes(raw[: len(raw) - len(raw) % 2])
    duration = len(samples) / SAMPLE_RATE
    rate = PEAKS_PER_SECOND if duration * PEAKS_PER_SECOND <= MAX_PEAKS else max(1, int(MAX_PEAKS / duration))
    window = max(1, SAMPLE_RATE // rate)
    peaks = []
    for start in range(0, len(samples), window):
        chunk = samples[start:start + window]
        peaks.append(max(max(chunk), -min(chunk)))
    loudest = max(peaks, default=0) or 1
    return {"duration": round(duration, 3), "fps": info.fps, "rate": SAMPLE_RATE / window,
            "peaks": [min(255, round(p * 255 / loudest)) for p in peaks]}
