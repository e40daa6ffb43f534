"""A bare session video whose speech is espeak-ng words placed one by one at known times, so a test knows
where every word is (its audible span, leading and trailing silence of espeak's own WAV excluded)."""

from __future__ import annotations

import subprocess
import wave
from array import array
from dataclasses import dataclass
from pathlib import Path

from media_helpers import _mux

from rescue.media import extract_audio
from rescue.testing.transcripts import PlacedWord, wav_bytes

RATE = 16000
_AUDIBLE = 300


def _word_pcm(word: str, folder: Path, cache: dict[str, array]) -> array:
    if word not in cache:
        wav = folder / f"w{len(cache):04d}.wav"
        subprocess.run(["espeak-ng", "-s", "190", "-w", str(wav), word], check=True, capture_output=True)
        with wave.open(str(wav)) as reader:
            raw = reader.readframes(reader.getnframes())
            rate = reader.getframerate()
        samples = array("h")
        samples.frombytes(raw)
        if rate != RATE:  # espeak-ng speaks at 22050 Hz: resampled the plain way (every k-th sample, interpolated)
            step = rate / RATE
            samples = array("h", (samples[min(len(samples) - 1, int(i * step))] for i in range(int(len(samples) / step))))
        loud = [i for i, v in enumerate(samples) if abs(v) > _AUDIBLE]
        cache[word] = samples[loud[0]: loud[-1] + 1] if loud else samples
    return cache[word]


@dataclass
class SpokenSession:
    video: Path
    words: list[PlacedWord]
    lines: list[tuple[float, float, str, str]]  # start, end, speaker, text


def spoken_session(folder: Path, turns: list[tuple[float, str, str]], duration: float) -> SpokenSession:
    """``turns``: (start, speaker label, text); each word placed after the previous with a 60 ms gap."""
    folder.mkdir(parents=True, exist_ok=True)
    track = array("h", bytes(2 * int(duration * RATE)))
    cache: dict[str, array] = {}
    words: list[PlacedWord] = []
    lines = []
    for start, speaker, text in turns:
        t = start
        for word in text.split():
            pcm = _word_pcm(word.strip(".,?!").lower(), folder, cache)
            at = round(t * RATE)
            track[at: at + len(pcm)] = pcm
            words.append(PlacedWord(round(at / RATE, 4), round((at + len(pcm)) / RATE, 4), word, speaker))
            t = (at + len(pcm)) / RATE + 0.06
        lines.append((start, words[-1].end, speaker, text))
    wav = folder / "speech.wav"
    wav.write_bytes(wav_bytes(track.tobytes(), RATE))
    video = _mux(folder / "session.mp4", duration, None, "160x120", 10, ["-i", str(wav)])
    return SpokenSession(video, words, lines)


def extracted_audio(video: Path, folder: Path) -> bytes:
    """The video's audio exactly as rescue extracts it (what the chunks are slices of)."""
    path = folder / "extracted.wav"
    extract_audio(video, path)
    return path.read_bytes()
