"""The scripted server's /v1/audio/transcriptions: a multipart upload answered over real HTTP."""

from __future__ import annotations

import math
import struct

import httpx
import pytest

from rescue.testing import Reply, fail_first, serve, verbose_json
from rescue.testing.transcripts import PlacedWord, TimedWords, wav_bytes

pytestmark = pytest.mark.timeout(60)


def wav(samples: list[int], rate: int = 16000) -> bytes:
    return wav_bytes(struct.pack(f"<{len(samples)}h", *samples), rate)


def tone(seconds: float, rate: int = 16000, freq: float = 220.0) -> list[int]:
    return [int(8000 * math.sin(2 * math.pi * freq * n / rate) * (1 + 0.3 * math.sin(n / 37))) for n in
            range(int(seconds * rate))]


def upload(server, data: bytes, **fields) -> httpx.Response:
    form = {"model": "whisper-1", "response_format": "verbose_json",
            "timestamp_granularities[]": ["word", "segment"], **fields}
    return httpx.post(f"{server.base_url}/audio/transcriptions", files={"file": ("chunk.wav", data, "audio/wav")},
                      data=form, headers={"Authorization": "Bearer k"}, timeout=10)


def test_default_answer_and_logged_form():
    audio = wav(tone(1.5))
    with serve() as server:
        answer = upload(server, audio).json()
        assert answer["segments"][0]["end"] == 1.5 and answer["text"] == "Scripted transcription."
        body = server.requests[0].body
        assert server.requests[0].path == "/v1/audio/transcriptions"
        assert body["model"] == "whisper-1" and body["timestamp_granularities[]"] == ["word", "segment"]
        assert body["file"]["filename"] == "chunk.wav" and body["file"]["data"] == audio


def test_diarized_answer_429_and_chunk_failure():
    diarized = verbose_json([{"start": 0.0, "end": 1.0, "text": "Hello.", "speaker": "SPEAKER_00"}],
                            [{"word": "Hello.", "start": 0.1, "end": 0.6}])
    with serve(transcribe=fail_first(1, Reply.rate_limited(0.01), diarized)) as server:
        first = upload(server, wav(tone(1.0)))
        assert first.status_code == 429 and first.headers["retry-after-ms"] == "10"
        again = upload(server, wav(tone(1.0)))
        assert again.json()["segments"][0]["speaker"] == "SPEAKER_00"
        # A different chunk is a different request: it gets its own first failure.
        assert upload(server, wav(tone(1.0, freq=300))).status_code == 429
        server.transcribe = Reply.server_error()
        assert upload(server, wav(tone(1.0))).status_code == 500
    with serve() as server:
        bad = httpx.post(f"{server.base_url}/audio/transcriptions", data={"model": "m"}, timeout=10)
        assert bad.status_code == 400 and "file" in bad.json()["error"]["message"]


def test_timed_words_answers_a_slice_with_its_own_words():
    rate = 16000
    full = [0] * rate + tone(1.0) + [0] * rate + tone(1.0, freq=330) + [0] * rate
    words = [PlacedWord(1.0, 1.5, "one", "SPEAKER_1"), PlacedWord(1.5, 2.0, "two", "SPEAKER_1"),
             PlacedWord(3.0, 4.0, "three", "SPEAKER_2")]
    script = TimedWords(wav(full), words)
    with serve(transcribe=script) as server:
        part = upload(server, wav(full[int(2.5 * rate):])).json()
    assert [w["word"] for w in part["words"]] == ["three"]
    assert part["words"][0]["start"] == pytest.approx(0.5) and part["segments"][0]["speaker"] == "SPEAKER_2"
    assert script.offsets == [pytest.approx(2.5)]
