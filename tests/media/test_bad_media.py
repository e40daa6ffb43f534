"""Bad media, subtitle and CSV files for ``rescue build`` (issue #22.9): every media step has a time bound
proportional to the media's duration; bad subtitles and CSVs are exit 2 with FILE:LINE; manifest errors name
the manifest file and line; ``rescue build`` has ``--retry-after-cap`` and ``--max-answer-bytes`` as ``rescue
run``. Real files and real ffmpeg; the model is the real scripted server.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _cli import invoke_main
from media_helpers import make_video

from rescue import proc
from rescue.media import MediaError
from rescue.media._ffmpeg import ffmpeg_info, run_ffmpeg, time_limit
from rescue.media._subtitles import SubtitleError, load_cues

GOOD_SRT = "1\n00:00:01,000 --> 00:00:03,000\nAlan: Hello there.\n\n2\n00:00:04,000 --> 00:00:06,000\nEvelyn: Hi.\n"


@pytest.fixture(scope="module")
def short_video(tmp_path_factory) -> Path:
    return make_video(tmp_path_factory.mktemp("bad-media") / "clip.mp4", 20.0)


def _build(tmp_path, video, subs, *extra):
    return invoke_main(["build", str(video), "--subs", str(subs), "--scenario", "couple", "--participants",
                        "Alan,Evelyn", "--out", str(tmp_path / "out"), "--min-duration", "1", *extra])


# --- subtitles --------------------------------------------------------------------------------------------------

BAD_SUBTITLES = {
    # The cases first, then variants the fix was not written against.
    "negative_srt_start.srt": (GOOD_SRT.replace("00:00:04,000 -->", "-00:00:01,000 -->"), 6, "negative time"),
    "nul_in_text.srt": (GOOD_SRT.replace("Hello", "Hel\x00lo"), 3, "control character"),
    "negative_srt_end.srt": (GOOD_SRT.replace("--> 00:00:03,000", "--> -00:00:03,000"), 2, "negative time"),
    "negative_vtt.vtt": ("WEBVTT\n\n-00:00:01.000 --> 00:00:02.000\n<v Alan>Hi\n", 3, "negative time"),
    "negative_ass.ass": ("[Script Info]\nScriptType: v4.00+\n\n[Events]\nFormat: Layer, Start, End, Style, Name, "
                         "MarginL, MarginR, MarginV, Effect, Text\nDialogue: 0,-0:00:01.00,0:00:02.00,Default,Alan,"
                         "0,0,0,,Hi\n", 6, "negative time"),
    "escape_char.srt": (GOOD_SRT.replace("Hi.", "Hi\x1b[31m."), 7, "control character"),
    "binary.srt": ("\x7fELF\x02\x01\x01\x00" * 4 + "\n", 1, "control character"),
}


@pytest.mark.parametrize("name", list(BAD_SUBTITLES))
def test_bad_subtitles_are_an_error_naming_file_and_line(tmp_path, name):
    text, line, what = BAD_SUBTITLES[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SubtitleError) as caught:
        load_cues(path)
    assert f"{path}:{line}: " in str(caught.value) and what in str(caught.value), str(caught.value)


def test_a_negative_time_is_never_read_as_positive_and_the_build_exits_2(tmp_path, short_video):
    subs = tmp_path / "s.srt"
    subs.write_text(BAD_SUBTITLES["negative_srt_start.srt"][0], encoding="utf-8")
    result = _build(tmp_path, short_video, subs)
    assert result.exit_code == 2 and f"{subs}:6: negative time" in result.output, result.output
    assert not (tmp_path / "out").exists()


# --- CSV files ------------------------------------------------------------------------------------------------------

def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


BAD_CSVS = {
    "cp1252": ("start,end,name\n0,10,s\xe9ance\n".encode("cp1252"), 2, "not UTF-8"),
    "binary": (b"start,end\n\x00\x01\x02\x03\xff\xfe" * 20, 2, "NUL byte"),
    "latin1_header": ("d\xe9but,fin\n0,10\n".encode("latin-1"), 1, "not UTF-8"),
    "utf16": ("start,end\n0,10\n".encode("utf-16"), 1, "NUL byte"),
}


@pytest.mark.parametrize("kind", list(BAD_CSVS))
def test_a_bad_segments_csv_is_an_error_naming_file_and_line(tmp_path, short_video, kind):
    data, line, what = BAD_CSVS[kind]
    segments = _write(tmp_path / "segments.csv", data)
    subs = tmp_path / "s.srt"
    subs.write_text(GOOD_SRT, encoding="utf-8")
    result = _build(tmp_path, short_video, subs, "--segments", str(segments))
    assert result.exit_code == 2, result.output
    assert f"{segments}:{line}: " in result.output and what in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("kind", list(BAD_CSVS))
def test_a_bad_manifest_csv_is_an_error_naming_file_and_line(tmp_path, kind):
    data, line, what = BAD_CSVS[kind]
    manifest = _write(tmp_path / "sessions.csv", data)
    result = invoke_main(["build", "--manifest", str(manifest), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert f"{manifest}:{line}: " in result.output and what in result.output and "Traceback" not in result.output


def test_manifest_errors_name_the_manifest_line_that_named_the_file(tmp_path, short_video):
    subs = tmp_path / "s.srt"
    subs.write_text(GOOD_SRT, encoding="utf-8")
    bad_subs = tmp_path / "bad.srt"
    bad_subs.write_text(BAD_SUBTITLES["nul_in_text.srt"][0], encoding="utf-8")
    manifest = tmp_path / "sessions.csv"
    manifest.write_text("video,subtitles,scenario,participants,group\n"
                        f"{short_video},{subs},couple,Alan;Evelyn,g1\n"
                        f"missing.mp4,{subs},couple,Alan;Evelyn,g2\n"
                        f"{short_video},{bad_subs},couple,Alan;Evelyn,g3\n", encoding="utf-8")
    result = invoke_main(["build", "--manifest", str(manifest), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert f"{manifest}:3: " in result.output and "missing.mp4" in result.output  # the line that named it
    assert f"{manifest}:4: {bad_subs}:3: " in result.output


# --- a time bound on every media step -------------------------------------------------------------------------------


def test_the_time_bound_grows_with_the_media(monkeypatch):
    monkeypatch.delenv("RESCUE_MEDIA_TIME_BASE", raising=False)
    monkeypatch.delenv("RESCUE_MEDIA_TIME_PER_SECOND", raising=False)
    assert time_limit(None) < time_limit(10) < time_limit(100)
    assert time_limit(100) - time_limit(10) == pytest.approx(9 * (time_limit(20) - time_limit(10)))


@pytest.fixture
def hanging_input(tmp_path) -> Path:
    """A named pipe nobody writes: ffmpeg opening it waits for ever, as on a video it cannot get through."""
    fifo = tmp_path / "stuck.mp4"
    os.mkfifo(fifo)
    return fifo


def test_a_probe_that_hangs_is_stopped_at_its_bound(monkeypatch, hanging_input):
    monkeypatch.setenv("RESCUE_MEDIA_TIME_BASE", "1")
    with pytest.raises(MediaError) as caught:
        ffmpeg_info(hanging_input)  # what probe() runs once it knows the path is a file
    assert "probe took longer than 1 s" in str(caught.value)
    assert proc.running_children() == []  # ffmpeg was killed, not left behind


@pytest.mark.parametrize("seconds", [2.0, 4.0])
def test_a_media_step_is_bounded_in_proportion_to_the_media(monkeypatch, hanging_input, tmp_path, seconds):
    monkeypatch.setenv("RESCUE_MEDIA_TIME_BASE", "0")
    monkeypatch.setenv("RESCUE_MEDIA_TIME_PER_SECOND", "0.25")
    with pytest.raises(MediaError) as caught:
        run_ffmpeg(["-y", "-i", hanging_input, "-t", str(seconds), tmp_path / "out.mp4"], step="cut",
                   subject=hanging_input, duration=seconds)
    assert f"cut took longer than {seconds * 0.25:.0f} s, the limit for {seconds:.1f} s of media" in str(caught.value)
    assert proc.running_children() == [] and not (tmp_path / "out.mp4").exists()


# --- rescue build has the request options its messages name ---------------------------------------------------------


@pytest.mark.slow
def test_build_has_retry_after_cap_and_max_answer_bytes(tmp_path, short_video, monkeypatch):
    from rescue.testing.openai_server import Reply, serve

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    subs = tmp_path / "s.srt"
    subs.write_text(GOOD_SRT, encoding="utf-8")
    with serve(Reply.huge(5000)) as server:
        result = _build(tmp_path, short_video, subs, "--model", "m", "--base-url", server.base_url,
                        "--max-answer-bytes", "1000", "--max-retries", "0", "--video-input", "none")
    assert result.exit_code == 3, result.output
    assert "answer_too_large" in (tmp_path / "out" / "build.log").read_text() or "max-answer-bytes" in result.output
    with serve(Reply.retry_after("3600")) as server:
        result = _build(tmp_path, short_video, subs, "--model", "m2", "--base-url", server.base_url,
                        "--retry-after-cap", "0.05", "--max-retries", "3", "--video-input", "none")
    assert result.exit_code == 3, result.output
    assert "--retry-after-cap" in result.output or "retry_after_cap" in (tmp_path / "out" / "build.log").read_text()
