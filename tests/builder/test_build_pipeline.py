"""``rescue build`` end to end on synthetic media against the scripted OpenAI-compatible server: the
outputs and their contract, broken drafts caught and re-asked, resuming, dry runs, visual evidence."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pytest
from build_fixtures import SCENE_AT
from media_helpers import conversation, make_video, write_srt

from rescue.builder import (
    AnnotateSettings,
    BuildConfig,
    SessionSpec,
    build,
    read_manifest,
)
from rescue.data.validation import validate_path
from rescue.media import ffmpeg_exe, probe
from rescue.testing.drafts import BROKEN_KINDS, draft_script
from rescue.testing.openai_server import Reply, serve


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")


@pytest.fixture
def out(tmp_path, prepared):
    """An output folder holding the session's clips already: tests pay for annotation, not for cutting."""
    return prepared.seed(tmp_path / "out")


@pytest.fixture
def segs(prepared):
    return prepared.segments


def spec(files, **kw) -> SessionSpec:
    fields = {"scenario": "couple", "participants": ("Alan", "Evelyn"), "group": "alan_and_evelyn"}
    fields.update(kw)
    return SessionSpec(files.video, files.subs, **fields)  # type: ignore[arg-type]


def config(out: Path, sessions, server=None, **kw) -> BuildConfig:
    settings = kw.pop("annotate", AnnotateSettings(video_input="none"))
    if server is not None:
        kw.setdefault("model", "test-model")
        kw.setdefault("base_url", server.base_url)
    return BuildConfig(out=out, sessions=sessions, annotate=settings, max_retries=2, **kw)


def read_draft(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "draft.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_good_drafts_give_a_valid_release_and_the_manifest(tmp_path, session_files):
    out = tmp_path / "out"
    script = draft_script()
    with serve(script=script) as server:
        outcome = build(config(out, [spec(session_files)], server))
    assert outcome.complete and outcome.problems == 0
    # The proposal: a boundary in the silence at 310 s, the rest (90 s) dropped as too short.
    assert outcome.segments == ["alan_and_evelyn/s01e01_segment01"]
    assert [(d.sample_id, d.reason) for d in outcome.dropped] == [
        ("alan_and_evelyn/s01e01_segment02", "shorter than --min-duration 120 s (90 s)")]
    report = validate_path(out / "draft.jsonl")
    assert report.errors == [] and report.warnings == [] and len(report.samples) == 1
    sample = read_draft(out)[0]
    assert sample["sample_id"] == "alan_and_evelyn/s01e01_segment01" and sample["participants"] == ["Alan", "Evelyn"]
    lines = [line for line in session_files.lines if line[1] <= 310]
    assert [r["dialogue_cleaned"] for r in sample["rows"]] == [text for *_, text in lines]
    assert sample["rows"][0]["start_time"] == 0.5  # clip time = source time for the first segment
    therapist = [r for r in sample["rows"] if r["primary_speaker"] == "Therapist"]
    assert therapist and all(r["relation_pattern"] == "pursue_withdraw" for r in therapist)
    assert all(r["relation_pattern"] is None for r in sample["rows"] if r["primary_speaker"] != "Therapist")

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["version"] == 1
    segment = manifest["segments"][0]
    assert set(segment) >= {"sample_id", "scenario", "participants", "source_video", "start", "end", "clip",
                            "subtitles", "rows", "problems", "provenance"}
    assert (segment["start"], segment["end"]) == (0.0, 310.0)
    assert segment["rows"][0] == {"row_index": 1, "start_time": 0.5, "end_time": 6.5,
                                  "text": lines[0][3], "speakers": ["Alan"]}
    assert segment["problems"] == []
    assert segment["provenance"]["model"] == "test-model" and segment["provenance"]["requests"] == 3  # two windows of lines, relations
    clip = probe(out / segment["clip"])
    assert clip.video_codec == "h264" and clip.audio_codec == "aac" and clip.duration == pytest.approx(310, abs=0.2)
    vtt = (out / segment["subtitles"]).read_text()
    assert vtt.startswith("WEBVTT") and "00:00:00.500 --> 00:00:06.500\n<v Alan>" in vtt
    assert (out / "segments/alan_and_evelyn/s01e01.csv").read_text().splitlines()[1:] == [
        "00:00:00.000,00:05:10.000,", "00:05:10.000,00:06:40.000,"]
    log = [json.loads(line) for line in (out / "build.log").read_text().splitlines()]
    assert [e["step"] for e in log if e["event"] == "step"] == ["propose", "cut", "retime", "annotate"]
    # Media never enters the outputs.
    assert "base64" not in (out / "draft.jsonl").read_text() and "base64" not in (out / "manifest.json").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("kind", [k for k in BROKEN_KINDS])
def test_broken_drafts_are_caught_and_reasked(out, segs, session_files, kind):
    script = draft_script(kind)
    with serve(script=script) as server:
        outcome = build(config(out, [spec(session_files, segments=segs)], server))
        reask = [r for r in server.requests if "Your answer breaks these rules" in json.dumps(r.body)]
    assert script.seen == {"rows": 2, "rows-reask": 2, "relations": 1}
    assert outcome.problems == 0
    # The two windows are asked concurrently, so either one's re-ask may reach the server first.
    listed = "\n".join(r.body["messages"][-1]["content"] for r in reask)
    expected = {"missing_keys": "(tone_of_voice): missing key", "uncovered_line": "is not quoted in full",
                "outside_cue": "lies outside every subtitle line", "self_target": "is the speaker and a target",
                "unknown_label": "'hypnotise' not a couple support strategy", "not_json": "not valid JSON",
                "hallucinated": "is not quoted in full"}[kind]
    assert expected in listed


@pytest.mark.slow
def test_a_failed_relations_reask_is_a_problem_and_keeps_the_first_answer(out, segs, session_files):
    """The rows and the relation pass share one re-ask: when the re-ask's request fails, the draft says so and
    keeps what the first answer gave (the relation pass once dropped the failure silently)."""
    drafts = draft_script(relation_label="stonewall_spiral")

    def script(body):
        if "relation_patterns" in json.dumps(body["messages"][0]) and "breaks these rules" in json.dumps(body):
            drafts._count("relations-reask")
            return Reply(status=400, body={"error": {"message": "bad request", "type": "invalid_request_error"}})
        return drafts(body)

    with serve(script=script) as server:
        outcome = build(config(out, [spec(session_files, segments=segs)], server))
    assert drafts.seen == {"rows": 2, "relations": 1, "relations-reask": 1}
    text = [str(p) for p in read_manifest(out / "manifest.json").segments[0].problems]
    assert any("relations: the re-ask failed" in line for line in text), text
    assert outcome.complete


@pytest.mark.slow
def test_what_the_reask_does_not_fix_is_kept_as_open_problems(out, segs, session_files):
    with serve(script=draft_script("unknown_label", "self_target", "uncovered_line", fix_on_reask=False)) as server:
        outcome = build(config(out, [spec(session_files, segments=segs)], server))
    assert outcome.complete  # answered, with problems for the reviewer
    segment = read_manifest(out / "manifest.json").segments[0]
    text = [str(p) for p in segment.problems]
    assert "row 1 target: self-target: Alan is the speaker and a target" in text
    assert "row 1 utterance_type: 'complaint' is not an utterance type" in text
    rows = read_draft(out)[0]["rows"]
    assert rows[0]["draft_invalid"]["utterance_type"] == "complaint"  # kept verbatim, not silently fixed
    assert rows[0]["target"] == ["Alan"]  # a self-target is kept as the model gave it
    # The line each window's answer left out is a row of its own, with the problem on that row: none is lost.
    lines = [line for line in session_files.lines if line[1] <= 310]
    assert [r["dialogue_cleaned"] for r in rows] == [line[3] for line in lines]
    left_out = [p for p in segment.problems if "not quoted in full by the model's rows" in p.message]
    assert len(left_out) == 2 and all(p.row_index is not None for p in left_out)
    for problem in left_out:
        row = rows[problem.row_index - 1]
        line = next(line for line in lines if line[3] == row["dialogue_cleaned"])
        assert (row["start_time"], row["end_time"]) == (line[0], line[1])  # the line's own times, re-timed to 0 here
        assert row["primary_speaker"] == line[2] and row["tone_of_voice"] == "" and row["body_posture"] == []
    assert validate_path(out / "draft.jsonl").errors == []


@pytest.mark.slow
def test_a_hallucinating_answer_keeps_every_line(out, segs, session_files):
    # 8 rows of invented words for each window's lines, again after the re-ask: every line stays, as its own row.
    with serve(script=draft_script("hallucinated", fix_on_reask=False)) as server:
        build(config(out, [spec(session_files, segments=segs)], server))
    rows = read_draft(out)[0]["rows"]
    lines = [line for line in session_files.lines if line[1] <= 310]
    said = [r["dialogue_cleaned"] for r in rows]
    assert [t for t in said if not t.startswith("Invented")] == [line[3] for line in lines]
    assert len(rows) - len(lines) >= 8  # the invented rows the windows own stay too, for the reviewer to delete
    problems = read_manifest(out / "manifest.json").segments[0].problems
    assert sum("not quoted in full by the model's rows" in p.message for p in problems) == len(lines)
    assert validate_path(out / "draft.jsonl").errors == []


@pytest.mark.slow
def test_rerun_resumes_without_cutting_or_asking_again(tmp_path, session_files):
    out = tmp_path / "out"
    with serve(script=draft_script("self_target")) as server:
        made = build(config(out, [spec(session_files)], server))
        first = server.request_count
        assert (made.sent, made.cached, made.reasked) == (first, 0, 2)  # what this run sent, said as such
        clip = out / "clips/alan_and_evelyn/s01e01_segment01.mp4"
        stamp = clip.stat().st_mtime_ns
        (out / "draft.jsonl").unlink()
        again = build(config(out, [spec(session_files)], server))
        assert server.request_count == first  # no request re-sent
        assert (again.sent, again.cached, again.reasked) == (0, 0, 0)  # a no-op rerun says 0 sent (was "8 request(s)")
        # A finished segment draft is reused even when the cache is gone.
        (out / "cache.sqlite").unlink()
        build(config(out, [spec(session_files)], server))
        assert server.request_count == first
    assert clip.stat().st_mtime_ns == stamp  # not re-cut
    assert len(read_draft(out)) == 1
    statuses = [e["status"] for e in map(json.loads, (out / "build.log").read_text().splitlines())
                if e.get("step") == "cut"]
    assert statuses == ["done", "skipped", "skipped"]


@pytest.mark.slow
def test_failed_requests_leave_a_reviewable_draft_and_a_rerun_asks_again(out, segs, session_files):
    from rescue.testing.openai_server import Reply

    with serve(script=Reply.error(400, "bad request")) as server:
        outcome = build(config(out, [spec(session_files, segments=segs)], server))
    assert not outcome.complete and "request failed" in str(read_manifest(out / "manifest.json").segments[0].problems)
    assert validate_path(out / "draft.jsonl").errors == []  # the subtitles as rows, for the reviewer
    with serve(script=draft_script()) as server:
        outcome = build(config(out, [spec(session_files, segments=segs)], server, retry_errors=True))
    assert outcome.complete and outcome.problems == 0


@pytest.mark.slow
def test_dry_run_sends_and_writes_nothing(tmp_path, session_files):
    out = tmp_path / "out"
    with serve(script=draft_script()) as server:
        outcome = build(config(out, [spec(session_files)], server, dry_run=True,  # proposes segments too
                               annotate=AnnotateSettings(video_input="frames", window_cues=20)))
        assert server.request_count == 0
    assert not out.exists()
    est = outcome.estimate
    assert est is not None and est.requests == 3 + 1  # 43 lines in windows of 20 (overlap 6), plus relations
    # Two frames per line, at most 24 per request (windows share lines).
    assert est.images == 3 * 24 and est.input_tokens > est.images * 200 and est.output_tokens > 0


@pytest.mark.slow
def test_dry_run_cli_prints_the_estimate(tmp_path, session_files, segs):
    from test_build_inputs import cli

    done = cli(str(session_files.video), "--subs", str(session_files.subs), "--segments", str(segs), "--scenario", "couple",
               "--participants", "Alan,Evelyn", "--out", str(tmp_path / "o"), "--model", "openai/gpt-4o-mini",
               "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "requests: 3" in done.stdout and "images: 42" in done.stdout and "estimated cost: $" in done.stdout
    assert not (tmp_path / "o").exists()


def _parts(body) -> list[str]:
    content = body["messages"][1]["content"]
    return ["text"] if isinstance(content, str) else [p["type"] for p in content]


# "clip" cuts three window clips out of the 310 s segment (seconds of encoding): slow; the quick test below cuts
# them from a 20 s video.
@pytest.mark.slow
@pytest.mark.parametrize("video_input", ["none", "frames", pytest.param("clip", marks=pytest.mark.slow)])
def test_video_input_modes(out, segs, session_files, video_input):
    settings = AnnotateSettings(video_input=video_input, window_cues=20, max_images=6)
    with serve(script=draft_script()) as server:
        outcome = build(config(out, [spec(session_files, segments=segs)], server, annotate=settings))
        rows_requests = [r.body for r in server.requests if "relation_patterns" not in json.dumps(r.body["messages"][0])]
    assert outcome.problems == 0 and len(rows_requests) == 3
    kinds = [_parts(body) for body in rows_requests]
    if video_input == "none":
        assert all(k == ["text"] for k in kinds)
    elif video_input == "frames":
        assert all(k.count("image_url") == 6 for k in kinds)
        url = next(p for p in rows_requests[0]["messages"][1]["content"] if p["type"] == "image_url")["image_url"]["url"]
        assert url.startswith("data:image/jpeg;base64,/9j/")
    else:
        assert all(k == ["video_url", "text"] for k in kinds)
        windows = sorted((out / "work/alan_and_evelyn/s01e01_segment01").glob("window*.mp4"))
        assert len(windows) == 3 and probe(windows[0]).duration < 200


@pytest.mark.slow
def test_clip_input_sends_each_window_as_its_own_clip(tmp_path):
    video = make_video(tmp_path / "short.mp4", 20.0)
    lines = [(1.0, 3.0, "Alan", "I never said that to you."), (4.0, 6.0, "Evelyn", "You did, last week at dinner."),
             (7.0, 9.0, "Therapist", "Let us slow down a little."), (10.0, 12.0, "Alan", "Fine, maybe I did.")]
    subs = write_srt(tmp_path / "short.srt", lines)
    segments = tmp_path / "seg.csv"
    segments.write_text("0,20\n", encoding="utf-8")
    out = tmp_path / "out"
    settings = AnnotateSettings(video_input="clip", window_cues=2, window_overlap=0)
    with serve(script=draft_script()) as server:
        outcome = build(config(out, [SessionSpec(video, subs, "couple", ("Alan", "Evelyn"), "g", segments=segments)],
                               server, annotate=settings, min_duration=1))
        rows_requests = [r.body for r in server.requests if "relation_patterns" not in json.dumps(r.body["messages"][0])]
    assert outcome.problems == 0 and len(rows_requests) == 2
    assert all(_parts(body) == ["video_url", "text"] for body in rows_requests)
    windows = sorted((out / "work/g/short_segment01").glob("window*.mp4"))
    assert len(windows) == 2 and all(probe(w).duration < 20 for w in windows)
    assert [r["dialogue_cleaned"] for r in read_draft(out)[0]["rows"]] == [text for *_, text in lines]


@pytest.mark.slow
def test_long_segment_windows_merge_into_one_row_per_line(out, segs, session_files):
    with serve(script=draft_script()) as server:
        build(config(out, [spec(session_files, segments=segs)], server, annotate=AnnotateSettings(video_input="none", window_cues=10,
                                                                                   window_overlap=4)))
    rows = read_draft(out)[0]["rows"]
    assert [r["row_index"] for r in rows] == list(range(1, 44))
    assert [r["start_time"] for r in rows] == [line[0] for line in session_files.lines if line[1] <= 310]


def gap_after(lines, time: float) -> float:
    """The middle of the first silence between subtitle lines after ``time``."""
    return next((a[1] + b[0]) / 2 for a, b in itertools.pairwise(lines) if a[1] >= time)


@pytest.mark.slow
def test_segments_file_min_duration_row_clips_and_group(tmp_path, session_files):
    segments = tmp_path / "segs.csv"
    one, two = gap_after(session_files.lines, 125), gap_after(session_files.lines, 175)
    segments.write_text(f"0,{one},intro\n{one},{two}\n{two},399.5\n", encoding="utf-8")
    out = tmp_path / "out"
    with serve(script=draft_script()) as server:
        outcome = build(config(out, [spec(session_files, segments=segments, group="g1")], server, row_clips=True))
    assert outcome.segments == ["g1/s01e01_segment01", "g1/s01e01_segment03"]
    assert [(d.sample_id, d.reason) for d in outcome.dropped] == [
        ("g1/s01e01_segment02", f"shorter than --min-duration 120 s ({two - one:g} s)")]
    manifest = read_manifest(out / "manifest.json")
    assert [d.sample_id for d in manifest.dropped] == ["g1/s01e01_segment02"]
    third = manifest.segment("g1/s01e01_segment03")
    assert (third.start, third.end) == (two, 399.5)
    assert third.rows[0].start_time == pytest.approx(next(line[0] for line in session_files.lines if line[0] >= two) - two)
    # Every path of the manifest is relative to DIR (the subtitles were relative to the working directory).
    import os

    assert third.provenance["segments_from"] == os.path.relpath(segments, out)
    assert third.provenance["subtitles_file"] == os.path.relpath(session_files.subs, out)
    assert (out / third.provenance["subtitles_file"]).resolve() == session_files.subs.resolve()
    assert (out / third.source_video).resolve() == session_files.video.resolve()
    first = manifest.segment("g1/s01e01_segment01")
    assert first.provenance["segment_name"] == "intro"
    assert len(first.row_clips) == len(first.rows)
    row_clip = probe(out / first.row_clips[0])
    assert row_clip.duration == pytest.approx(first.rows[0].end_time - first.rows[0].start_time, abs=0.15)


@pytest.mark.slow
def test_manifest_csv_builds_several_videos_and_family(tmp_path, out, segs, session_files):
    folder = tmp_path / "in"
    folder.mkdir()
    lines = conversation(150, speakers=("Mia", "Therapist", "Dad", "Therapist"))
    make_video(folder / "fam1.mp4", 150)
    write_srt(folder / "fam1.srt", lines)
    sessions = folder / "sessions.csv"
    sessions.write_text("video,subtitles,scenario,participants,group,segments\n"
                        f"{session_files.video},{session_files.subs},couple,Alan;Evelyn,alan_and_evelyn,{segs}\n"
                        "fam1.mp4,fam1.srt,family,\"Mia,Dad\",family_therapy,\n", encoding="utf-8")
    from test_build_inputs import cli

    with serve(script=draft_script()) as server:
        done = cli("--manifest", str(sessions), "--out", str(out), "--model", "test-model", "--base-url",
                   server.base_url, "--video-input", "none")
    assert done.returncode == 0, done.stderr
    ids = [s["sample_id"] for s in read_draft(out)]
    assert ids == ["alan_and_evelyn/s01e01_segment01", "family_therapy/fam1_segment01"]
    family = read_draft(out)[1]
    assert family["scenario"] == "family"
    strategies = {m["strategy_type"] for r in family["rows"] for m in r["support_strategy"]}
    assert strategies == {"safeguard"}  # the family list's first label, read from the family prompt
    assert validate_path(out / "draft.jsonl").errors == []
    for command in (["validate", "--data"], ["stats", "--data"], ["tasks", "--data"]):
        checked = subprocess.run([*cli_base(), *command, str(out / "draft.jsonl")], check=False, capture_output=True,
                                 text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr


def cli_base() -> list[str]:
    import sys

    return [sys.executable, "-m", "rescue"]


@pytest.mark.slow
def test_without_a_model_the_draft_holds_the_subtitles(out, segs, session_files):
    outcome = build(config(out, [spec(session_files, segments=segs)]))
    assert outcome.requests == 0
    rows = read_draft(out)[0]["rows"]
    assert rows[0]["dialogue_cleaned"] == session_files.lines[0][3] and rows[0]["primary_speaker"] == "Alan"
    assert [p.message for p in read_manifest(out / "manifest.json").segments[0].problems] == ["not pre-annotated (no --model)"]
    assert validate_path(out / "draft.jsonl").errors == []


@pytest.mark.slow  # proposes and cuts the whole 400 s session; a proposal passed back as --segments is what
# every test using `segs` does, and an edited one is test_an_edited_proposal_is_used_without_segments
@pytest.mark.slow
def test_proposal_uses_scene_cuts_and_can_be_passed_back(tmp_path, session_files):
    out = tmp_path / "out"
    outcome = build(config(out, [spec(session_files)], propose_only=True))
    proposal = outcome.proposals[0]
    assert proposal.exists() and not (out / "clips").exists()
    # Edited by hand: split in a silence near the scene cut and pass back.
    cut = gap_after(session_files.lines, SCENE_AT)
    proposal.write_text(f"start,end,name\n0,{cut}\n{cut},400\n", encoding="utf-8")
    outcome = build(config(tmp_path / "o2", [spec(session_files, segments=proposal)]))
    assert outcome.segments == ["alan_and_evelyn/s01e01_segment01", "alan_and_evelyn/s01e01_segment02"]


@pytest.mark.slow
def test_an_edited_proposal_is_used_without_segments(tmp_path, session_files):
    # --propose-only, an edit, then the same build without --segments (issue #20, item 4): the edit counts,
    # nothing is proposed again (no scene detection), and the log and the output say which file was used.
    out = tmp_path / "out"
    proposal = build(config(out, [spec(session_files)], propose_only=True)).proposals[0]
    cut = gap_after(session_files.lines, SCENE_AT)
    proposal.write_text(f"start,end,name\n0,{cut},first\n{cut},400,second\n", encoding="utf-8")
    outcome = build(config(out, [spec(session_files)], dry_run=True))
    assert outcome.spans == {"alan_and_evelyn/s01e01_segment01": (0.0, cut), "alan_and_evelyn/s01e01_segment02": (cut, 400.0)}
    assert outcome.notes == [f"s01e01.mp4: using the segments in {proposal} (proposed earlier, edits included); "
                             "delete it to propose again, or pass --segments FILE"]
    outcome = build(config(out, [spec(session_files)], min_duration=60))
    assert outcome.segments == ["alan_and_evelyn/s01e01_segment01", "alan_and_evelyn/s01e01_segment02"]
    assert proposal.read_text(encoding="utf-8").endswith(f"{cut},400,second\n")  # never proposed over
    manifest = read_manifest(out / "manifest.json")
    assert manifest.segments[0].provenance["segment_name"] == "first"
    assert manifest.segments[0].provenance["segments_from"] == "segments/alan_and_evelyn/s01e01.csv"
    log = [json.loads(line) for line in (out / "build.log").read_text().splitlines()]
    assert [e["message"] for e in log if e["event"] == "note"] == outcome.notes
    assert not [e for e in log if e.get("step") == "propose" and e.get("status") == "done"][1:]


def test_scene_cut_inside_a_silence_is_the_boundary():
    from rescue.builder.segments import propose_segments
    from rescue.media import Cue

    cues = [Cue(i + 1, t, t + 5, "x", ("Alan",)) for i, t in enumerate(range(0, 700, 7))]
    cuts = [306.5, 450.0]  # 306.5 lies in the silence 306-308 (a line every 7 s lasting 5 s)
    segments = propose_segments(cues, 700.0, cuts)
    assert segments[0].end == 306.5
    assert all(b.start == a.end for a, b in itertools.pairwise(segments))
    assert ffmpeg_exe()


@pytest.mark.slow
def test_cli_exits_3_when_requests_fail_and_says_how_to_continue(out, segs, session_files):
    from test_build_inputs import cli

    from rescue.testing.openai_server import Reply

    with serve(script=Reply.error(400, "model not found")) as server:
        done = cli(str(session_files.video), "--subs", str(session_files.subs), "--segments", str(segs),
                   "--scenario", "couple", "--participants", "Alan,Evelyn", "--out", str(out), "--model", "m",
                   "--base-url", server.base_url, "--video-input", "none", "--max-retries", "0")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "model not found" in done.stderr and "rerun the same command" in done.stderr


@pytest.mark.slow
def test_no_usable_rows_keeps_the_subtitle_lines(out, segs, session_files):
    from rescue.testing.openai_server import Reply

    with serve(script=Reply.json({"rows": []})) as server:
        outcome = build(config(out, [spec(session_files, segments=segs)], server))
    assert outcome.complete and outcome.problems > 0
    rows = read_draft(out)[0]["rows"]
    assert [r["dialogue_cleaned"] for r in rows] == [line[3] for line in session_files.lines if line[1] <= 310]
    problems = [str(p) for p in read_manifest(out / "manifest.json").segments[0].problems]
    assert any("no usable rows" in p for p in problems) and any("relation_patterns" in p for p in problems)
    assert validate_path(out / "draft.jsonl").errors == []


@pytest.mark.slow
def test_video_mode_finds_the_clips_of_a_build(out, segs, session_files, tmp_path):
    """The manifest contract as the video mode reads it: `rescue run --mode video --media-root DIR`."""
    with serve(script=draft_script()) as server:
        build(config(out, [spec(session_files, segments=segs)], server))
    done = subprocess.run([*cli_base(), "run", "--mode", "video", "--media-root", str(out), "--data",
                           str(out / "draft.jsonl"), "--model", "openai/gpt-4o-mini", "--tasks", "stp",
                           "--out", str(tmp_path / "run"), "--dry-run"], check=False, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if "stp" in line)
    requests, images = [int(cell.strip().replace(",", "")) for cell in row.split("│")[3:5]]
    assert requests > 0 and images > 0
