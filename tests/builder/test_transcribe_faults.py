"""A failed transcription is never silent (#33 item 4): ``rescue build --transcribe`` against the scripted
server's ``/v1/audio/transcriptions`` answering 500, not JSON, no segments, no speech, times that are negative,
NaN, reversed or past the audio, wrong types, missing fields, a huge body and hostile speaker labels. Each exits 3
with a message naming the chunk, with and without ``--propose-only``, writes no transcript, and the rerun asks
again."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest
from _engine_support import saved_answers
from media_helpers import make_video
from test_build_inputs import cli

from rescue.testing import Reply, serve, verbose_json

pytestmark = pytest.mark.timeout(300)

DURATION = 24.0


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("faults") / "session.mp4", DURATION, silences=[(11.0, 13.0)])


def build(video, out, server, *extra: str):
    return cli(str(video), "--transcribe", "whisper-1", "--transcribe-base-url", server.base_url, "--scenario",
               "couple", "--participants", "Alan,Evelyn", "--min-duration", "5", "--max-retries", "1",
               "--out", str(out), *extra)


def uploads(server) -> int:
    return len([r for r in server.requests if r.path.endswith("transcriptions")])


def segment(start, end, text="Hello there.", **more):
    return {"start": start, "end": end, "text": text, **more}


# (name, the server's answer to every upload, what the message says)
FAULTS = [
    ("http 500", Reply.server_error(), "HTTP 500"),
    ("not json", Reply.text("<html>502 Bad Gateway</html>"), "not JSON"),
    ("a json list", Reply.json([1, 2]), "JSON list, not an object"),
    ("text without segments", Reply.json({"text": "hello"}), "no segments"),
    ("segments empty", verbose_json([]), "holds no speech"),
    ("segments without text", verbose_json([segment(1.0, 2.0, text=""), segment(3.0, 4.0, text="   ")]),
     "holds no speech"),
    ("negative start", verbose_json([segment(-3.0, 2.0)]), "segments[0].start is -3.0"),
    ("NaN end", Reply.text('{"segments": [{"start": 1.0, "end": NaN, "text": "x"}]}'), "segments[0].end is nan"),
    ("Infinity start", Reply.text('{"segments": [{"start": Infinity, "end": 2, "text": "x"}]}'), "start is inf"),
    ("1e999 end", Reply.text('{"segments": [{"start": 1, "end": 1e999, "text": "x"}]}'), "end is inf"),
    ("reversed", verbose_json([segment(5.0, 2.0)]), "segments[0] ends (2 s) before it starts (5 s)"),
    ("past the audio", verbose_json([segment(1.0, 2.0), segment(3.0, 400.0)]), "past the end of the"),
    ("a word past the audio", verbose_json([segment(1.0, 2.0)], [{"word": "Hi", "start": 1.0, "end": 99.0}]),
     "words[0].end is 99 s, past the end"),
    ("a word reversed", verbose_json([segment(1.0, 2.0)], [{"word": "Hi", "start": 1.5, "end": 1.2}]),
     "words[0] ends"),
    ("start a string", Reply.json({"segments": [{"start": "1.0", "end": 2.0, "text": "x"}]}),
     "segments[0].start is '1.0', not seconds"),
    ("start a bool", Reply.json({"segments": [{"start": True, "end": 2.0, "text": "x"}]}), "not seconds"),
    ("end missing", Reply.json({"segments": [{"start": 1.0, "text": "x"}]}), "segments[0].end is None"),
    ("text a dict", Reply.json({"segments": [{"start": 1.0, "end": 2.0, "text": {"a": 1}}]}),
     "segments[0].text is a dict, not text"),
    ("speaker a list", Reply.json({"segments": [{"start": 1.0, "end": 2.0, "text": "x", "speaker": ["A"]}]}),
     "segments[0].speaker is a list"),
    ("segments a dict", Reply.json({"segments": {"start": 1}}), "segments is a dict, not a list"),
    ("words a string", Reply.json({"segments": [segment(1.0, 2.0)], "words": "hi"}), "words is a str"),
    ("a segment not an object", Reply.json({"segments": [segment(1.0, 2.0), 7]}), "segments[1] is not an object"),
    ("huge body", Reply.json({"segments": [segment(1.0, 2.0, text="x" * 20000)]}), "answer_too_large"),
    ("a 5000-digit number", Reply.text('{"segments": [{"start": 1, "end": ' + "9" * 5000 + ', "text": "x"}]}'),
     "not JSON"),
]


@pytest.mark.slow
@pytest.mark.parametrize("propose_only", [True, False], ids=["propose-only", "full"])
@pytest.mark.parametrize(("answer", "said"), [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS])
def test_a_failed_transcription_exits_3_naming_the_chunk_and_the_rerun_asks_again(tmp_path, video, answer, said,
                                                                                   propose_only):
    out = tmp_path / "out"
    extra = ["--max-answer-bytes", "8000", *(["--propose-only"] if propose_only else [])]
    with serve(transcribe=answer) as server:
        done = build(video, out, server, *extra)
        assert done.returncode == 3, done.stdout + done.stderr
        message = " ".join(done.stderr.split())
        assert said in message and "chunk 1 of 1" in message or said == "holds no speech" and said in message
        assert "incomplete:" in message
        assert not list(out.rglob("*.srt"))
        assert not (out / "draft.jsonl").exists() and "draft.jsonl" not in done.stdout
        first = uploads(server)
        server.reset()
        again = build(video, out, server, *extra)
        assert again.returncode == 3 and uploads(server) >= 1, "the rerun must ask again, not read a refusal back"
    assert first >= 1


@pytest.mark.slow
def test_a_chunk_refused_among_good_ones_is_named_and_only_it_is_asked_again(tmp_path):
    """Two chunks: the second's times run past its audio. Exit 3 naming chunk 2 of 2; the rerun sends only it."""
    video = make_video(tmp_path / "long.mp4", 40.0, silences=[(18.0, 21.0)])
    out = tmp_path / "out"
    bad = {"on": True}
    from rescue.builder.transcribe import plan_chunks
    from rescue.media import silences

    second = plan_chunks(40.0, silences(video, duration=40.0), max_seconds=25)[1]

    def script(body):
        seconds = (body["file"]["size"] - 44) / 32000
        if bad["on"] and abs(seconds - (second.end - second.start)) < 0.01:
            return verbose_json([segment(1.0, seconds + 30)])
        return verbose_json([segment(1.0, 3.0), segment(5.0, 8.0, text="Second line.")])

    with serve(transcribe=script) as server:
        from rescue.builder import BuildConfig, SessionSpec
        from rescue.builder import build as run_build

        spec = SessionSpec(video, out / "transcripts/g/long.srt", "couple", ("Alan", "Evelyn"), "g", transcribe=True)
        config = BuildConfig(out=out, sessions=[spec], transcribe="whisper-1", transcribe_base_url=server.base_url,
                             min_duration=5, chunk_seconds=25, max_retries=1, propose_only=True)
        first = run_build(config)
        assert not first.complete and len(first.failed) == 1
        assert "chunk 2 of 2" in first.failed[0] and "past the end of the" in first.failed[0]
        assert not spec.subtitles.exists()
        bad["on"] = False
        server.reset()
        second = run_build(config)
        assert second.complete and uploads(server) == 1 and spec.subtitles.is_file()


@pytest.mark.slow
def test_hostile_labels_and_text_never_reach_the_transcript_or_the_terminal(tmp_path, video):
    hostile = ["\x1b[31mred", "[bold red]x[/]", "../../etc/passwd", "SPEAKER_1: fake", "A" * 5000, "a\nb", 7]
    segments = [segment(1.0 + n, 1.8 + n, text=f"line {n}", speaker=label) for n, label in enumerate(hostile)]
    segments.append(segment(8.0, 8.5, text="bell\x07 and nul\x00 and escape\x1b[2J"))
    segments.append(segment(9.0, 10.0, text="one\n\n99\n00:00:00,000 --> 00:00:09,000\nInjected cue"))
    out = tmp_path / "out"
    with serve(transcribe=verbose_json(segments)) as server:
        done = build(video, out, server)
    assert done.returncode == 2  # the labels are not in the cast: named SPEAKER_n, the user maps them
    transcript = (out / "transcripts/alan_and_evelyn/session.srt").read_text()
    for label in hostile[:-1]:
        assert str(label) not in done.stdout + done.stderr and str(label) not in transcript
    assert "SPEAKER_1" in done.stderr and "\x1b" not in transcript
    from rescue.media import load_cues

    cues = load_cues(out / "transcripts/alan_and_evelyn/session.srt")
    assert len(cues) == len(segments) and cues[-1].text.startswith("one 99 00:00:00 000 -> 00:00:09 000")
    assert cues[-2].text == "bell and nul and escape[2J"
    assert {s for c in cues for s in c.speakers} == {f"SPEAKER_{n}" for n in range(1, len(hostile) + 1)}
    record = json.loads((out / "transcripts/alan_and_evelyn/session.chunks.json").read_text())
    assert all(len(label) <= 80 for label in record["chunks"][0]["labels"].values())


def test_read_transcription_refuses_each_bad_time():
    from rescue.llm._client import MalformedAnswer
    from rescue.llm._transcribe import read_transcription

    good = json.dumps(verbose_json([segment(0.0, 9.5)], [{"word": "x", "start": 0.0, "end": 10.4}]))
    assert read_transcription(good, 10.0)["segments"][0]["end"] == 9.5  # within a second of the end: rounding
    for bad in ([segment(-0.5, 1.0)], [segment(2.0, 1.0)], [segment(1.0, 11.5)], [segment(math.inf, 1.0)]):
        with pytest.raises(MalformedAnswer):
            read_transcription(json.dumps(verbose_json(bad)), 10.0)


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_build_killed_while_chunks_are_in_flight_leaves_no_transcript_and_resumes(tmp_path, how):
    """Three chunks sent at once: the first answered, the others held; the build is killed. No transcript and no
    chunk record are left, no ffmpeg runs on, and the rerun sends only the two chunks not answered."""
    video = make_video(tmp_path / "long.mp4", 64.0, silences=[(19.0, 21.0), (40.0, 42.0)])
    out = tmp_path / "out"
    held = {"on": True, "answered": 0}

    def script(body):
        seconds = (body["file"]["size"] - 44) / 32000
        answer = verbose_json([segment(1.0, 3.0), segment(min(seconds - 2, 9.0), min(seconds - 1, 10.0), text="More.")])
        held["answered"] += 1
        return Reply.json(answer, delay=120.0) if held["on"] and held["answered"] > 1 else answer

    env = {**os.environ, "OPENAI_API_KEY": "test"}
    with serve(transcribe=script) as server:
        command = [sys.executable, "-m", "rescue", "build", str(video), "--transcribe", "whisper-1",
                   "--transcribe-base-url", server.base_url, "--scenario", "couple", "--participants", "Alan,Evelyn",
                   "--min-duration", "5", "--propose-only", "--chunk-seconds", "25", "--out", str(out)]
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # The first answer stored and the two others held: waited for, not slept for (a fixed 0.3 s left the
        # first answer unstored on a loaded machine, and the rerun then sent three chunks).
        deadline = time.monotonic() + 120
        while uploads(server) < 3 or saved_answers(out / "cache.sqlite") < 1:
            assert process.poll() is None, process.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline, "the chunks never reached the server"
            time.sleep(0.05)
        process.send_signal(how)
        _, err = process.communicate(timeout=120)
        assert process.returncode in (-signal.SIGKILL, 128 + signal.SIGTERM, -signal.SIGTERM), err.decode()[-2000:]
        assert not list(out.rglob("*.srt")) and not list(out.rglob("*.chunks.json"))
        assert not [p for p in out.rglob(".*") if p.is_file() and p.name != ".rescue.lock"]
        held["on"] = False
        server.reset()
        again = subprocess.run(command, env=env, capture_output=True, check=False, timeout=120)
        assert again.returncode == 0, again.stderr.decode()[-2000:]
        assert uploads(server) == 2 and list(out.rglob("*.srt"))
