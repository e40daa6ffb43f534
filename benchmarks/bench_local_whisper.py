"""``--transcribe local/faster-whisper`` on CPU (issue #37 item 6): seconds per audio-minute, rescue's
``LocalWhisper`` beside faster-whisper called bare on the same audio, for the test model and for random weights
of whisper-tiny's real sizes (rescue.testing.tiny_whisper; no hub, no download).

The weights hear nothing, so each 30 s window decodes a short fixed line: the figures are the encoder, the window
loop and the word alignment, a lower bound for real speech (a real model decodes some 50-100 tokens a window).
Printed per model: CPU seconds and wall seconds per audio-minute for each side, and their ratio (rescue / bare,
the cost of the wrapper: WAV bytes in, verbose_json checked out).
Run: ``python benchmarks/bench_local_whisper.py [--seconds 120] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import math
import os
import statistics
import struct
import tempfile
import time
from pathlib import Path
from typing import Any


def tone_wav(seconds: float, rate: int = 16000) -> bytes:
    """A warbling tone with pauses (speech-like enough for the mel front end; the model hears nothing)."""
    samples = [int(6000 * math.sin(2 * math.pi * 190 * n / rate) * (1 + 0.4 * math.sin(n / 900)))
               if (n // rate) % 5 != 4 else 0 for n in range(int(seconds * rate))]
    from rescue.testing.transcripts import wav_bytes

    return wav_bytes(struct.pack(f"<{len(samples)}h", *samples), rate)


def timed(run: Any) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return time.process_time() - cpu, time.perf_counter() - wall


def measure(weights: Path, audio: bytes, repeats: int) -> dict[str, list[tuple[float, float]]]:
    from faster_whisper import WhisperModel

    from rescue.llm._transcribe import LocalWhisper, transcription_request

    local = LocalWhisper(str(weights), language="en")
    bare = WhisperModel(str(weights), device="cpu", compute_type="default")
    request = transcription_request(audio)

    def rescue_side() -> None:
        answer = asyncio.run(local.complete(request))
        assert answer.status == "ok", answer.error

    def bare_side() -> None:
        pieces, _info = bare.transcribe(io.BytesIO(audio), language="en", word_timestamps=True)
        list(pieces)

    rescue_side()  # loads the model once, as a build does for its first chunk
    out: dict[str, list[tuple[float, float]]] = {"rescue": [], "bare": []}
    for _ in range(repeats):  # side by side, alternating
        out["rescue"].append(timed(rescue_side))
        out["bare"].append(timed(bare_side))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="Audio length.")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from rescue.testing.tiny_whisper import TEST_DIMS, WHISPER_TINY, make_tiny_whisper

    audio = tone_wav(args.seconds)
    minutes = args.seconds / 60
    print(f"{args.seconds:g} s of audio, {args.repeats} runs per side, {os.cpu_count()} CPU(s), "
          f"load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as folder:
        for name, dims in (("test model (64 wide, 2+2 layers)", TEST_DIMS),
                           ("whisper-tiny sizes (384 wide, 4+4 layers), random", WHISPER_TINY)):
            weights = make_tiny_whisper(Path(folder) / name.split()[0], dims=dims)
            runs = measure(weights, audio, args.repeats)
            cpu = {side: statistics.median(c for c, _w in values) / minutes for side, values in runs.items()}
            wall = {side: statistics.median(w for _c, w in values) / minutes for side, values in runs.items()}
            print(f"{name}: rescue {cpu['rescue']:.2f} CPU-s / {wall['rescue']:.2f} wall-s per audio-minute; "
                  f"bare faster-whisper {cpu['bare']:.2f} / {wall['bare']:.2f}; "
                  f"ratio rescue/bare (CPU) {cpu['rescue'] / cpu['bare']:.3f}")


if __name__ == "__main__":
    main()
