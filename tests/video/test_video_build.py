"""Video mode on the output of ``rescue build``: its manifest finds the clips, every task runs on the draft."""

from __future__ import annotations

import json
import re

import pytest
from build_fixtures import session_files  # noqa: F401 (fixture)

from rescue.builder import AnnotateSettings, BuildConfig, SessionSpec, build
from rescue.data.loading import load_samples
from rescue.engine.runner import RunConfig, run
from rescue.testing.drafts import draft_script
from rescue.testing.openai_server import Reply, serve
from rescue.video import find_media

LABEL = re.compile(r"\[frame at ([\d.]+) s, row (\d+)\]")


@pytest.mark.slow
def test_a_build_folder_is_a_media_root(tmp_path, session_files, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    out = tmp_path / "built"
    spec = SessionSpec(session_files.video, session_files.subs, "couple", ("Alan", "Evelyn"), "alan_and_evelyn")
    with serve(script=draft_script()) as server:
        build(BuildConfig(out=out, sessions=[spec], annotate=AnnotateSettings(video_input="none"), max_retries=0,
                          model="test-model", base_url=server.base_url))
    samples = load_samples(out / "draft.jsonl")
    manifest = json.loads((out / "manifest.json").read_text())
    assert find_media(samples, out) == {s["sample_id"]: out / s["clip"] for s in manifest["segments"]}
    seen = []

    def script(body):
        parts = body["messages"][-1]["content"]
        seen.append(parts)
        return Reply.text('{"predictions": []}')

    with serve(script=script) as server:
        outcome = run(RunConfig(out=str(tmp_path / "run"), models=["vlm"], tasks=["stp", "rpp"],
                                data=str(out / "draft.jsonl"), base_url=server.base_url, mode="video",
                                video={"media_root": str(out)}, quiet=True, bertscore=False, max_retries=0))
    assert outcome.results["config"]["mode"] == "video"
    assert all(outcome.results["models"]["vlm"][task]["all"]["instances"] > 0 for task in ("stp", "rpp"))
    assert len(seen) == sum(outcome.results["models"]["vlm"][task]["all"]["instances"] for task in ("stp", "rpp"))
    rows = samples[0].rows
    for parts in seen:
        labels = [(float(t), int(r)) for p in parts if p["type"] == "text" for t, r in LABEL.findall(p["text"])]
        images = [p for p in parts if p["type"] == "image_url"]
        assert len(labels) == len(images)
        assert images or "No video is attached" in parts[0]["text"]
        for time, row in labels:  # each frame lies inside the row it is labelled with
            assert rows[row - 1].start_time - 0.05 <= time < rows[row - 1].end_time
