"""``rescue run --mode video`` on synthetic media through the scripted server: every request's media is
read back (each frame's colour encodes its frame index) and checked against the instance's hidden row."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rescue.errors import RescueError
from video_media import (
    FPS,
    audible_at_or_after,
    clip_audio,
    clip_indices,
    data_url_bytes,
    jpeg_index,
    make_indexed_video,
)

from rescue.data.loading import load_samples
from rescue.engine.dryrun import estimate_run
from rescue.engine.runner import RunConfig, rescore, run
from rescue.tasks import get_task
from rescue.tasks.base import RenderOptions
from rescue.testing.openai_server import Reply, serve
from rescue.video import VideoError, VideoOptions, find_media, media_window

TASKS = ("itp", "rpp", "stp", "ssp", "er", "vp")
IMAGE_TOKENS, VIDEO_TOKENS = 70, 900  # what the scripted server reports per image and per clip
# Which row each task shows last: the instance's own (ITP's decision row, ER/VP's current turn) or the one before.
SHOWS_OWN_ROW = {"itp": True, "er": True, "vp": True, "rpp": False, "stp": False, "ssp": False}


@pytest.fixture(scope="module")
def samples():
    return load_samples(None)[:2]


@pytest.fixture(scope="module")
def media_root(tmp_path_factory, samples):
    """One indexed video per demo sample, where its source_file says (``<group>/<stem>.mp4``)."""
    root = tmp_path_factory.mktemp("media")
    for sample in samples:
        stem = Path(sample.source_file).with_suffix(".mp4")
        # 44.1 kHz (a real recording's rate) and a tone throughout: any sound past a clip's limit is heard.
        make_indexed_video(root / stem.parent.name / stem.name, sample.rows[-1].end_time + 2, sample_rate=44100)
    return root


def _limit(sample, task: str, row_index: int) -> float:
    """Independent of rescue.video: the start of the first row the task hides (inf when none)."""
    first_hidden = row_index + 1 if SHOWS_OWN_ROW[task] else row_index
    later = [r.start_time for r in sample.rows if r.row_index >= first_hidden]
    return min(later) if later else float("inf")


def _prompt_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Recorder:
    """A perfect model that also records, per request, the instance asked about and the media it carried."""

    def __init__(self, samples, tasks, mode: str):
        self.answers: dict[str, tuple[str, object, str]] = {}
        self.seen: list[tuple[str, object, list[dict]]] = []
        self.lock = threading.Lock()
        for name in tasks:
            task = get_task(name)
            for instance in task.build(samples):
                text = task.render([instance], RenderOptions(mode=mode))[0]["content"]
                answer = task.format_answer([instance], {instance.instance_id: _gold(task, instance)})
                self.answers[_prompt_key(text)] = (name, instance, answer)

    def __call__(self, body):
        content = body["messages"][-1]["content"]
        assert isinstance(content, list), "a video-mode request carries content parts"
        name, instance, answer = self.answers[_prompt_key(content[-1]["text"])]
        with self.lock:
            self.seen.append((name, instance, content[:-1]))
        # Usage as a VLM server reports it: media tokens inside prompt_tokens, and broken out in the details.
        images = sum(p["type"] == "image_url" for p in content)
        videos = sum(p["type"] == "video_url" for p in content)
        media = {"image_tokens": IMAGE_TOKENS * images, "video_tokens": VIDEO_TOKENS * videos}
        return Reply(content=answer, usage={"prompt_tokens": 1000 + sum(media.values()), "completion_tokens": 20,
                                            "prompt_tokens_details": {"cached_tokens": 0, **media}})


def _gold(task, instance):
    return [instance.gold] if task.name in ("rpp", "stp", "ssp") else instance.gold


def _config(tmp_path, server, media_root, **overrides) -> RunConfig:
    video = {"media_root": str(media_root), "frame_rate": 0.5, "max_frames": 6}
    video.update(overrides.pop("video", {}))
    options = {"out": str(tmp_path / "run"), "models": ["vlm"], "tasks": list(TASKS), "base_url": server.base_url,
               "quiet": True, "bertscore": False, "max_retries": 1, "timeout": 20.0, "mode": "video", "video": video,
               "limit_samples": 2, "sample_choice": "first", "concurrency": 4}  # the samples the media fixture made
    options.update(overrides)
    return RunConfig(**options)


def _check_frames(seen):
    checked = 0
    for name, instance, parts in seen:
        limit = _limit(instance.sample, name, instance.row_index)
        images = [data_url_bytes(p["image_url"]["url"]) for p in parts if p["type"] == "image_url"]
        indices = []
        for mime, data in images:
            assert mime == "image/jpeg"
            indices.append(jpeg_index(data))
        # Each frame's whole display interval lies before the first hidden row starts; frames in time order.
        assert all((index + 1) / FPS <= limit + 1e-9 for index in indices), (name, instance.instance_id, limit)
        assert indices == sorted(indices) and len(indices) <= 6
        checked += len(indices)
    return checked


@pytest.mark.slow
def test_every_frame_of_every_request_ends_before_the_hidden_row(tmp_path, samples, media_root):
    recorder = Recorder(samples, TASKS, "video")
    prices = tmp_path / "prices.toml"
    prices.write_text('[vlm]\ninput = 1.0\noutput = 2.0\n')
    with serve(recorder) as server:
        config = _config(tmp_path, server, media_root, prices=str(prices))
        outcome = run(config)
    expected = sum(len(get_task(t).build(samples)) for t in TASKS)
    assert len(recorder.seen) == expected  # one instance per request
    assert _check_frames(recorder.seen) > 0
    # The dry run counts exactly the requests and images the run sent.
    estimate = {t.task: t for t in estimate_run(config).models[0].tasks}
    for task in TASKS:
        sent = [parts for name, _, parts in recorder.seen if name == task]
        assert estimate[task].requests == len(sent)
        assert estimate[task].images == sum(p["type"] == "image_url" for parts in sent for p in parts)
        assert estimate[task].media_tokens > 0
        # The image tokens the server reported reach the usage table and the cost.
        images = sum(p["type"] == "image_url" for parts in sent for p in parts)
        usage = outcome.results["models"]["vlm"]["usage"][task]
        assert usage["image_tokens"] == IMAGE_TOKENS * images and usage["video_tokens"] == 0
        assert usage["input_tokens"] == 1000 * len(sent) + usage["image_tokens"]
    cost = outcome.results["models"]["vlm"]["cost"]
    assert cost["total"] == pytest.approx(sum(cost["tasks"].values()))
    itp_usage = outcome.results["models"]["vlm"]["usage"]["itp"]
    # The test's prices: $1 per million input tokens, $2 per million output tokens.
    expected = (itp_usage["input_tokens"] * 1.0 + itp_usage["output_tokens"] * 2.0) / 1e6
    assert cost["tasks"]["itp"] == pytest.approx(expected)
    # Every request with earlier rows shown carries frames; all tasks are scored from real answers.
    assert all(any(p["type"] == "image_url" for p in parts) for name, i, parts in recorder.seen
               if name != "rpp" or i.row_index > 1)
    results = outcome.results
    assert results["config"]["mode"] == "video" and results["config"]["video"]["video_input"] == "frames"
    for task in ("itp", "rpp", "stp", "ssp"):
        metrics = results["models"]["vlm"][task]["all"]
        assert metrics["failures"] == 0 and metrics["instances"] > 0
    assert results["models"]["vlm"]["itp"]["all"]["accuracy"] == 1.0


@pytest.mark.slow
def test_frames_come_from_the_shown_rows_only(tmp_path, samples, media_root):
    recorder = Recorder(samples[:1], ("itp", "stp"), "video")
    with serve(recorder) as server:
        run(_config(tmp_path, server, media_root, tasks=["itp", "stp"], limit_samples=1, sample_choice="first",
                    video={"frame_rate": 1, "max_frames": 40}))
    for name, instance, parts in recorder.seen:
        task = get_task(name)
        k = task.default_context_size
        first = max(1, instance.row_index - k)
        last = instance.row_index if SHOWS_OWN_ROW[name] else instance.row_index - 1
        spans = [(r.start_time, r.end_time) for r in instance.sample.rows if first <= r.row_index <= last]
        for part in parts:
            if part["type"] == "image_url":
                index = jpeg_index(data_url_bytes(part["image_url"]["url"])[1])
                start = index / FPS
                assert any(a - 1e-9 <= start and start + 1 / FPS <= b + 1e-9 for a, b in spans), (name, index)


@pytest.mark.slow
def test_clip_input_cuts_the_window_and_nothing_after_it(tmp_path, samples, media_root):
    recorder = Recorder(samples[:1], ("itp", "ssp"), "video")
    with serve(recorder) as server:
        outcome = run(_config(tmp_path, server, media_root, tasks=["itp", "ssp"], limit_samples=1, sample_choice="first",
                              video={"video_input": "clip"}))
    clips = 0
    for name, instance, parts in recorder.seen:
        videos = [p for p in parts if p["type"] == "video_url"]
        assert not any(p["type"] == "image_url" for p in parts)
        for part in videos:
            mime, data = data_url_bytes(part["video_url"]["url"])
            assert mime == "video/mp4"
            indices = clip_indices(data)
            limit = _limit(instance.sample, name, instance.row_index)
            assert indices and (max(indices) + 1) / FPS <= limit + 1e-9
            assert indices == sorted(indices)
            # The clip starts a quarter frame before its first frame; its sound ends before the limit too,
            # whether or not the player honours the MP4 edit list (AAC priming, issue 24 item 4).
            limit_in_clip = limit - max(0.0, (min(indices) - 0.25) / FPS)
            for ignore in (False, True):
                sound = clip_audio(data, ignore_editlist=ignore)
                assert any(abs(value) > 0.05 for value in sound), "the clip has its sound"
                assert audible_at_or_after(sound, limit_in_clip) == 0, (instance.instance_id, ignore)
            clips += 1
    assert clips > 0
    usage = outcome.results["models"]["vlm"]["usage"]
    assert usage["itp"]["video_tokens"] + usage["ssp"]["video_tokens"] == VIDEO_TOKENS * clips


@pytest.mark.parametrize("sound", ["from_the_limit", "throughout"])
def test_a_clips_sound_ends_before_the_hidden_row_in_any_player(tmp_path, sound):
    """Issue 24 item 4: at 25 fps a clip ends a quarter frame (441 samples at 44.1 kHz) before the limit, and a
    player ignoring the MP4 edit list plays AAC 1024 samples late: 583 samples were heard past the limit."""
    from rescue.media import ffmpeg_exe
    from rescue.video._store import MediaStore, SourceInfo

    fps, first, stop = 25, 10, 60
    limit = stop / fps  # the first hidden row starts with frame `stop`
    tone = "0.5*sin(2*PI*1000*t)"
    level = f"if(gte(t\\,{limit})\\,{tone}\\,0)" if sound == "from_the_limit" else tone
    source = tmp_path / "source.mkv"  # PCM: the source's own sound starts exactly at the limit
    subprocess.run([ffmpeg_exe(), "-v", "error", "-y", "-f", "lavfi", "-i", f"color=c=gray:s=64x48:r={fps}:d=4",
                    "-f", "lavfi", "-i", f"aevalsrc={level}:s=44100:d=4", "-c:v", "libx264", "-preset", "ultrafast",
                    "-c:a", "pcm_s16le", "-shortest", str(source)], check=True)
    info = SourceInfo("d" * 64, duration=4.0, fps=fps, width=64, height=48, has_audio=True)
    clip = MediaStore(tmp_path / "media", VideoOptions()).make_clip(source, info, first, stop)
    limit_in_clip = limit - (first - 0.25) / fps
    for ignore in (False, True):
        samples = clip_audio(clip.read_bytes(), ignore_editlist=ignore)
        assert audible_at_or_after(samples, limit_in_clip) == 0, ignore
        if sound == "from_the_limit":
            assert audible_at_or_after(samples, 0.0) == 0, ignore  # nothing of the hidden row's sound
        else:
            assert audible_at_or_after(samples, limit_in_clip - 0.1) > 0, ignore  # sound up to near the limit


@pytest.mark.slow
def test_moving_the_media_folder_keeps_both_caches(tmp_path, samples, media_root):
    moved = tmp_path / "elsewhere"
    shutil.copytree(media_root, moved)
    recorder = Recorder(samples, ("itp",), "video")
    with serve(recorder) as server:
        run(_config(tmp_path, server, moved, tasks=["itp"]))
        first = len(recorder.seen)
        shutil.move(str(moved), str(tmp_path / "renamed"))
        outcome = run(_config(tmp_path, server, tmp_path / "renamed", tasks=["itp"]))
        assert len(recorder.seen) == first  # every answer came from the response cache
    assert outcome.results["models"]["vlm"]["itp"]["all"]["accuracy"] == 1.0
    log = [json.loads(line) for line in (tmp_path / "run" / "run.log").read_text().splitlines()]
    media = [e for e in log if e.get("event") == "media"]
    assert media[0]["made"] > 0 and media[-1]["made"] == 0 and media[-1]["reused"] == media[0]["files"]
    assert media[0]["files"] < media[0]["frames"]  # overlapping windows share their frames
    # With the server gone, rescore rebuilds every request from the media where it now is.
    shutil.move(str(tmp_path / "renamed"), str(tmp_path / "third"))
    with pytest.raises(VideoError, match="no such folder"):
        rescore(tmp_path / "run")
    again = rescore(tmp_path / "run", media_root=str(tmp_path / "third"))
    assert again.results["models"]["vlm"]["itp"] == outcome.results["models"]["vlm"]["itp"]
    assert again.results["models"]["vlm"]["usage"]["itp"]["cache_hits"] == first


def test_video_cues_variant_adds_the_annotated_cues(samples):
    itp = get_task("itp")
    instance = itp.build(samples)[3]
    plain = itp.render([instance], RenderOptions(mode="video"))[0]["content"]
    cues = itp.render([instance], RenderOptions(mode="video+cues"))[0]["content"]
    assert "tone_of_voice" not in plain and "facial_expressions" not in plain
    assert "tone_of_voice" in cues and "facial_expressions" in cues
    assert "Mode: video." in plain and "Mode: video+cues." in cues


@pytest.mark.parametrize("data", ["demo_samples", "real_samples"])
@pytest.mark.parametrize("task_name", TASKS)
def test_windows_stop_at_the_first_hidden_row(request, data, task_name):
    task = get_task(task_name)
    for instance in task.build(request.getfixturevalue(data)):
        for k in (None, 0, 1, -1):
            window = media_window(task, instance, k)
            limit = _limit(instance.sample, task_name, instance.row_index)
            assert window.limit == limit
            assert all(span.end <= limit and span.start < span.end for span in window.spans)


@pytest.mark.slow
def test_media_found_by_source_file_id_and_build_manifest(tmp_path, samples, media_root):
    by_source = find_media(samples, media_root, "source_file")
    assert all(path.is_file() for path in by_source.values()) and len(by_source) == 2
    ids = tmp_path / "ids"
    for sample in samples:
        (ids / sample.sample_id).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(by_source[sample.sample_id], ids / f"{sample.sample_id}.mkv")
    assert set(find_media(samples, ids, "id")) == {s.sample_id for s in samples}
    built = tmp_path / "built"
    (built / "clips").mkdir(parents=True)
    segments = []
    for n, sample in enumerate(samples):
        shutil.copy(by_source[sample.sample_id], built / "clips" / f"seg{n}.mp4")
        segments.append({"sample_id": sample.sample_id, "clip": f"clips/seg{n}.mp4", "rows": []})
    (built / "manifest.json").write_text(json.dumps({"version": 1, "segments": segments}))
    found = find_media(samples, built)
    assert found[samples[1].sample_id] == built / "clips" / "seg1.mp4"


@pytest.mark.slow
def test_samples_without_media_are_listed_before_anything_is_written(tmp_path, samples, media_root):
    partial = tmp_path / "partial"
    shutil.copytree(media_root, partial)
    missing = Path(samples[1].source_file).with_suffix(".mp4")
    (partial / missing.parent.name / missing.name).unlink()
    with pytest.raises(VideoError) as error:
        find_media(samples, partial, "source_file")
    assert samples[1].sample_id in str(error.value) and samples[0].sample_id not in str(error.value)
    assert "1 of 2" in str(error.value)
    with serve(Reply.text("{}")) as server:
        with pytest.raises(VideoError):
            run(_config(tmp_path, server, partial))
        assert server.request_count == 0
    assert not (tmp_path / "run").exists()


def test_bad_video_options_are_rejected(tmp_path):
    with pytest.raises(VideoError, match="--media-root"):
        RunConfig(out=str(tmp_path), mode="video")
    with pytest.raises(VideoError, match="one instance per request"):
        RunConfig(out=str(tmp_path), mode="video", video={"media_root": str(tmp_path)}, batch_size="4")


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"), "OPENAI_API_KEY": "sk-test"}
    return subprocess.run([sys.executable, "-m", "rescue", *args], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


@pytest.mark.slow
def test_cli_dry_run_and_missing_media(tmp_path, samples, media_root):
    out = tmp_path / "run"
    common = ["run", "--out", str(out), "--model", "openai/gpt-4o-mini", "--mode", "video", "--limit-samples", "2",
              "--sample-choice", "first", "--tasks", "itp,rpp"]
    result = _cli(*common, "--media-root", str(media_root), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "Dry run, video mode, 2 samples" in result.stdout and "images" in result.stdout
    assert not out.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _cli(*common, "--media-root", str(empty), "--media-match", "id")
    assert result.returncode == 2
    assert "no media for 2 of 2 sample(s)" in result.stderr and samples[0].sample_id in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()


@pytest.mark.slow
def test_report_pairs_a_models_video_and_dialogue_runs(tmp_path, samples, media_root):
    from rescue.report.build import ReportOptions, build_report

    recorder = Recorder(samples, ("itp",), "video")
    with serve(recorder) as server:
        run(_config(tmp_path, server, media_root, tasks=["itp"], out=str(tmp_path / "video")))
    # The same model without the video always answers "no": half of the balanced ITP instances are wrong.
    no = get_task("itp")
    with serve(lambda body: Reply.text(_all_no(no, body))) as server:
        run(RunConfig(out=str(tmp_path / "dialogue"), models=["vlm"], tasks=["itp"], base_url=server.base_url,
                      quiet=True, bertscore=False, limit_samples=2, sample_choice="first", max_retries=1))
    report = build_report([tmp_path / "video", tmp_path / "dialogue"], tmp_path / "report",
                          # No figures and few resamples: nothing here reads them, and they were most of its CPU.
                          options=ReportOptions(n_resamples=20, html=False, figures=False))
    assert tmp_path / "report" / "video_vs_text.md" in report.files
    lines = (tmp_path / "report" / "video_vs_text.csv").read_text().splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","))) for line in lines[1:]]
    accuracy = next(r for r in rows if r["scope"] == "all" and r["metric"] == "ITP Acc")
    assert accuracy["video"] == "vlm [video]" and accuracy["text"] == "vlm [dialogue]"
    assert float(accuracy["video_value"]) == 1.0 and float(accuracy["text_value"]) == 0.5
    assert float(accuracy["gain"]) == 0.5 and int(accuracy["instances"]) == len(no.build(samples))
    assert int(accuracy["mcnemar_video_only"]) > 0 and int(accuracy["mcnemar_text_only"]) == 0
    assert "vlm [video]" in (tmp_path / "report" / "leaderboard.md").read_text()


def _all_no(task, body) -> str:
    import re

    ids = re.findall(r'"id":"([^"]+)"', body["messages"][-1]["content"].split("Items:")[-1])
    return json.dumps({"predictions": [{"id": i, "should_speak": "no"} for i in ids]})


@pytest.mark.slow
def test_unreadable_or_too_short_media_is_listed_before_anything_is_written(tmp_path, samples, media_root):
    bad = tmp_path / "bad"
    shutil.copytree(media_root, bad)
    first, second = (bad / Path(s.source_file).parent.name / Path(s.source_file).with_suffix(".mp4").name
                     for s in samples)
    first.write_bytes(b"not a video at all")
    make_indexed_video(second, 10, audio=False)
    with serve(Reply.text("{}")) as server:
        with pytest.raises(VideoError) as error:
            run(_config(tmp_path, server, bad))
        assert server.request_count == 0
    message = str(error.value)
    assert samples[0].sample_id in message and "not a readable video" in message
    assert samples[1].sample_id in message and "lasts 10.00 s" in message
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("manifest, problem", [
    ("{not json", "not JSON"),
    ('{"version": 1}', "field segments"),
    ('{"segments": [{"clip": "a.mp4"}]}', "field sample_id"),
    ('{"segments": [{"sample_id": "x"}]}', "field clip"),
])
def test_a_broken_build_manifest_is_named(tmp_path, samples, manifest, problem):
    (tmp_path / "manifest.json").write_text(manifest)
    with pytest.raises(VideoError, match=problem) as error:
        find_media(samples, tmp_path)
    assert str(tmp_path / "manifest.json") in str(error.value)


@pytest.mark.parametrize("clip", ["../outside.mp4", "clips/../../outside.mp4", "{outside}", "clips\\..\\x.mp4",
                                  "clips/\x00.mp4", "clips/a\nb.mp4"])
def test_a_build_manifest_clip_outside_the_media_root_is_refused(tmp_path, samples, clip):
    # A manifest names each clip relative to its folder (issue 33 item 5): a path out of it would have a file
    # from elsewhere on the machine sent to the model as the sample's video.
    outside = tmp_path / "outside.mp4"
    outside.write_bytes(b"a file outside the media root")
    root = tmp_path / "built"
    (root / "clips").mkdir(parents=True)
    segments = [{"sample_id": s.sample_id, "clip": clip.format(outside=outside), "rows": []} for s in samples]
    (root / "manifest.json").write_text(json.dumps({"version": 1, "segments": segments}))
    with pytest.raises(RescueError) as error:
        find_media(samples, root)
    assert f"{root / 'manifest.json'}: field segments[0].clip:" in str(error.value)


@pytest.mark.parametrize("field, value, option", [
    ("media_match", "path", "--media-match"), ("video_input", "gif", "--video-input"),
    ("frame_rate", 0, "--frame-rate"), ("max_frames", 0, "--max-frames"), ("frame_size", 8, "--frame-size"),
    ("workers", 0, "workers"), ("image_detail", "max", "--image-detail"),
    ("unknown_option", 1, "unknown video option"),
])
def test_bad_video_options_name_the_option(tmp_path, field, value, option):
    with pytest.raises(VideoError, match=option):
        RunConfig(out=str(tmp_path), mode="video", video={"media_root": str(tmp_path), field: value})


def test_video_options_need_a_video_mode_and_rescore_media_root_a_video_run(tmp_path):
    from rescue.engine.runner import RunError

    with pytest.raises(RunError, match="need --mode video"):
        RunConfig(out=str(tmp_path), mode="dialogue", video={"media_root": str(tmp_path)})
    run(RunConfig(out=str(tmp_path / "text"), tasks=["itp"], quiet=True, bertscore=False, limit_samples=1))
    with pytest.raises(RunError, match="uses no media"):
        rescore(tmp_path / "text", media_root=str(tmp_path))


def test_video_runs_pair_with_the_same_models_text_run():
    from rescue.runs.results import ModelResults, StoredConfig
    from rescue.report.runs import System
    from rescue.report.video_gain import video_pairs

    def system(model: str, mode: str) -> System:
        return System(f"{model} [{mode}]", model, mode, Path(mode), StoredConfig(), ModelResults())

    a_video, a_dialogue, a_cues, a_av = (system("a", m) for m in ("video", "dialogue", "video+cues", "audiovisual"))
    b_cues, b_dialogue, c_video = system("b", "video+cues"), system("b", "dialogue"), system("c", "video")
    pairs = video_pairs([a_video, a_dialogue, a_cues, a_av, b_cues, b_dialogue, c_video, system("d", "dialogue")])
    assert [(v.label, t.label) for v, t in pairs] == [
        ("a [video]", "a [dialogue]"),
        ("a [video+cues]", "a [audiovisual]"),  # the same cues without the media
        ("b [video+cues]", "b [dialogue]"),  # no audiovisual run: the dialogue run
    ]  # c has no text run, d no video run


@pytest.mark.slow
def test_image_detail_reaches_the_request_and_the_estimate(tmp_path, samples, media_root):
    from rescue.llm import ImagePart
    from rescue.video import VideoContext

    itp = get_task("itp")
    instance = itp.build(samples[:1])[2]
    counts = {}
    for detail in (None, "low"):
        options = VideoOptions(media_root=str(media_root), image_detail=detail, max_frames=4)
        context = VideoContext.locate(options, samples[:1], tmp_path / "store")
        context.prepare({"itp": (itp, [instance])}, None)
        images = [p for p in context.media_parts(itp, instance, None) if isinstance(p, ImagePart)]
        assert images and all(p.detail == detail for p in images)
        assert ("detail" in images[0].wire()["image_url"]) == (detail is not None)
        counts[detail] = context.media_count(itp, instance, None)
    assert counts["low"][0] == counts[None][0] and counts["low"][2] == counts["low"][0] * (85 + 12)


def test_frame_and_clip_plans_keep_every_frame_inside_its_span():
    from rescue.video._plan import clip_plan, frame_plan
    from rescue.video._store import SourceInfo
    from rescue.video._window import MediaWindow, Span

    source = SourceInfo("d", duration=60.0, fps=10.0, width=640, height=360, has_audio=True)
    # Row 2 lasts 0.3 s, shorter than the 1 s grid step; row 3 is cut at the hidden row's start, 20.05 s.
    window = MediaWindow("s", (Span(1, 2.0, 5.0), Span(2, 7.3, 7.6), Span(3, 18.0, 20.05)), limit=20.05)
    plan = frame_plan(window, source, rate=1.0, limit=100)
    picks = [(p.row_index, p.index) for p in plan.frames]
    assert picks == [(1, 20), (1, 30), (1, 40), (2, 74), (3, 180), (3, 190)]
    assert all((index + 1) / source.fps <= 20.05 for _, index in picks)
    thinned = frame_plan(window, source, rate=1.0, limit=3).frames
    assert [p.index for p in thinned] == [20, 40, 190]  # first and last kept, evenly between
    clip = clip_plan(window, source)
    assert (clip.clip_first, clip.clip_stop) == (20, 200)  # frame 200 starts at 20.0 s and would end after 20.05 s
    nothing = MediaWindow("s", (), 3.0)
    assert frame_plan(nothing, source, 1.0, 16).empty and clip_plan(nothing, source).empty


# The store's digest index is a file rescue wrote and reads back (issue #42 item 4): an index edited to hold what
# rescue never writes only costs hashing the video again, never a traceback nor a wrong digest.
SPOILT_INDEXES = {
    "100,000 brackets": lambda entry: "[" * 100_000,
    "cut short": lambda entry: json.dumps(entry)[:40],
    "not UTF-8": lambda entry: "\udcff",
    "a list": lambda entry: "[1, 2]",
    "entry a string": lambda entry: json.dumps({k: "many" for k in entry}),
    "duration NaN": lambda entry: json.dumps(entry).replace('"duration": ', '"duration": NaN, "x": '),
    "duration 1e308": lambda entry: json.dumps(entry).replace('"duration": ', '"duration": 1e308, "x": '),
    "fps a string": lambda entry: json.dumps(entry).replace('"fps": ', '"fps": "fast", "x": '),
    "digest short": lambda entry: json.dumps(entry).replace('"digest": "', '"digest": "ab", "x": "'),
    "extra key": lambda entry: json.dumps(entry).replace('"info": {', '"info": {"surprise": 1, '),
}


@pytest.mark.parametrize("variant", list(SPOILT_INDEXES))
def test_a_spoilt_digest_index_is_hashed_again(tmp_path, variant):
    from rescue.video import VideoOptions
    from rescue.video._store import MediaStore

    from media_helpers import make_video

    source = make_video(tmp_path / "s.mp4", 3.0)
    store = MediaStore(tmp_path / "media", VideoOptions())
    truth = store.source(source)
    store.flush()
    index = tmp_path / "media" / "hashes.json"
    entry = json.loads(index.read_text())
    index.write_bytes(SPOILT_INDEXES[variant](entry).encode("utf-8", "surrogateescape"))
    assert MediaStore(tmp_path / "media", VideoOptions()).source(source) == truth
