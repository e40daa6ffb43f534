"""``rescue build`` input checking: every class of bad input is a clear error naming the file and cue (or
CSV line), exit 2, no traceback, and nothing written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from media_helpers import make_video, write_srt, write_vtt

from rescue.builder import BuildConfig, BuildInputError, SessionSpec, build
from rescue.builder.inputs import parse_participants, read_sessions_csv


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``rescue build ARGS`` through the real entry point (its error handling, messages and exit codes), in this
    process: a child interpreter per call cost seconds of imports and tested nothing more."""
    from _cli import invoke_main

    here = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = invoke_main(["build", *args])
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["rescue", "build", *args], result.exit_code, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def short_video(tmp_path_factory) -> Path:
    return make_video(tmp_path_factory.mktemp("short") / "clip.mp4", 20.0)


def _spec(video: Path, subs: Path, **kw) -> SessionSpec:
    fields = {"scenario": "couple", "participants": ("Alan", "Evelyn"), "group": "alan_and_evelyn"}
    fields.update(kw)
    return SessionSpec(video, subs, **fields)  # type: ignore[arg-type]


def _problems(tmp_path: Path, spec: SessionSpec) -> list[str]:
    out = tmp_path / "out"
    with pytest.raises(BuildInputError) as caught:
        build(BuildConfig(out=out, sessions=[spec]))
    assert not out.exists(), "nothing may be written when the inputs are bad"
    return caught.value.problems


def test_unreadable_video_is_named(tmp_path):
    video = tmp_path / "broken.mp4"
    video.write_bytes(b"\x00" * 100)
    subs = write_srt(tmp_path / "s.srt", [(1, 2, "Alan", "hi")])
    problems = _problems(tmp_path, _spec(video, subs))
    assert problems == [f"{video}: not a readable video (Error opening input files: Invalid data found when processing input)"] \
        or (len(problems) == 1 and problems[0].startswith(f"{video}: not a readable video"))


def test_cue_past_the_video_end(tmp_path, short_video):
    subs = write_srt(tmp_path / "s.srt", [(1, 2, "Alan", "hi"), (19.5, 25, "Evelyn", "too late")])
    assert _problems(tmp_path, _spec(short_video, subs)) == [
        f"{subs}: cue 2 (00:00:19.500 --> 00:00:25.000): runs past the video's end (00:00:20.000)"]


def test_overlapping_and_reversed_cues(tmp_path, short_video):
    subs = write_srt(tmp_path / "s.srt", [(1, 5, "Alan", "one"), (4, 6, "Evelyn", "two"), (9, 8, "Alan", "three"),
                                          (7, 7.5, "Alan", "four")])
    problems = _problems(tmp_path, _spec(short_video, subs))
    assert problems == [
        f"{subs}: cue 2 (00:00:04.000 --> 00:00:06.000): overlaps the previous cue (cue 1 ends at 00:00:05.000; "
        "overlaps up to --overlap-tolerance are trimmed)",
        f"{subs}: cue 3 (00:00:09.000 --> 00:00:08.000): ends before it starts (reversed or empty cue)",
        f"{subs}: cue 4 (00:00:07.000 --> 00:00:07.500): starts before the previous cue (cue 3 ends at 00:00:08.000; "
        "overlaps up to --overlap-tolerance are trimmed)",
    ]


def test_unknown_participant_in_webvtt_voice(tmp_path, short_video):
    subs = write_vtt(tmp_path / "s.vtt", [(1, 2, "Alan", "hi"), (3, 4, "Bob", "who am I")])
    problems = _problems(tmp_path, _spec(short_video, subs))
    assert problems == [f"{subs}: cue 2 (00:00:03.000 --> 00:00:04.000): speaker 'Bob' is not one of Alan, Evelyn, Therapist"]


def test_all_problems_of_all_sessions_at_once(tmp_path, short_video):
    bad_subs = write_srt(tmp_path / "a.srt", [(1, 2, "Zed", "x")])
    missing = tmp_path / "absent.mp4"
    with pytest.raises(BuildInputError) as caught:
        build(BuildConfig(out=tmp_path / "out", sessions=[_spec(short_video, bad_subs),
                                                           _spec(missing, bad_subs, group="g2")]))
    text = str(caught.value)
    assert "speaker 'Zed'" in text and f"{missing}: no such file" in text and "nothing was written" in text


def test_participants_are_checked():
    with pytest.raises(BuildInputError, match="'Therapist' is a reserved label"):
        parse_participants("Alan,Therapist", "--participants")
    with pytest.raises(BuildInputError, match="listed twice"):
        parse_participants("Alan;Alan", "x")
    assert parse_participants(" Alan ; Evelyn ", "x") == ("Alan", "Evelyn")


def test_sessions_csv_errors_name_the_line(tmp_path):
    path = tmp_path / "sessions.csv"
    path.write_text("video,subtitles,scenario,participants,group\n"
                    "a.mp4,a.srt,couple,Alan;Evelyn,alan_and_evelyn\n"
                    "b.mp4,,trio,Ann,bad group\n", encoding="utf-8")
    with pytest.raises(BuildInputError) as caught:
        read_sessions_csv(path)
    assert caught.value.problems == [f"{path}:3: subtitles: empty"]
    path.write_text("video,subtitles,scenario,participants,group\nb.mp4,b.srt,trio,Ann,g\n", encoding="utf-8")
    with pytest.raises(BuildInputError, match=r"sessions.csv:2: scenario: 'trio' is not couple or family"):
        read_sessions_csv(path)
    path.write_text("video,subs\n", encoding="utf-8")
    with pytest.raises(BuildInputError, match=r"sessions.csv:1: missing column\(s\) subtitles, scenario"):
        read_sessions_csv(path)


@pytest.mark.slow
def test_segments_file_errors(tmp_path, session_files):
    segments = tmp_path / "segments.csv"
    # Line 2: a bad time; line 3: past the end; line 4: a boundary inside a subtitle line (cue 1: 0.5-6.5 s).
    segments.write_text("start,end,name\n00:00:00,1:75:00\n0,00:09:00.000\n3.0,200\n", encoding="utf-8")
    spec = _spec(session_files.video, session_files.subs, segments=segments)
    problems = _problems(tmp_path, spec)
    assert problems[0] == f"{segments}:2: '1:75:00' is not a time (seconds or HH:MM:SS.mmm)"
    assert problems[1] == f"{segments}:3: end 00:09:00.000 is past the video's end (00:06:40.000)"
    assert problems[2].startswith(f"{segments}:4: segment boundary 00:00:03.000 falls inside {session_files.subs}: cue 1 ")


def test_cli_bad_input_exits_2_without_traceback(tmp_path, short_video):
    subs = write_srt(tmp_path / "s.srt", [(1, 2, "Bob", "hi")])
    out = tmp_path / "out"
    done = cli(str(short_video), "--subs", str(subs), "--scenario", "couple", "--participants", "Alan,Evelyn",
               "--out", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "speaker 'Bob'" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()
    done = cli(str(short_video), "--out", str(out))
    assert done.returncode == 2 and "missing --subs, --scenario, --participants" in done.stderr
    done = cli(str(short_video), "--subs", str(subs), "--scenario", "couple", "--participants", "Bob",
               "--video-input", "audio", "--out", str(out))
    assert done.returncode == 2 and "--video-input 'audio'" in done.stderr


@pytest.mark.slow
def test_more_segment_file_errors(tmp_path, session_files):
    from rescue.builder.inputs import load_session
    from rescue.builder.segments import read_segments_csv

    session = load_session(_spec(session_files.video, session_files.subs))
    path = tmp_path / "s.csv"
    path.write_text("start,end\n0,105.0\n56.0,140.0\n300,250\n400\n", encoding="utf-8")  # boundaries in silences
    with pytest.raises(BuildInputError) as caught:
        read_segments_csv(path, session)
    assert caught.value.problems == [
        f"{path}:3: starts before the previous segment ends (00:01:45.000)",
        f"{path}:4: end 250 is not after start 300",
        f"{path}:5: expected start,end[,name]",
    ]
    path.write_text("# nothing yet\n", encoding="utf-8")
    with pytest.raises(BuildInputError, match="lists no segments"):
        read_segments_csv(path, session)
    missing = _spec(session_files.video, session_files.subs, segments=tmp_path / "absent.csv")
    assert _problems(tmp_path, missing) == [f"{tmp_path / 'absent.csv'}: no such segments file"]


@pytest.mark.slow
def test_duplicate_sample_ids_are_refused(tmp_path, session_files):
    spec = _spec(session_files.video, session_files.subs)
    with pytest.raises(BuildInputError, match="is already built from"):
        build(BuildConfig(out=tmp_path / "out", sessions=[spec, spec]))
    assert not (tmp_path / "out").exists()


def test_video_and_manifest_together_is_an_error(tmp_path, short_video):
    sessions = tmp_path / "s.csv"
    sessions.write_text("video,subtitles,scenario,participants,group\n", encoding="utf-8")
    done = cli(str(short_video), "--manifest", str(sessions), "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and "either VIDEO or --manifest" in done.stderr


def test_speaker_names_match_the_cast_whatever_their_case(tmp_path, short_video):
    from rescue.builder.inputs import load_session

    subs = write_srt(tmp_path / "s.srt", [(1, 2, "ALAN", "hi"), (3, 4, "THERAPIST", "hello")])
    session = load_session(_spec(short_video, subs))
    assert [c.speakers for c in session.cues] == [("Alan",), ("Therapist",)]


# Real transcripts (issue #20, item 5).


def test_a_speaker_map_names_the_cast(tmp_path, short_video):
    from rescue.builder.inputs import load_session, parse_speaker_map

    subs = write_srt(tmp_path / "s.srt", [(1, 2, "Dr. Okafor", "hello"), (3, 4, "M", "hi"), (5, 6, "Alan", "yes")])
    mapping = parse_speaker_map("Dr. Okafor=Therapist,M=Evelyn", "--speaker-map", ("Alan", "Evelyn"))
    session = load_session(_spec(short_video, subs, speaker_map=mapping))
    assert [c.speakers for c in session.cues] == [("Therapist",), ("Evelyn",), ("Alan",)]
    with pytest.raises(BuildInputError, match="'Maya' is not one of Alan, Evelyn, Therapist"):
        parse_speaker_map("M=Maya", "--speaker-map", ("Alan", "Evelyn"))
    with pytest.raises(BuildInputError, match="'Okafor' is not NAME=CAST_NAME"):
        parse_speaker_map("Okafor", "--speaker-map", ("Alan", "Evelyn"))
    # Without the map the same file is refused, naming the speaker.
    assert "speaker 'Dr. Okafor' is not one of" in _problems(tmp_path, _spec(short_video, subs))[0]


def test_a_speaker_map_column_in_the_sessions_csv(tmp_path, short_video):
    subs = write_srt(tmp_path / "s.srt", [(1, 2, "Dr. Okafor", "hello")])
    csv_file = tmp_path / "sessions.csv"
    csv_file.write_text("video,subtitles,scenario,participants,group,speaker_map\n"
                        f'{short_video},{subs},couple,"Alan,Evelyn",g,"Dr. Okafor=Therapist"\n'
                        f'{short_video},{subs},couple,"Alan,Evelyn",h,\n', encoding="utf-8")
    first, second = read_sessions_csv(csv_file, default_map=(("Dr. Okafor", "Alan"),))
    assert first.speaker_map == (("Dr. Okafor", "Therapist"),) and second.speaker_map == (("Dr. Okafor", "Alan"),)


def test_small_overlaps_are_trimmed_and_reported(tmp_path, short_video):
    from rescue.builder.inputs import load_session

    subs = write_srt(tmp_path / "s.srt", [(1, 5.15, "Alan", "one"), (5, 6, "Evelyn", "two"), (6.0, 7, "Alan", "x")])
    session = load_session(_spec(short_video, subs))
    assert [(c.start, c.end) for c in session.cues] == [(1, 5), (5, 6), (6, 7)]
    assert session.notes[0] == (f"{subs}: cue 1 (00:00:01.000 --> 00:00:05.150): overlapped cue 2 by 0.150 s (within "
                                "--overlap-tolerance 0.2 s): now ends at 00:00:05.000")
    assert _problems(tmp_path, _spec(short_video, subs, overlap_tolerance=0.1))[0].endswith(
        "overlaps the previous cue (cue 1 ends at 00:00:05.150; overlaps up to --overlap-tolerance are trimmed)")


@pytest.mark.parametrize("layout", ["two lines", pytest.param("one line", marks=pytest.mark.slow)])
def test_a_line_of_two_speakers_is_split_in_proportion(tmp_path, short_video, layout):
    from rescue.builder.inputs import load_session

    sep = "\n" if layout == "two lines" else " / "
    subs = tmp_path / "s.srt"
    subs.write_text(f"1\n00:00:02,000 --> 00:00:08,000\n- Alan: I never said that.{sep}- Evelyn: You did, twice, "
                    "last week.\n", encoding="utf-8")
    session = load_session(_spec(short_video, subs))
    assert [(c.index, c.start, c.end, c.speakers, c.text) for c in session.cues] == [
        (1, 2.0, 4.667, ("Alan",), "I never said that."), (2, 4.667, 8.0, ("Evelyn",), "You did, twice, last week.")]
    assert [start for start, _ in session.split] == [2.0, 4.667]  # 4 words and 5 share 6 s
    assert "holds Alan and Evelyn: split at a time proportional to the words" in session.split[1][1]
    if layout == "one line":  # the draft's two rows carry the flag, for the reviewer to check the boundary
        from rescue.builder import read_manifest

        segments = tmp_path / "seg.csv"
        segments.write_text("0,20\n", encoding="utf-8")
        build(BuildConfig(out=tmp_path / "out", sessions=[_spec(short_video, subs, segments=segments)], min_duration=1))
        problems = read_manifest(tmp_path / "out" / "manifest.json").segments[0].problems
        flagged = [p for p in problems if "split at a time proportional" in p.message]
        assert [(p.row_index, p.field) for p in flagged] == [(1, "start_time"), (2, "start_time")]


def test_a_video_without_audio_is_warned_about(tmp_path):
    from rescue.builder.inputs import load_session
    from rescue.media import ffmpeg_exe

    video = tmp_path / "silent.mp4"
    subprocess.run([ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
                    "testsrc2=size=64x48:rate=5:duration=6", "-c:v", "libx264", "-preset", "ultrafast", str(video)],
                   check=True)
    subs = write_srt(tmp_path / "s.srt", [(1, 2, "Alan", "hi")])
    session = load_session(_spec(video, subs))
    assert session.notes == (f"{video}: has no audio track: the clips are silent, and neither the model nor the "
                             "reviewers hear the session",)


def test_the_key_is_checked_before_anything_is_cut(tmp_path, short_video, monkeypatch):
    from rescue.llm import CredentialError
    from rescue.testing.openai_server import serve

    subs = write_srt(tmp_path / "s.srt", [(1, 2, "Alan", "hi")])
    segments = tmp_path / "seg.csv"
    segments.write_text("0,20\n", encoding="utf-8")
    spec = _spec(short_video, subs, segments=segments)
    monkeypatch.delenv("RESCUE_TEST_KEY", raising=False)
    out = tmp_path / "out"
    with pytest.raises(CredentialError, match="no API key: set RESCUE_TEST_KEY"):
        build(BuildConfig(out=out, sessions=[spec], model="m", base_url="https://example.invalid/v1",
                          api_key_env="RESCUE_TEST_KEY", min_duration=1))
    assert not out.exists()
    # A dry run says which key is missing (and exits 2 from the command line).
    dry = build(BuildConfig(out=out, sessions=[spec], model="m", base_url="https://example.invalid/v1",
                            api_key_env="RESCUE_TEST_KEY", min_duration=1, dry_run=True))
    assert "RESCUE_TEST_KEY" in (dry.key_problem or "")
    result = cli(str(short_video), "--subs", str(subs), "--scenario", "couple", "--participants", "Alan,Evelyn",
                 "--segments", str(segments), "--min-duration", "1", "--model", "m", "--base-url",
                 "https://example.invalid/v1", "--api-key-env", "RESCUE_TEST_KEY", "--out", str(out), "--dry-run")
    assert result.returncode == 2 and "RESCUE_TEST_KEY" in result.stderr and "requests:" in result.stdout
    # A key the endpoint refuses on /models stops the build before the first cut.
    monkeypatch.setenv("RESCUE_TEST_KEY", "wrong-key-0123456789")
    with serve(api_key="right-key-0123456789") as server:
        with pytest.raises(CredentialError, match=r"refuses the key in RESCUE_TEST_KEY \(HTTP 401 on /models\)"):
            build(BuildConfig(out=out, sessions=[spec], model="m", base_url=server.base_url,
                              api_key_env="RESCUE_TEST_KEY", min_duration=1))
    assert not out.exists()


@pytest.mark.slow
def test_review_height_sets_the_clips_height(tmp_path, short_video):
    from rescue.builder import read_manifest
    from rescue.media import probe

    subs = write_srt(tmp_path / "s.srt", [(1, 2, "Alan", "hi")])
    segments = tmp_path / "seg.csv"
    segments.write_text("0,20\n", encoding="utf-8")
    spec = _spec(short_video, subs, segments=segments)
    for height, expected in ((None, 120), (60, 60)):  # default: the source's 120 lines (under 720)
        out = tmp_path / f"out{height}"
        build(BuildConfig(out=out, sessions=[spec], min_duration=1, review_height=height))
        clip = out / read_manifest(out / "manifest.json").segments[0].clip
        assert probe(clip).height == expected
    result = cli(str(short_video), "--subs", str(subs), "--scenario", "couple", "--participants", "Alan,Evelyn",
                 "--segments", str(segments), "--min-duration", "1", "--review-height", "8", "--out", str(tmp_path / "x"))
    assert result.returncode == 2 and "--review-height 8: give a height of at least 16 lines" in result.stderr


def test_extra_is_parsed_and_a_bad_one_refused(tmp_path, short_video):
    # --extra is parsed only when given (parsing loads the run engine, which a plain build never needs).
    subs = write_srt(tmp_path / "s.srt", [(1, 2, "Alan", "hi")])
    common = [str(short_video), "--subs", str(subs), "--scenario", "couple", "--participants", "Alan,Evelyn",
              "--out", str(tmp_path / "out"), "--dry-run"]
    bad = cli(*common, "--extra", "enable_thinking")
    assert bad.returncode == 2 and "expected KEY=VALUE" in bad.stderr
    good = cli(*common, "--extra", "enable_thinking=false")
    assert good.returncode == 0, good.stderr
