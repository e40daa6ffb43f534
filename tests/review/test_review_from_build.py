"""The whole lab workflow on what `rescue build` really writes: build a synthetic session (scripted
OpenAI-compatible server), serve it in the review tool, two annotators verify, an adjudicator decides,
and the export validates and loads as benchmark data."""

from __future__ import annotations

import pytest
from media_helpers import conversation, make_video, write_srt
from review_helpers import Client, make_app, seg_url

from rescue.data.loading import load_samples
from rescue.data.validation import validate_path

pytestmark = pytest.mark.slow


def test_build_review_adjudicate_export(tmp_path, monkeypatch):
    from rescue.builder import AnnotateSettings, BuildConfig, SessionSpec, build
    from rescue.review.export import write_export
    from rescue.testing.drafts import draft_script
    from rescue.testing.openai_server import serve

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    video = make_video(tmp_path / "s01e01.mp4", 80.0)
    subs = write_srt(tmp_path / "s01e01.srt", conversation(80.0, long_gaps=(40.0,)))
    out = tmp_path / "built"
    session = SessionSpec(video, subs, "couple", ("Alan", "Evelyn"), "alan_and_evelyn")
    with serve(script=draft_script()) as server:
        outcome = build(BuildConfig(out=out, sessions=[session], annotate=AnnotateSettings(video_input="none"),
                                    model="test-model", base_url=server.base_url, max_retries=0, min_duration=20))
    assert outcome.complete

    app = make_app(out, tmp_path / "review.db")
    project = app.state.project
    assert project.has_manifest and project.segments
    sample_id = min(project.segments)
    ann, bob, ada = Client(app, "ann"), Client(app, "bob"), Client(app, "ada")
    seg = ann.segment(sample_id)
    clip = ann.get(seg["media"]["clip"], headers={"Range": "bytes=0-99"})
    assert clip.status_code == 206 and clip.content[4:8] == b"ftyp"  # an MP4 from the build, seekable
    assert ann.get(seg["media"]["subtitles"]).text.startswith("WEBVTT")

    Client(app, "root").write("POST", "/api/assignments", {"k": 2, "annotators": ["ann", "bob"]})
    row = seg["rows"][0]
    speaker = row["values"]["primary_speaker"]
    other = next(e for e in seg["entities"] if e not in (speaker, "Couple"))
    assert ann.save(1, {"target": [other]}, 0, sample_id=sample_id).status_code == 200
    assert bob.save(1, {"tone_of_voice": "measured"}, 0, sample_id=sample_id).status_code == 200
    for client in (ann, bob):
        assert client.verify(sample_id).status_code == 200, client.verify(sample_id).text
    assert ada.save(1, {"target": [other], "tone_of_voice": "measured"}, 0, sample_id=sample_id,
                    copy="final").status_code == 200
    assert ada.verify(sample_id, copy="final").status_code == 200
    assert ada.get(seg_url(sample_id) + "/audit").json()

    with app.state.sessions() as db:
        count, sidecar = write_export(db, project, tmp_path / "verified.jsonl")
    assert count == 1 and sidecar.exists()
    assert validate_path(tmp_path / "verified.jsonl").errors == []
    sample = load_samples(tmp_path / "verified.jsonl")[0]
    assert sample.sample_id == sample_id and sample.rows[0].target == [other]
    assert sample.rows[0].tone_of_voice == "measured"
