"""``rescue build VIDEO --transcribe MODEL``: a bare video (espeak-ng words at known times) transcribed through
the scripted /v1/audio/transcriptions, then built and validated; chunking, diarized and undiarized answers, a
429, a failing chunk, resuming, dry runs; and the alignment check with --subs-offset."""

from __future__ import annotations

import json
import statistics

import pytest
from media_helpers import espeak_available, write_srt
from transcribe_media import extracted_audio, spoken_session

from rescue.builder import BuildConfig, SessionSpec, build
from rescue.builder.align import estimate_offset
from rescue.builder.chunks import read_chunks
from rescue.builder.transcribe import Chunk, merge_answers, plan_chunks
from rescue.data.validation import validate_path
from rescue.media import load_cues, silences
from rescue.testing import Reply, fail_first, serve
from rescue.testing.drafts import draft_script
from rescue.testing.transcripts import TimedWords

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed (scripts/test.sh installs it)")]

DURATION = 64.0
TURNS = [
    (1.0, "SPEAKER_00", "I feel like nobody listens to me at home."),
    (6.0, "SPEAKER_01", "What happens when you try to talk?"),
    (11.0, "SPEAKER_02", "She walks away and I shout louder."),
    (17.0, "SPEAKER_00", "That is not fair, you never stay."),
    (23.0, "SPEAKER_01", "Let us slow down and hear each other."),
    (29.5, "SPEAKER_02", "I am tired of the same fight."),
    (35.0, "SPEAKER_00", "I want us to be close again."),
    (41.0, "SPEAKER_01", "Can you tell him that directly?"),
    (47.0, "SPEAKER_00", "I miss you, and I am scared."),
    (53.0, "SPEAKER_02", "I did not know you felt that way."),
    (58.5, "SPEAKER_01", "Thank you both for saying this."),
]
CAST = "SPEAKER_1=Alan,SPEAKER_2=Therapist,SPEAKER_3=Evelyn"
TRUTH = {"SPEAKER_00": "Alan", "SPEAKER_01": "Therapist", "SPEAKER_02": "Evelyn"}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")


@pytest.fixture(scope="module")
def spoken(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spoken")
    session = spoken_session(folder, TURNS, DURATION)
    return session, extracted_audio(session.video, folder)


def spec(session, out, **kw) -> SessionSpec:
    from rescue.builder.inputs import parse_speaker_map

    mapping = parse_speaker_map(kw.pop("speaker_map"), "--speaker-map", ("Alan", "Evelyn")) if "speaker_map" in kw else ()
    return SessionSpec(session.video, out / "transcripts/g/session.srt", "couple", ("Alan", "Evelyn"), "g",
                       transcribe=True, speaker_map=mapping, **kw)


def config(out, sessions, server, **kw) -> BuildConfig:
    kw.setdefault("model", "test-model")
    kw.setdefault("base_url", server.base_url)
    return BuildConfig(out=out, sessions=sessions, transcribe="whisper-1", transcribe_base_url=server.base_url,
                       min_duration=20, chunk_seconds=25, max_retries=2, **kw)


def test_chunks_are_cut_in_silences_and_overlap():
    silent = [(9.0, 10.0), (19.5, 20.5), (28.0, 29.0)]
    chunks = plan_chunks(40.0, silent, max_seconds=25, overlap=2)
    assert [(c.own_from, c.own_to) for c in chunks] == [(0.0, 20.0), (20.0, 40.0)]
    assert (chunks[0].start, chunks[0].end, chunks[1].start, chunks[1].end) == (0.0, 22.0, 18.0, 40.0)
    # The overlap is heard twice and kept once: by the chunk owning the segment's middle.
    first = {"segments": [{"start": 19.0, "end": 19.4, "text": "edge"}, {"start": 21.0, "end": 21.5, "text": "x"}]}
    second = {"segments": [{"start": 1.0, "end": 1.4, "text": "edge"}, {"start": 3.0, "end": 3.5, "text": "x"}]}
    lines = merge_answers([Chunk(0, 22, 0, 20), Chunk(18, 40, 20, 40)], [first, second])
    assert [(line.start, line.text) for line in lines] == [(19.0, "edge"), (21.0, "x")]


@pytest.mark.slow
def test_a_bare_video_becomes_a_validated_draft_with_the_words_where_they_were_said(tmp_path, spoken, capsys):
    session, audio = spoken
    out = tmp_path / "out"
    timed = TimedWords(audio, session.words)
    # The first upload of every chunk is refused with a 429: retried, never seen in the result.
    with serve(draft_script(), transcribe=fail_first(1, Reply.rate_limited(0.01), timed)) as server:
        # Diarized: the transcript names SPEAKER_n, which the cast does not hold until mapped.
        from rescue.builder.inputs import BuildInputError

        with pytest.raises(BuildInputError, match=r"are not in the cast: name them with --speaker-map \"SPEAKER_1=NAME"):
            build(config(out, [spec(session, out)], server))
        transcript = out / "transcripts/g/session.srt"
        assert transcript.is_file()
        chunks = len(timed.offsets)
        uploads = [r for r in server.requests if r.path.endswith("transcriptions")]
        assert chunks == 3 and len(uploads) == 2 * chunks  # each chunk: a 429, then its answer
        # A speaker silent in the audio two chunks share cannot be matched across them: numbered apart, and
        # named within its chunk ("2:SPEAKER_4=Evelyn"); the truth is the endpoint's label the record keeps.
        record = read_chunks(transcript)
        assert record is not None and len(record.chunks) == 3
        per_chunk = [f"{c.number}:{label}={TRUTH[c.labels[label]]}" for c in record.chunks for label in c.unmatched]
        server.reset()
        outcome = build(config(out, [spec(session, out, speaker_map=",".join([CAST, *per_chunk]))], server))
        assert not [r for r in server.requests if r.path.endswith("transcriptions")]  # the transcript is reused
    assert outcome.complete and outcome.segments
    assert validate_path(out / "draft.jsonl").errors == []
    assert any("transcribed in 3 chunks" in note for note in outcome.notes)
    cues = load_cues(transcript)
    assert len(cues) == len(TURNS)
    assert [c.speakers for c in cues][:3] == [("SPEAKER_1",), ("SPEAKER_2",), ("SPEAKER_3",)]
    assert [c.text for c in cues] == [text for _s, _w, text in TURNS]
    # Word timing: every line's first and last word against where espeak's word was placed.
    errors, at = [], 0
    for cue, (_start, _who, text) in zip(cues, TURNS):
        said = session.words[at: at + len(text.split())]
        at += len(said)
        errors += [abs(cue.start - said[0].start), abs(cue.end - said[-1].end)]
    print(f"\nword timing error (line-boundary words, n={len(errors)}): mean {statistics.mean(errors) * 1000:.1f} ms, "
          f"max {max(errors) * 1000:.1f} ms")
    assert max(errors) < 0.05
    manifest = json.loads((out / "manifest.json").read_text())
    assert not [p for s in manifest["segments"] for p in s["problems"] if "no speech" in p["message"]]
    provenance = manifest["segments"][0]["provenance"]
    assert provenance["transcribed_by"] == "whisper-1" and provenance["subtitles_file"] == "transcripts/g/session.srt"


@pytest.mark.slow
def test_one_command_without_speakers_the_model_attributes_and_each_is_flagged(tmp_path, spoken):
    """The lab's one command: a bare video, a transcription endpoint, an annotation endpoint; then validate."""
    import subprocess
    import sys

    from test_build_inputs import cli

    session, audio = spoken
    out = tmp_path / "out"
    with serve(draft_script(), transcribe=TimedWords(audio, session.words, diarize=False)) as server:
        done = cli(str(session.video), "--transcribe", "whisper-1", "--transcribe-base-url", server.base_url,
                   "--model", "test-model", "--base-url", server.base_url, "--video-input", "none",
                   "--scenario", "couple", "--participants", "Alan,Evelyn", "--min-duration", "20", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "transcript: " in done.stdout and "open problem(s)" in done.stdout
    checked = subprocess.run([sys.executable, "-m", "rescue", "validate", "--data", str(out / "draft.jsonl")],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    problems = [p for s in manifest["segments"] for p in s["problems"]]
    flagged = [p for p in problems if "model's attribution" in p["message"]]
    rows = sum(len(s["rows"]) for s in manifest["segments"])
    assert flagged and len(flagged) == rows and all(p["field"] == "primary_speaker" for p in flagged)


@pytest.mark.slow
def test_a_failing_chunk_leaves_no_transcript_and_the_rerun_sends_only_it(tmp_path, spoken):
    session, audio = spoken
    out = tmp_path / "out"
    timed = TimedWords(audio, session.words, diarize=False)
    failing = {"on": True}

    def script(body):
        answer = timed(body)
        if failing["on"] and timed.offsets and timed.offsets[-1] > 30:  # the last chunk fails for good
            return Reply.error(400, "audio could not be decoded", type="invalid_request_error")
        return answer

    with serve(draft_script(), transcribe=script) as server:
        first = build(config(out, [spec(session, out)], server))
        assert not first.complete and "audio could not be decoded" in first.failed[0]
        assert not (out / "transcripts/g/session.srt").exists() and not (out / "draft.jsonl").exists()
        failing["on"] = False
        server.reset()
        second = build(config(out, [spec(session, out)], server, retry_errors=True))
        sent = [r for r in server.requests if r.path.endswith("transcriptions")]
    assert second.complete and len(sent) == 1 and (out / "transcripts/g/session.srt").is_file()


@pytest.mark.slow
def test_dry_run_counts_the_audio_and_its_cost(tmp_path, spoken):
    from test_build_inputs import cli

    session, _audio = spoken
    done = cli(str(session.video), "--transcribe", "openai/whisper-1", "--scenario", "couple", "--participants",
               "Alan,Evelyn", "--out", str(tmp_path / "o"), "--model", "openai/gpt-4o-mini", "--dry-run")
    assert done.returncode == 0, done.stderr
    minutes = DURATION / 60
    assert f"{minutes:.1f} min of audio" in done.stdout and f"${minutes * 0.006:.4f}" in done.stdout
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_alignment_finds_a_known_shift_and_subs_offset_undoes_it(tmp_path, spoken):
    session, _audio = spoken
    silent = silences(session.video, duration=DURATION)
    truth = [(start, end, "", text) for start, end, _who, text in session.lines]
    write_srt(tmp_path / "on.srt", truth)
    base = estimate_offset(load_cues(tmp_path / "on.srt"), silent, DURATION)
    found = {}
    for shift in (-0.8, 0.7, 1.5, 3.0):
        write_srt(tmp_path / "late.srt", [(a + shift, b + shift, w, t) for a, b, w, t in truth])
        result = estimate_offset(load_cues(tmp_path / "late.srt"), silent, DURATION)
        found[shift] = result.offset
        assert result.reliable and result.offset == pytest.approx(-shift + base.offset, abs=0.03)
    print(f"\nalignment: offset found on unshifted lines {base.offset:+.3f} s; on lines shifted by s: "
          + ", ".join(f"s={s:+.1f} -> {o:+.3f}" for s, o in found.items()))
    # A line over silence is flagged; --subs-offset moves the lines back onto the speech.
    write_srt(tmp_path / "late.srt", [(a + 1.5, b + 1.5, w, t) for a, b, w, t in truth] + [(63.0, 63.8, "", "ghost")])
    assert [c.text for c in estimate_offset(load_cues(tmp_path / "late.srt"), silent, DURATION).silent] == ["ghost"]
    from rescue.builder.inputs import load_session

    moved = load_session(SessionSpec(session.video, tmp_path / "late.srt", "couple", ("Alan", "Evelyn"), "g",
                                     subs_offset=-1.5))
    assert moved.cues[0].start == pytest.approx(truth[0][0])


def test_local_faster_whisper_needs_its_extra_and_weights(tmp_path):
    from rescue.llm import CredentialError
    from rescue.llm._transcribe import resolve_transcriber

    with pytest.raises(CredentialError, match="--transcribe-model PATH"):
        resolve_transcriber("local/faster-whisper")
    with pytest.raises(CredentialError, match="no such folder"):  # never taken for a hub name and fetched
        resolve_transcriber("local/faster-whisper", weights=str(tmp_path / "missing"))
    try:
        import faster_whisper  # noqa: F401
    except ImportError:
        with pytest.raises(CredentialError, match=r"rescue-bench\[transcribe\]"):
            resolve_transcriber("local/faster-whisper", weights=str(tmp_path))


@pytest.fixture(scope="module")
def tiny_whisper(tmp_path_factory):
    """faster-whisper weights made here (rescue.testing.tiny_whisper): no hub, no download."""
    pytest.importorskip("faster_whisper", reason="the transcribe extra (faster-whisper) is not installed")
    from rescue.testing.tiny_whisper import make_tiny_whisper

    return make_tiny_whisper(tmp_path_factory.mktemp("tiny-whisper"))


@pytest.mark.slow
def test_local_faster_whisper_transcribes_in_process_into_a_validated_draft(tmp_path, spoken, tiny_whisper):
    """``--transcribe local/faster-whisper`` end to end on weights the test made: the transcript has the shape and
    the timing the model gives (one line in every 30 s window: it hears nothing), the answers go
    through the same checks and cache, and the draft validates."""
    from test_build_inputs import cli

    from rescue.testing.tiny_whisper import SAID

    session, _audio = spoken
    out = tmp_path / "out"
    args = [str(session.video), "--transcribe", "local/faster-whisper", "--transcribe-model", str(tiny_whisper),
            "--language", "en", "--scenario", "couple", "--participants", "Alan,Evelyn", "--min-duration", "20",
            "--out", str(out)]
    done = cli(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    transcript = out / "transcripts/alan_and_evelyn/session.srt"
    cues = load_cues(transcript)
    said = "".join(SAID).replace("\u0120", " ")
    assert [c.text for c in cues] == [said] * 3
    # One line in each 30 s window (where in it is the word alignment's: cross-attention on noise), in order.
    assert [int(c.start // 30) for c in cues] == [0, 1, 2] and all(c.start < c.end <= DURATION for c in cues)
    assert validate_path(out / "draft.jsonl").errors == []
    events = [json.loads(line) for line in (out / "build.log").read_text().splitlines()]
    assert [e["lines"] for e in events if e["event"] == "transcribe" and e.get("done")] == [3]
    # Transcribed again from the cache: same transcript, the model not loaded for it.
    transcript.unlink()
    again = cli(*args)
    assert again.returncode == 0 and [c.text for c in load_cues(transcript)] == [said] * 3


@pytest.mark.slow
def test_propose_only_transcribes_proposes_and_stops(tmp_path, spoken):
    session, audio = spoken
    out = tmp_path / "out"
    with serve(draft_script(), transcribe=TimedWords(audio, session.words, diarize=False)) as server:
        outcome = build(config(out, [spec(session, out)], server, propose_only=True))
        paths = [r.path for r in server.requests]
    assert (out / "transcripts/g/session.srt").is_file() and outcome.proposals and outcome.proposals[0].is_file()
    assert "/v1/chat/completions" not in paths and not (out / "clips").exists()


@pytest.mark.slow
def test_a_late_subtitle_file_is_reported_with_the_offset_that_fixes_it(tmp_path, spoken):
    session, _audio = spoken
    late = write_srt(tmp_path / "late.srt", [(a + 1.5, b + 1.5, "Alan", t) for a, b, _w, t in session.lines])
    out = tmp_path / "out"
    outcome = build(BuildConfig(out=out, sessions=[SessionSpec(session.video, late, "couple", ("Alan", "Evelyn"), "g")],
                                min_duration=20, propose_only=True))
    assert any("start 1.50 s after the speech" in n and "--subs-offset -1.50" in n for n in outcome.notes)
    events = [json.loads(line) for line in (out / "build.log").read_text().splitlines()]
    assert [e["offset"] for e in events if e["event"] == "alignment"] == [-1.5]


@pytest.mark.slow
def test_a_sessions_csv_transcribes_the_lines_without_subtitles(tmp_path, spoken):
    from test_build_inputs import cli

    from rescue.builder.inputs import BuildInputError, read_sessions_csv

    session, _audio = spoken
    write_srt(tmp_path / "given.srt", [(1.0, 4.0, "Alan", "Hello there.")])
    sessions = tmp_path / "sessions.csv"
    sessions.write_text("video,subtitles,scenario,participants,group\n"
                        f"{session.video},,couple,Alan;Evelyn,g\n{session.video},given.srt,couple,Alan;Evelyn,h\n")
    specs = read_sessions_csv(sessions, transcripts=tmp_path / "o/transcripts")
    assert [(s.transcribe, s.subtitles) for s in specs] == [
        (True, tmp_path / "o/transcripts/g/session.srt"), (False, tmp_path / "given.srt")]
    with pytest.raises(BuildInputError, match=r"sessions.csv:2: subtitles: empty"):
        read_sessions_csv(sessions)  # without --transcribe an empty subtitles column is an error
    done = cli("--manifest", str(sessions), "--transcribe", "openai/whisper-1", "--out", str(tmp_path / "o"),
               "--min-duration", "1", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "1 video(s), 1.1 min of audio" in done.stdout and not (tmp_path / "o").exists()
