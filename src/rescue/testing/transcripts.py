"""A transcription script that answers with the true timings of known speech: the tests place each word
(espeak-ng) at a known time in the audio, and this script answers every uploaded chunk with the words that lie
inside it, re-timed to the chunk, as a transcription server would (``verbose_json``, optionally diarized).

The chunk is found in the full recording by its samples (chunks are exact slices of the 16-bit PCM the
client extracted), so the answer does not depend on how, or in which order, the client cut and sent them.
"""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass, replace

# JsonObject is open here: a client's request body and the scripted answer, as the API has them
from rescue.data.shapes import JsonObject
from rescue.testing.openai_server import Reply, ScriptResult, verbose_json

# Samples quieter than this are taken for silence when looking for the first sound of a chunk.
_SOUND = 200
_PROBE_SAMPLES = 400


@dataclass(frozen=True)
class PlacedWord:
    start: float
    end: float
    word: str
    speaker: str | None = None


def wav_bytes(pcm: bytes, rate: int) -> bytes:
    """16-bit mono PCM as WAV bytes (what rescue extracts and sends)."""
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(pcm)
    return out.getvalue()


def read_pcm(data: bytes) -> tuple[bytes, int]:
    """The 16-bit mono frames of a WAV and its sample rate."""
    with wave.open(io.BytesIO(data)) as reader:
        if reader.getsampwidth() != 2 or reader.getnchannels() != 1:
            raise ValueError("expected 16-bit mono WAV")
        return reader.readframes(reader.getnframes()), reader.getframerate()


def locate(full: bytes, chunk: bytes) -> int | None:
    """The sample offset of ``chunk`` inside ``full`` (both 16-bit PCM), found by its first sound."""
    samples = memoryview(chunk).cast("h")
    first = next((i for i, v in enumerate(samples) if abs(v) > _SOUND), None)
    if first is None:
        return None
    probe = chunk[2 * first: 2 * (first + _PROBE_SAMPLES)]
    at = full.find(probe)
    while at >= 0 and at % 2:
        at = full.find(probe, at + 1)
    return None if at < 0 else at // 2 - first


class TimedWords:
    """The script: ``TimedWords(wav_bytes, words, diarize=True)``; ``requests`` counts the chunks answered."""

    def __init__(self, wav: bytes, words: list[PlacedWord], *, diarize: bool = True, segment_gap: float = 0.6,
                 per_request: bool = False):
        self.pcm, self.rate = read_pcm(wav)
        self.words = sorted(words, key=lambda w: w.start)
        self.diarize = diarize
        self.segment_gap = segment_gap
        # As pyannote-based servers do: speakers numbered per request (SPEAKER_00 is whoever speaks first in
        # this chunk), so one label names different people in different chunks.
        self.per_request = per_request
        self.offsets: list[float] = []

    def __call__(self, body: JsonObject) -> ScriptResult:
        chunk, rate = read_pcm(body["file"]["data"])
        if rate != self.rate:
            return Reply.error(400, f"expected {self.rate} Hz audio, got {rate} Hz", type="invalid_request_error")
        duration = len(chunk) / 2 / rate
        offset_samples = locate(self.pcm, chunk)
        if offset_samples is None:
            return verbose_json([], [], duration=duration)
        offset = offset_samples / rate
        self.offsets.append(offset)
        inside = [w for w in self.words if w.start >= offset - 1e-6 and w.end <= offset + duration + 1e-6]
        if self.per_request:
            order = list(dict.fromkeys(w.speaker for w in inside if w.speaker is not None))
            inside = [replace(w, speaker=None if w.speaker is None else f"SPEAKER_{order.index(w.speaker):02d}")
                      for w in inside]
        words = [{"word": w.word, "start": round(w.start - offset, 3), "end": round(w.end - offset, 3)}
                 for w in inside]
        segments: list[JsonObject] = []
        for word, placed in zip(words, inside):
            last = segments[-1] if segments else None
            same = last is not None and word["start"] - last["end"] <= self.segment_gap and \
                last.get("speaker") == (placed.speaker if self.diarize else None)
            if same:
                assert last is not None
                last["end"] = word["end"]
                last["text"] = f"{last['text']} {word['word']}"
            else:
                segment: JsonObject = {"start": word["start"], "end": word["end"], "text": word["word"]}
                if self.diarize and placed.speaker is not None:
                    segment["speaker"] = placed.speaker
                segments.append(segment)
        return verbose_json(segments, words, duration=round(duration, 3))
