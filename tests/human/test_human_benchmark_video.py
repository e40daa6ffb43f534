"""A benchmark project in video mode (issue #38): a person gets the frames the model gets for the instance, and no
frame from the row the task hides or later; the export runs in the same mode."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from _cli import invoke_main
from bench_helpers import ScanningClient, bench_app, make_bench, scripted_answer
from video_media import FPS, data_url_bytes, jpeg_index, make_indexed_video

from rescue.data.loading import load_samples
from rescue.data.reading import demo_path
from rescue.errors import ReviewError
from rescue.human.benchmark import init_benchmark
from rescue.tasks import TASKS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def one_sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The first demo sample in a file of its own, and a folder with its indexed video (frame n's colour is n)."""
    root = tmp_path_factory.mktemp("video")
    data = root / "one.jsonl"
    data.write_text(demo_path().read_text(encoding="utf-8").splitlines(keepends=True)[0], encoding="utf-8")
    sample = load_samples(data)[0]
    stem = Path(sample.source_file).with_suffix(".mp4")
    make_indexed_video(root / "media" / stem.parent.name / stem.name, sample.rows[-1].end_time + 2)
    return data, root / "media"


def _first_hidden_start(task: str, sample, row_index: int) -> float:  # type: ignore[no-untyped-def]
    """Independent of rescue.video: when the first row the task hides starts."""
    first = row_index + 1 if TASKS[task].declaration.shows_row else row_index
    later = [r.start_time for r in sample.rows if r.row_index >= first]
    return min(later) if later else float("inf")


def test_a_person_sees_the_models_frames_and_nothing_after_the_hidden_row(tmp_path, one_sample):
    data, media = one_sample
    bench = tmp_path / "bench"
    init_benchmark(bench, data, list(TASKS), 2, "video", media)
    app = bench_app(bench, bench / "review.db")
    ann = ScanningClient(app, "ann")
    project = app.state.project
    checked = 0
    rng = random.Random(4)
    for entry in ann.get("/api/bench/queue").json():
        item = ann.get(f"/api/bench/items/{entry['task']}/{entry['number']}").json()
        instance = project.instance(entry["task"], entry["number"])
        limit = _first_hidden_start(entry["task"], instance.sample, instance.row_index)
        assert item["media"] is not None and item["media"]["note"]
        for frame in item["media"]["frames"]:
            mime, raw = data_url_bytes(frame["src"])
            index = jpeg_index(raw)
            assert mime == "image/jpeg" and (index + 1) / FPS <= limit + 1e-9, (entry, frame["caption"], limit)
            checked += 1
        # Answered before the next page (taken in order: no look-ahead locks it).
        url = f"/api/bench/items/{entry['task']}/{entry['number']}/answer"
        assert ann.write("PUT", url, {"value": scripted_answer(item, rng), "version": 0}).status_code == 200
    assert checked > 0
    app.state.engine.dispose()
    out = tmp_path / "people"
    made = invoke_main(["review", "export", str(bench), "--as-run", str(out), "--no-bertscore"])
    assert made.exit_code == 0, made.output
    config = json.loads((out / "results.json").read_text())["config"]
    assert config["mode"] == "video" and config["video"]["video_input"] == "frames"


def test_video_mode_needs_media_for_every_sample(tmp_path, one_sample):
    data, media = one_sample
    with pytest.raises(ReviewError, match="--media-root"):
        init_benchmark(tmp_path / "a", data, ["itp"], 2, "video")
    with pytest.raises(ReviewError, match="needs --mode"):
        init_benchmark(tmp_path / "b", data, ["itp"], 2, "dialogue", media)
    with pytest.raises(Exception, match="demo_couple_riley_and_sam"):
        init_benchmark(tmp_path / "c", data, ["itp"], 2, "video", tmp_path)  # a folder without the video
    assert not (tmp_path / "c" / "benchmark.json").exists()
    assert make_bench(tmp_path / "d", data, ["itp"])  # dialogue mode needs none
