"""The media steps against real files made by ffmpeg: probe, cut, frames, scenes, subtitles."""

from __future__ import annotations

import contextlib
import itertools
import subprocess
from pathlib import Path

import pytest
from media_helpers import make_video, write_ass, write_srt, write_vtt

from rescue.media import (
    STEPS,
    Cue,
    MediaError,
    SubtitleError,
    cues_in,
    cut_clip,
    ffmpeg_exe,
    frame_times,
    grab_frames,
    load_cues,
    parse_timestamp,
    probe,
    scene_cuts,
    webvtt,
)
from rescue.media._probe import parse_info


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("media") / "session.mp4", 12.0, scene_at=6.0)


def test_steps_are_registered_once_by_name():
    assert {"cut", "frames", "retime", "scenes"} <= set(STEPS)


def test_probe_reads_duration_and_streams(video):
    info = probe(video)
    assert info.duration == pytest.approx(12.0, abs=0.1)
    assert info.has_video and info.has_audio and (info.width, info.height) == (160, 120)


def test_probe_names_unreadable_and_missing_files(tmp_path):
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video at all")
    with pytest.raises(MediaError, match="junk.mp4: not a readable video"):
        probe(junk)
    with pytest.raises(MediaError, match="no such file"):
        probe(tmp_path / "absent.mp4")


def test_parse_info_without_video_stream():
    text = "Input #0, wav, from 'a.wav':\n  Duration: 00:01:40.00, bitrate: 256 kb/s\n  Stream #0:0: Audio: pcm_s16le, 16000 Hz, mono\n"
    info = parse_info(text, "a.wav")
    assert info.duration == 100.0 and not info.has_video and info.sample_rate == 16000


def _keyframe_times(path) -> list[float]:
    command = [ffmpeg_exe(), "-hide_banner", "-skip_frame", "nokey", "-i", str(path), "-vf", "showinfo", "-an",
               "-f", "null", "-"]
    text = subprocess.run(command, check=True, capture_output=True, text=True).stderr
    return [float(part.split("pts_time:")[1].split()[0]) for part in text.splitlines() if "pts_time:" in part]


def test_cut_is_accurate_seekable_and_resumable(video, tmp_path):
    out = tmp_path / "clips" / "a.mp4"
    assert cut_clip(video, 2.5, 8.5, out) is True
    info = probe(out)
    assert info.video_codec == "h264" and info.audio_codec == "aac"
    assert info.duration == pytest.approx(6.0, abs=0.1)
    keys = _keyframe_times(out)
    assert len(keys) >= 6 and max(b - a for a, b in itertools.pairwise(keys)) <= 1.01
    head = out.read_bytes()[:4096]
    assert head.find(b"moov") < head.find(b"mdat") or b"mdat" not in head  # +faststart: index first
    stamp = out.stat().st_mtime_ns
    assert cut_clip(video, 2.5, 8.5, out) is False and out.stat().st_mtime_ns == stamp
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_cut_scales_down_never_up(video, tmp_path):
    assert probe(cut_clip(video, 0, 2, tmp_path / "a.mp4", width=81) and tmp_path / "a.mp4").width == 80
    assert probe(cut_clip(video, 0, 2, tmp_path / "b.mp4", width=640) and tmp_path / "b.mp4").width == 160


def test_cut_failure_leaves_nothing(tmp_path):
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"nope")
    with pytest.raises(MediaError, match="not a readable video"):
        cut_clip(junk, 0, 1, tmp_path / "out.mp4")
    assert list(tmp_path.iterdir()) == [junk]


def test_a_cut_is_checked_before_it_appears(video, tmp_path):
    from rescue.media._probe import verify_output

    good = tmp_path / "good.mp4"
    cut_clip(video, 0, 4, good)
    assert verify_output(good, duration=4.0, video=True, audio=True).duration == pytest.approx(4.0, abs=0.1)
    cut_short = tmp_path / "short.mp4"
    cut_short.write_bytes(good.read_bytes()[: good.stat().st_size * 2 // 3])  # index first: only packets are gone
    with pytest.raises(MediaError, match="short.mp4: unreadable to its end"):
        verify_output(cut_short, duration=4.0, video=True, audio=True)
    with pytest.raises(MediaError, match=r"holds video \+ audio stream\(s\), video asked"):
        verify_output(good, duration=4.0, video=True, audio=False)
    with pytest.raises(MediaError, match="lasts 4.0"):
        verify_output(good, duration=6.0, video=True, audio=True)


def test_a_dead_writers_leftovers_are_removed_and_its_clip_made_again(video, tmp_path):
    out = tmp_path / "clips" / "a.mp4"
    out.parent.mkdir()
    stale = out.parent / ".a.mp4.999999999.tmp"  # above any pid_max: that writer is gone
    stale.write_bytes(b"half a clip")
    out.write_bytes(b"a clip an older rescue renamed while its killed ffmpeg still wrote the same temporary")
    legacy = out.parent / ".a.partial.mp4"
    legacy.write_bytes(b"that temporary")
    assert cut_clip(video, 0, 2, out) is True
    assert probe(out).duration == pytest.approx(2.0, abs=0.1)
    assert sorted(p.name for p in out.parent.iterdir()) == ["a.mp4"]


def test_kill_children_ends_the_children_of_every_thread():
    import threading

    from rescue import proc

    started = threading.Event()

    def interrupt() -> None:
        while not proc.running_children():
            threading.Event().wait(0.01)
        started.set()
        proc.kill_children()

    threading.Thread(target=interrupt, daemon=True).start()
    result = proc.run(["sleep", "600"])
    assert started.is_set() and result.returncode == -9 and proc.running_children() == []


def test_no_child_starts_once_rescue_is_stopping():
    # A signal kills the children of every thread; a worker thread must not start a new one afterwards.
    from rescue import proc

    with proc.ending_children_on_signals():
        proc.kill_children(stopping=True)
        with pytest.raises(proc.Stopping):
            proc.run(["true"])
    assert proc.run(["true"]).returncode == 0  # leaving the block (the build ended) lifts it


@pytest.mark.slow
def test_clip_cutter_cuts_in_order_one_encode_at_a_time(video, tmp_path):
    import threading

    from rescue import proc
    from rescue.media._cut import ClipCutter

    windows = [(0.0, 3.0), (3.0, 7.5), (7.5, 12.0)]
    encodes: list[int] = []
    done = threading.Event()

    def watch() -> None:  # how many encodes run at once, seen from the process table
        while not done.is_set():
            commands = []
            for pid in proc.running_children():
                with contextlib.suppress(OSError):  # ended meanwhile
                    commands.append(Path(f"/proc/{pid}/cmdline").read_bytes())
            encodes.append(sum(b"libx264" in c for c in commands))
            done.wait(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ClipCutter() as cutter:
            futures = [cutter.submit(video, a, b, tmp_path / f"c{i}.mp4") for i, (a, b) in enumerate(windows)]
            assert [f.result() for f in futures] == [True, True, True]
    finally:
        done.set()
        watcher.join()
    assert max(encodes) <= 1
    for i, (a, b) in enumerate(windows):
        assert probe(tmp_path / f"c{i}.mp4").duration == pytest.approx(b - a, abs=0.15)
    with ClipCutter() as cutter:  # a rerun cuts nothing
        assert [cutter.submit(video, a, b, tmp_path / f"c{i}.mp4").result() for i, (a, b) in enumerate(windows)] == \
            [False, False, False]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c0.mp4", "c1.mp4", "c2.mp4"]


@pytest.mark.slow
def test_clip_cutter_stops_at_a_failed_cut(video, tmp_path):
    from rescue.media._cut import ClipCutter

    with pytest.raises(MediaError, match="cannot cut 20.000-22.000s of a 12.000 s video"), ClipCutter() as cutter:
        futures = [cutter.submit(video, a, b, tmp_path / f"c{i}.mp4") for i, (a, b) in
                   enumerate([(0.0, 2.0), (20.0, 22.0), (2.0, 4.0), (4.0, 6.0), (6.0, 8.0)])]
        for future in futures:
            future.result()
    assert futures[0].result() is True
    assert all(f.done() for f in futures)  # leaving the block cancelled the rest or waited for it
    made = sorted(p.name for p in tmp_path.iterdir())
    assert made[0] == "c0.mp4" and "c1.mp4" not in made and not [n for n in made if n.startswith(".")]


def test_one_ffmpeg_command_builder_per_operation():
    # Clips (H.264 cuts) and frames (JPEG grabs) are built in one place each, for the build and the video mode.
    import rescue

    root = Path(rescue.__file__).parent
    sources = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in root.rglob("*.py")
               if "testing" not in p.parts}
    assert [name for name, text in sources.items() if '"libx264"' in text] == ["media/_cut.py"]
    assert sorted(name for name, text in sources.items() if '"image2' in text) == ["media/_frames.py"]


def test_frames_inside_span_rate_cap_and_size(video):
    assert frame_times(2.0, 6.0, 1.0, 8) == [2.5, 3.5, 4.5, 5.5]
    assert len(frame_times(0, 100, 2.0, 5)) == 5
    frames = grab_frames(video, 2.0, 6.0, rate=1.0, cap=3, width=64)
    assert [f.time for f in frames] == frame_times(2.0, 6.0, 1.0, 3)
    assert all(f.jpeg.startswith(b"\xff\xd8") and f.jpeg.endswith(b"\xff\xd9") for f in frames)
    assert b"\x00\x40" in frames[0].jpeg[:400]  # SOF0 width 64


def test_scene_cut_found(video):
    cuts = scene_cuts(video)
    assert any(abs(t - 6.0) < 0.25 for t in cuts)


def test_timestamps_follow_the_paper_rule():
    assert parse_timestamp("00:01:40,000") == 100.0
    assert parse_timestamp("01:02:03.500") == 3723.5
    assert parse_timestamp("95.25") == 95.25
    for bad in ("1:75:00", "abc", "", "1:2:3:4"):
        with pytest.raises(ValueError):
            parse_timestamp(bad)


LINES = [(1.0, 2.5, "Alan", "I just wanna be better."), (100.0, 103.25, "Therapist", "Why now?")]


@pytest.mark.parametrize("writer", [write_srt, write_vtt, write_ass])
def test_subtitle_formats_give_seconds_and_speakers(tmp_path, writer):
    path = writer(tmp_path / f"s.{writer.__name__[6:]}", LINES)
    cues = load_cues(path)
    assert [(c.start, c.end, c.speakers, c.text) for c in cues] == [
        (1.0, 2.5, ("Alan",), "I just wanna be better."), (100.0, 103.25, ("Therapist",), "Why now?")]


def test_subtitle_errors_name_the_file(tmp_path):
    with pytest.raises(SubtitleError, match="unknown subtitle format"):
        load_cues(tmp_path / "s.txt")
    empty = tmp_path / "e.srt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(SubtitleError, match="e.srt: holds no subtitle cues"):
        load_cues(empty)


def test_retimed_webvtt():
    cues = [Cue(1, 10.0, 12.0, "a", ("Alan",)), Cue(2, 130.5, 131.0, "b", ("Evelyn",)), Cue(3, 200.0, 201.0, "c")]
    inside = cues_in(cues, 120.0, 180.0)
    assert [(c.index, c.start, c.end) for c in inside] == [(1, 10.5, 11.0)]
    assert "00:00:10.500 --> 00:00:11.000\n<v Evelyn>b" in webvtt(inside)


def _mean_volume(path, start: float, end: float) -> float:
    command = [ffmpeg_exe(), "-hide_banner", "-ss", str(start), "-t", str(end - start), "-i", str(path), "-vn",
               "-af", "volumedetect", "-f", "null", "-"]
    text = subprocess.run(command, check=True, capture_output=True, text=True).stderr
    return float(text.split("mean_volume:")[1].split("dB")[0])


def test_espeak_speech_sits_inside_its_lines(tmp_path):
    from media_helpers import espeak_available

    if not espeak_available():
        pytest.skip("espeak-ng is not installed (scripts/test.sh installs it where it can)")
    lines = [(1.0, 4.0, "Alan", "I just want to be better."), (6.0, 9.0, "Therapist", "What would better look like?")]
    video = make_video(tmp_path / "spoken.mp4", 10.0, speech=lines)
    assert _mean_volume(video, 1.2, 2.5) > _mean_volume(video, 4.6, 5.8) + 20  # speech vs. the silence between


@pytest.mark.slow
def test_review_clips_are_scaled_to_the_review_height_with_a_capped_rate(tmp_path):
    # Issue #20, item 6: review clips were re-encoded at full resolution (105 MB for 5 min of 640x360).
    from rescue.media._cut import REVIEW_CRF, cut_args, review_height

    assert review_height(1080) == 720 and review_height(360) == 360 and review_height(1080, 480) == 480
    assert review_height(None) == 720
    args = cut_args("in.mp4", 0, 10, "out.mp4", height=1080, crf=REVIEW_CRF)
    assert args[args.index("-maxrate") + 1] == "2000k" and args[args.index("-crf") + 1] == "28"
    assert "-maxrate" not in cut_args("in.mp4", 0, 10, "out.mp4")  # the model's copies and the benchmark's as before
    source = make_video(tmp_path / "wide.mp4", 8.0, size="640x360", rate=25)
    full, small = tmp_path / "full.mp4", tmp_path / "small.mp4"
    cut_clip(source, 0, 8, full)
    cut_clip(source, 0, 8, small, height=240, crf=REVIEW_CRF)
    info = probe(small)
    assert (info.width, info.height) == (426, 240)
    assert small.stat().st_size < full.stat().st_size / 2
    cut_clip(source, 0, 8, tmp_path / "never_up.mp4", height=720, crf=REVIEW_CRF)
    assert probe(tmp_path / "never_up.mp4").height == 360
