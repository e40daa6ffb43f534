"""The review tool's JSON API and pages through FastAPI's TestClient, on a project folder with real clips."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from review_helpers import FIRST, PASSWORD, Client, append_tokens, make_app, seg_url
from typer.testing import CliRunner

from rescue.data.validation import validate_path
from rescue.testing.review_project import demo_samples, make_review_project

SECOND = "demo_couple_priya_and_marcus/001_session"


@pytest.fixture
def db_url(review_db_url):
    return review_db_url


# --- login and security ---------------------------------------------------------------------------------------


def test_everything_needs_a_login(app, project):
    from fastapi.testclient import TestClient

    anon = TestClient(app)
    for url in ["/api/openapi.json", "/api/segments", seg_url(FIRST), "/api/agreement", "/api/export", "/api/me", "/api/users",
                seg_url(FIRST) + "/audit", "/media/clips/" + FIRST + ".mp4"]:
        assert anon.get(url).status_code == 401, url
    assert anon.put(seg_url(FIRST) + "/rows/1", json={"version": 0, "fields": {}}).status_code == 401
    for page in ["/", "/segments/" + FIRST, "/agreement", "/segments/" + FIRST + "/adjudicate"]:
        answer = anon.get(page, follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"].startswith("/login?next="), page
    assert anon.get("/login").status_code == 200


def test_login_sets_an_httponly_samesite_cookie_and_returns_a_csrf_token(app):
    from fastapi.testclient import TestClient

    client = TestClient(app)
    assert client.post("/api/login", json={"name": "ann", "password": "wrong password"}).status_code == 401
    assert client.post("/api/login", json={"name": "nobody", "password": PASSWORD}).status_code == 401
    answer = client.post("/api/login", json={"name": "ann", "password": PASSWORD})
    assert answer.status_code == 200 and len(answer.json()["csrf"]) > 20
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert client.get("/api/me").json()["name"] == "ann"
    client.post("/api/logout", headers={"X-CSRF-Token": answer.json()["csrf"]})
    assert client.get("/api/me").status_code == 401


def test_logins_to_a_name_are_throttled_after_repeated_failures(app):
    from fastapi.testclient import TestClient

    client = TestClient(app)
    for _ in range(10):
        assert client.post("/api/login", json={"name": "bob", "password": "guess"}).status_code == 401
    assert client.post("/api/login", json={"name": "bob", "password": PASSWORD}).status_code == 429
    assert client.post("/api/login", json={"name": "ann", "password": PASSWORD}).status_code == 200  # others unaffected


def test_writes_need_the_csrf_header(ann):
    body = {"version": 0, "fields": {"target": ["Sam"]}}
    url = seg_url(FIRST) + "/rows/1"
    assert ann.http.put(url, json=body).status_code == 403
    assert ann.http.put(url, json=body, headers={"X-CSRF-Token": "forged"}).status_code == 403
    assert ann.write("PUT", url, body).status_code == 200


def test_roles_are_enforced_on_the_server(ann, ada):
    assert ann.get("/api/agreement").status_code == 403
    assert ann.get("/api/export").status_code == 403
    assert ann.write("POST", "/api/users", {"name": "eve", "role": "admin", "password": "x" * 10}).status_code == 403
    assert ann.write("POST", "/api/assignments", {"k": 1}).status_code == 403
    assert ann.save(1, {"target": ["Sam"]}, 0, copy="final").status_code == 403
    assert ann.get(seg_url(FIRST) + "?copy=bob").status_code == 403
    assert ada.write("POST", "/api/users", {"name": "eve", "role": "admin", "password": "x" * 10}).status_code == 403
    assert ada.save(1, {"target": ["Sam"]}, 0, copy="ann").status_code == 403  # nobody writes another's copy
    assert ada.get("/api/agreement").status_code == 200


def test_admin_adds_users_and_bad_accounts_are_refused(app):
    root = Client(app, "root")
    assert root.write("POST", "/api/users", {"name": "dee", "role": "annotator", "password": PASSWORD}).status_code == 201
    Client(app, "dee")
    for body in ({"name": "dee", "role": "annotator", "password": "long enough"},
                 {"name": "x y", "role": "annotator", "password": "long enough"},
                 {"name": "final", "role": "annotator", "password": "long enough"},
                 {"name": "fay", "role": "boss", "password": "long enough"},
                 {"name": "fay", "role": "annotator", "password": "short"}):
        assert root.write("POST", "/api/users", body).status_code == 422, body


# --- segments and rows ---------------------------------------------------------------------------------------------


def test_segment_rows_carry_version_values_draft_and_build_problems(ann):
    listing = ann.get("/api/segments").json()
    assert {s["sample_id"] for s in listing} == {s["sample_id"] for s in demo_samples()}
    first = next(s for s in listing if s["sample_id"] == FIRST)
    assert first["has_media"] and first["problems"] == 2
    seg = ann.segment()
    assert seg["entities"] == ["Riley", "Sam", "Therapist", "Couple"]
    assert seg["media"]["clip"].startswith("/media/clips/") and seg["media"]["subtitles"].endswith(".vtt")
    row = seg["rows"][1]
    assert row["version"] == 0 and row["values"] == row["draft"]
    assert [p["field"] for p in row["problems"]] == ["primary_speaker"]
    assert seg["problems"][0]["message"].startswith("subtitle track")
    assert {label["name"] for label in seg["labels"]["relation"]} >= {"pursue_withdraw", "attack_attack"}
    assert all(label["definition"] for label in seg["labels"]["strategy"])
    # the id may also come unencoded: the path converter takes everything up to the suffix
    assert ann.get("/api/segments/" + FIRST).status_code == 200
    assert ann.get(seg_url("no/such")).status_code == 404


def test_save_changes_a_row_and_the_audit_log_records_it(ann):
    answer = ann.save(3, {"target": ["Sam", "Riley"]}, 0)
    assert answer.status_code == 200 and answer.json()["version"] == 1
    row = ann.segment()["rows"][2]
    assert row["values"]["target"] == ["Sam", "Riley"] and row["version"] == 1
    assert row["draft"]["target"] != row["values"]["target"]
    assert "target" in row["accepted"] and row["updated_by"] == "ann"
    assert ann.save(3, {"relation_pattern": "pursue_withdraw"}, 1).json()["version"] == 2
    log = ann.get(seg_url(FIRST) + "/rows/3/audit").json()
    edits = [(e["field"], e["new"], e["user"]) for e in log if e["action"] == "row.edit"]
    assert edits == [("target", ["Sam", "Riley"], "ann"), ("relation_pattern", "pursue_withdraw", "ann")]
    assert log[0]["old"] == ann.segment()["rows"][2]["draft"]["target"]


def test_a_stale_version_is_refused_with_both_versions(app):
    first, second = Client(app, "ada"), Client(app, "root")
    assert first.save(4, {"tone_of_voice": "flat"}, 0, copy="final").status_code == 200
    answer = second.save(4, {"tone_of_voice": "warm"}, 0, copy="final")
    assert answer.status_code == 409
    body = answer.json()
    assert body["current"]["values"]["tone_of_voice"] == "flat" and body["current"]["version"] == 1
    assert body["current"]["updated_by"] == "ada"
    assert body["yours"] == {"version": 0, "fields": {"tone_of_voice": "warm"}}
    assert second.save(4, {"tone_of_voice": "warm"}, 1, copy="final").status_code == 200


@pytest.mark.slow
def test_concurrent_saves_of_one_row_lose_nothing(app):
    """Several clients save one row of the final copy at once: the first save of a never-saved row is won by
    exactly one, and read-modify-write with retry on 409 keeps every confirmed change."""
    from concurrent.futures import ThreadPoolExecutor

    clients = [Client(app, name) for name in ("ada", "root", "ada", "root", "ada", "root")]
    url = seg_url(FIRST) + "/rows/5?copy=final"
    with ThreadPoolExecutor(len(clients)) as pool:
        first = list(pool.map(lambda c: c.write("PUT", url, {"version": 0, "fields": {"tone_of_voice": "x"}}).status_code, clients))
    assert sorted(first) == [200] + [409] * (len(clients) - 1)

    def append(job: tuple[int, Client]) -> list[str]:
        number, client = job
        return append_tokens(client, url, client.segment(copy="final")["rows"][4], [f"c{number}-{n}" for n in range(5)])

    with ThreadPoolExecutor(len(clients)) as pool:
        confirmed = [t for tokens in pool.map(append, enumerate(clients)) for t in tokens]
    final = clients[0].segment(copy="final")["rows"][4]["values"]["tone_of_voice"].split(";")
    assert sorted(final[1:]) == sorted(confirmed) and len(confirmed) == 5 * len(clients)
    edits = [e for e in clients[0].get(seg_url(FIRST) + "/rows/5/audit").json() if e["action"] == "row.edit"]
    assert len(edits) == 1 + len(confirmed)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"relation_pattern": "blame_spiral"}, "relation_pattern"),
        ({"relation_cycle_state": "family_feud"}, "relation_cycle_state"),
        ({"target": ["Sam", "Alex"]}, "target[1]"),
        ({"primary_speaker": "Narrator"}, "primary_speaker"),
        ({"utterance_type": "rant"}, "utterance_type"),
        ({"support_strategy": [{"provider": "Therapist", "strategy_type": "hug", "target": ["Sam"]}]},
         "support_strategy[0].strategy_type"),
        ({"support_strategy": [{"provider": "Therapist", "strategy_type": "track", "target": ["Bo"]}]},
         "support_strategy[0].target[0]"),
        ({"internal_emotion": [{"person": "Riley", "emotion_description": "sad", "intensity": 11}]},
         "internal_emotion[0].intensity"),
        ({"internal_emotion": [{"person": "Riley", "emotion_description": "sad", "intensity": "high"}]},
         "internal_emotion[0].intensity"),
        ({"target": "Sam"}, "target"),
        ({"relation_pattern_evidence_rows": [99]}, "relation_pattern_evidence_rows[0]"),
        ({"row_index": 7}, "row_index"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_value_the_benchmark_would_reject_is_a_422_naming_the_field(ann, fields, named):
    answer = ann.save(1, fields, 0)
    assert answer.status_code == 422, answer.text
    assert named in [p["field"] for p in answer.json()["problems"]]
    assert ann.segment()["rows"][0]["version"] == 0  # nothing was written


def test_a_bad_draft_label_elsewhere_does_not_block_an_unrelated_save(tmp_path):
    samples = demo_samples()[:1]
    samples[0]["rows"][0]["relation_pattern"] = "blame_spiral"  # what a model draft may well contain
    proj = make_review_project(tmp_path / "p", samples, media=False)
    client = Client(make_app(proj, tmp_path / "db.sqlite"), "ann")
    seg = client.segment()
    assert any(p["field"] == "relation_pattern" and p["source"] == "validation" for p in seg["rows"][0]["problems"])
    assert client.save(1, {"tone_of_voice": "tense"}, 0).status_code == 200
    refused = client.verify()
    assert refused.status_code == 422 and refused.json()["problems"][0]["field"] == "relation_pattern"
    assert client.save(1, {"relation_pattern": "attack_attack"}, 1).status_code == 200
    assert client.verify().status_code == 200


def test_row_accept_marks_fields_reviewed(ann):
    from rescue.review.fields import FIELD_NAMES

    assert ann.save(2, {}, 0, accepted=["primary_speaker"]).status_code == 200
    assert ann.segment()["rows"][1]["accepted"] == ["primary_speaker"]
    assert ann.save(2, {}, 1, accepted=list(FIELD_NAMES)).status_code == 200
    assert sorted(ann.segment()["rows"][1]["accepted"]) == sorted(FIELD_NAMES)
    assert ann.save(2, {}, 2, accepted=["nonsense"]).status_code == 422


def test_comments_per_row_and_segment(ann):
    assert ann.write("POST", seg_url(FIRST) + "/comments", {"text": "speaker swap at 0:12", "row_index": 2}).status_code == 201
    assert ann.write("POST", seg_url(FIRST) + "/comments", {"text": "audio drops out"}).status_code == 201
    assert ann.write("POST", seg_url(FIRST) + "/comments", {"text": "x", "row_index": 999}).status_code == 422
    assert ann.write("POST", seg_url(FIRST) + "/comments", {"text": ""}).status_code == 422
    assert [(c["row_index"], c["author"]) for c in ann.segment()["comments"]] == [(2, "ann"), (None, "ann")]


def test_discard_needs_a_known_reason(ann):
    url = seg_url(FIRST) + "/discard"
    assert ann.write("POST", url, {"reason": "boring"}).status_code == 422
    assert ann.write("POST", url, {"reason": "other", "comment": " "}).status_code == 422
    assert ann.write("POST", url, {"reason": "subtitle_errors", "comment": "lines drift"}).status_code == 200
    seg = ann.segment()
    assert seg["status"]["status"] == "discarded" and seg["status"]["reason"] == "subtitle_errors"
    assert ann.write("POST", seg_url(FIRST) + "/reopen").status_code == 200
    assert ann.segment()["status"]["status"] == "open"


# --- several annotators ---------------------------------------------------------------------------------------------


def test_assignment_with_overlap_gives_each_annotator_a_queue(app):
    root = Client(app, "root")
    plan = root.write("POST", "/api/assignments", {"k": 2, "annotators": ["ann", "bob", "cat"]}).json()
    assert all(len(set(names)) == 2 for names in plan.values()) and len(plan) == 4
    load = {n: sum(n in names for names in plan.values()) for n in ("ann", "bob", "cat")}
    assert sorted(load.values()) == [2, 3, 3]
    for name in ("ann", "bob", "cat"):
        client = Client(app, name)
        queue = {s["sample_id"] for s in client.get("/api/segments").json()}
        assert queue == {sid for sid, names in plan.items() if name in names}
        outside = next(sid for sid, names in plan.items() if name not in names)
        assert client.get(seg_url(outside)).status_code == 403
        assert client.save(1, {"tone_of_voice": "x"}, 0, sample_id=outside).status_code == 403
    assert len(Client(app, "ada").get("/api/segments").json()) == 4
    assert root.write("POST", "/api/assignments", {"k": 4, "annotators": ["ann", "bob", "cat"]}).status_code == 422
    assert root.write("POST", "/api/assignments", {"k": 1, "annotators": ["zed"]}).status_code == 422


def _two_annotators(app, sample_id: str = FIRST):
    root = Client(app, "root")
    root.write("POST", "/api/assignments", {"k": 2, "annotators": ["ann", "bob"]})
    return Client(app, "ann"), Client(app, "bob")


def test_annotators_who_agree_verify_a_segment_and_it_exports_valid(app, tmp_path):
    ann, bob = _two_annotators(app)
    for client in (ann, bob):
        assert client.save(1, {"target": ["Sam"]}, 0).status_code == 200
        assert client.verify().status_code == 200
    ada = Client(app, "ada")
    listing = {s["sample_id"]: s for s in ada.get("/api/segments").json()}
    assert listing[FIRST]["status"] == "verified" and listing[SECOND]["status"] == "open"
    text = ada.get("/api/export").text
    out = tmp_path / "verified.jsonl"
    out.write_text(text)
    report = validate_path(out)
    assert not report.errors and [s.sample_id for s in report.samples] == [FIRST]
    assert report.samples[0].rows[0].target == ["Sam"]
    provenance = ada.get("/api/export?provenance=true").json()
    entry = provenance["segments"][0]
    assert entry["verified_by"] == ["ann", "bob"] and entry["source"] == "annotators agreed"
    assert entry["changes_from_draft"][0]["field"] == "target"
    assert {e["sample_id"] for e in provenance["not_exported"]} == {s["sample_id"] for s in demo_samples()} - {FIRST}


def test_disagreement_goes_to_adjudication_and_the_final_pick_is_exported(app):
    ann, bob = _two_annotators(app)
    assert ann.save(1, {"target": ["Sam"], "tone_of_voice": "icy"}, 0).status_code == 200
    assert bob.save(1, {"target": ["Sam"], "tone_of_voice": "weary"}, 0).status_code == 200
    ann.verify(), bob.verify()
    ada = Client(app, "ada")
    assert {s["sample_id"]: s["status"] for s in ada.get("/api/segments").json()}[FIRST] == "needs_adjudication"
    versions = ada.get(seg_url(FIRST) + "/versions").json()
    assert versions["annotators"] == ["ann", "bob"]
    assert versions["copies"]["ann"][0]["tone_of_voice"] == "icy" and versions["copies"]["bob"][0]["tone_of_voice"] == "weary"
    final_row = versions["final"]["rows"][0]
    assert final_row["values"]["target"] == ["Sam"]  # where the annotators agree, the final copy starts agreed
    assert final_row["values"]["tone_of_voice"] == final_row["draft"]["tone_of_voice"]
    assert ada.save(1, {"tone_of_voice": "weary"}, 0, copy="final").status_code == 200
    assert ada.verify(copy="final").status_code == 200
    exported = [json.loads(line) for line in ada.get("/api/export").text.splitlines()]
    assert exported[0]["rows"][0]["tone_of_voice"] == "weary" and exported[0]["rows"][0]["target"] == ["Sam"]
    provenance = ada.get("/api/export?provenance=true").json()["segments"][0]
    assert provenance["source"] == "adjudicated" and provenance["adjudicated_by"] == "ada"
    # the final copy took the agreed target without an edit; verifying stored it, and the audit log says so
    adopted = [(e["field"], e["new"]) for e in ada.get(seg_url(FIRST) + "/rows/1/audit").json() if e["action"] == "row.adopt"]
    assert adopted == [("target", ["Sam"])]


def test_agreement_and_draft_acceptance_per_field(app):
    ann, bob = _two_annotators(app)
    # ann keeps the draft; bob changes the relation pattern on rows 1-2 and the target on row 1
    assert bob.save(1, {"relation_pattern": "attack_attack", "target": ["Sam"]}, 0).status_code == 200
    assert bob.save(2, {"relation_pattern": "attack_attack"}, 0).status_code == 200
    for client in (ann, bob):
        assert client.verify(SECOND).status_code == 200 and client.verify().status_code == 200
    result = Client(app, "ada").get("/api/agreement").json()
    fields = {f["field"]: f for f in result["fields"]}
    assert result["annotators"] == ["ann", "bob"]
    rows = result["rows"]
    assert fields["relation_pattern"]["units"] == rows
    assert fields["relation_pattern"]["percent_agreement"] == pytest.approx((rows - 2) / rows)
    assert fields["primary_speaker"]["percent_agreement"] == 1.0
    assert fields["relation_pattern"]["alpha"] is not None and fields["relation_pattern"]["alpha"] < 1
    assert fields["intensity"]["level"] == "interval"
    kept = {a["field"]: a for a in result["draft_acceptance"]}
    assert kept["relation_pattern"]["ratings"] == 2 * rows and kept["relation_pattern"]["unchanged"] == 2 * rows - 2
    assert kept["target"]["unchanged"] == 2 * rows - 1
    csv_text = Client(app, "ada").get("/api/agreement?format=csv").text
    assert csv_text.splitlines()[0].startswith("field,level,units,alpha,percent_agreement")
    assert any(line.startswith("relation_pattern,nominal,") for line in csv_text.splitlines())


def test_dashboard_counts(app):
    ann, bob = _two_annotators(app)
    ann.verify()
    ann.write("POST", seg_url(SECOND) + "/discard", {"reason": "video_evidence"})
    bob.write("POST", seg_url(SECOND) + "/discard", {"reason": "incomplete_context"})
    ann.write("POST", seg_url(FIRST) + "/comments", {"text": "fine"})
    from rescue.review.progress import dashboard

    with app.state.sessions() as db:
        numbers = dashboard(db, app.state.project, [("ann", "annotator"), ("bob", "annotator")])
    assert numbers["segments"] == 4 and numbers["discarded_segments"] == 1 and numbers["commented_segments"] == 1
    seconds = len(app.state.project.segments[SECOND].rows)
    assert numbers["reviewed_rows"] == seconds and numbers["remaining_rows"] == numbers["rows"] - seconds
    per = {a["name"]: a for a in numbers["annotators"]}
    assert per["ann"]["verified"] == 1 and per["ann"]["discarded"] == 1
    page = ann.get("/").text
    assert "remaining rows" in page and FIRST in page


# --- media -----------------------------------------------------------------------------------------------------------


def test_media_answers_range_requests(ann):
    url = ann.segment()["media"]["clip"]
    whole = ann.get(url)
    assert whole.status_code == 200 and whole.headers["content-type"] == "video/mp4"
    part = ann.get(url, headers={"Range": "bytes=100-199"})
    assert part.status_code == 206 and len(part.content) == 100 and part.content == whole.content[100:200]
    assert part.headers["content-range"].startswith("bytes 100-199/")
    assert ann.get(ann.segment()["media"]["subtitles"]).text.startswith("WEBVTT")


def test_media_outside_the_project_is_refused(ann, project, tmp_path):
    outside = tmp_path / "secret.mp4"
    outside.write_bytes(b"secret")
    link = project / "clips" / "link.mp4"
    os.symlink(outside, link)
    try:
        for path in ["../../etc/passwd", "%2e%2e/%2e%2e/etc/passwd", "..%2f..%2fetc%2fpasswd", "%252e%252e/x",
                     "clips/..%5c..%5cx", "/etc/passwd", "review.db", "draft.jsonl", "manifest.json", "clips/link.mp4"]:
            answer = ann.http.get("/media/" + path)
            assert answer.status_code in (403, 404), path
            assert b"secret" not in answer.content and b"root:" not in answer.content
    finally:
        link.unlink()  # the project is shared by the whole run


def test_a_manifest_path_pointing_out_is_refused_at_load(tmp_path):
    from rescue.review.project import ProjectError, load_project

    proj = make_review_project(tmp_path / "p", demo_samples()[:1], media=False)
    manifest = {"version": 1, "segments": [{"sample_id": FIRST, "clip": "../outside.mp4"}]}
    (proj / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ProjectError, match=r"segments\[0\]\.clip"):
        load_project(proj)


def test_a_symlinked_clip_pointing_out_is_not_served(tmp_path):
    proj = make_review_project(tmp_path / "p", demo_samples()[:1], media=False)
    (tmp_path / "outside.mp4").write_bytes(b"outside")
    (proj / "clips").mkdir()
    os.symlink(tmp_path / "outside.mp4", proj / "clips" / "a.mp4")
    (proj / "manifest.json").write_text(json.dumps({"version": 1, "segments": [{"sample_id": FIRST, "clip": "clips/a.mp4"}]}))
    client = Client(make_app(proj, tmp_path / "db.sqlite"), "ann")
    answer = client.get(client.segment()["media"]["clip"])
    assert answer.status_code == 403 and answer.content != b"outside"


# --- draft-only folders, escaping, bad input --------------------------------------------------------------------


def test_a_folder_with_only_draft_jsonl_is_reviewable(tmp_path):
    proj = make_review_project(tmp_path / "p", media=False)
    client = Client(make_app(proj, tmp_path / "db.sqlite"), "ann")
    seg = client.segment()
    assert seg["media"] == {"clip": None, "subtitles": None} and len(seg["rows"]) == 24
    assert client.save(1, {"target": ["Sam"]}, 0).status_code == 200


def test_the_real_samples_are_reviewable(real_data_path, tmp_path):
    proj = tmp_path / "real"
    proj.mkdir()
    (proj / "draft.jsonl").write_bytes(real_data_path.read_bytes())
    client = Client(make_app(proj, tmp_path / "db.sqlite"), "ann")
    listing = client.get("/api/segments").json()
    assert listing
    seg = client.segment(listing[0]["sample_id"])
    assert seg["rows"] and all(r["values"] == r["draft"] for r in seg["rows"])


def test_text_from_data_is_escaped_in_every_page(tmp_path):
    samples = demo_samples()[:1]
    evil = "<script>alert(1)</script>"
    samples[0]["sample_id"] = "couple/" + evil
    samples[0]["rows"][0]["dialogue_cleaned"] = evil
    proj = make_review_project(tmp_path / "p", samples, media=False)
    client = Client(make_app(proj, tmp_path / "db.sqlite"), "ada")
    sid = samples[0]["sample_id"]
    client.write("POST", seg_url(sid) + "/comments", {"text": evil})
    for page in ["/", "/segments/" + sid.replace("<", "%3C").replace(">", "%3E"), "/agreement"]:
        html = client.get(page).text
        assert evil not in html, page
    assert "&lt;script&gt;" in client.get("/").text
    assert "default-src 'self'" in client.get("/").headers["content-security-policy"]


def test_bad_project_folders_are_clear_errors(tmp_path):
    from rescue.review.project import ProjectError, load_project

    with pytest.raises(ProjectError, match="draft.jsonl: missing"):
        load_project(tmp_path)
    (tmp_path / "draft.jsonl").write_text('{"sample_id": "a/b", "rows": []}\nnot json\n')
    with pytest.raises(ProjectError, match=r"draft.jsonl:2"):
        load_project(tmp_path)
    (tmp_path / "draft.jsonl").write_text('{"rows": 3}\n')
    with pytest.raises(ProjectError, match="not a sample"):
        load_project(tmp_path)


# --- CLI -------------------------------------------------------------------------------------------------------------


def test_cli_user_add_assign_and_export(tmp_path):
    from rescue.cli import app as cli

    proj = make_review_project(tmp_path / "p", demo_samples()[:2], media=False)
    runner = CliRunner()
    for name, role in (("ann", "annotator"), ("ada", "adjudicator")):
        result = runner.invoke(cli, ["review", "user", "add", str(proj), name, "--role", role, "--password-stdin"],
                               input=PASSWORD + "\n")
        assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["review", "user", "add", str(proj), "ann", "--password-stdin"], input=PASSWORD + "\n")
    assert result.exit_code != 0 and "already exists" in str(result.exception or result.output)
    assert runner.invoke(cli, ["review", "assign", str(proj), "--k", "1"]).exit_code == 0
    from rescue.review.app import create_app

    client = Client(create_app(proj), "ann")
    assert client.save(1, {"target": ["Sam"]}, 0).status_code == 200 and client.verify().status_code == 200
    out = tmp_path / "out" / "verified.jsonl"
    result = runner.invoke(cli, ["review", "export", str(proj), "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = validate_path(out)
    assert not report.errors and [s.sample_id for s in report.samples] == [FIRST]
    sidecar = json.loads((out.parent / "verified.provenance.json").read_text())
    assert sidecar["segments"][0]["verified_by"] == ["ann"]
    # Export files follow the umask, as every other file rescue writes (they were 0600; issue #20, item 7).
    umask = os.umask(0o022)
    os.umask(umask)
    for written in (out, out.parent / "verified.provenance.json"):
        assert written.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.slow
def test_cli_serve_binds_to_localhost_and_serves_the_folder(tmp_path):
    import subprocess
    import sys
    import time

    import httpx

    proj = make_review_project(tmp_path / "p", demo_samples()[:1], media=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    server = subprocess.Popen([sys.executable, "-m", "rescue", "review", "serve", str(proj), "--port", str(port)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120  # a loaded machine can take many seconds to start it
        while True:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/api/segments", timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
                time.sleep(0.2)
        assert answer.status_code == 401
        assert _listening_addresses(port) in ([], ["127.0.0.1"])  # [] where /proc/net/tcp is not there
    finally:
        server.terminate()
        output = server.communicate(timeout=60)[0]
    assert "no accounts yet" in output and f"http://127.0.0.1:{port}/" in output


def _listening_addresses(port: int) -> list[str]:
    """IPv4 addresses listening on ``port``, from Linux's /proc/net/tcp."""
    table = Path("/proc/net/tcp")
    if not table.exists():
        return []
    found = []
    for line in table.read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:
            found.append(".".join(str(int(address[i : i + 2], 16)) for i in (6, 4, 2, 0)))
    return found


@pytest.mark.parametrize(
    ("url", "message"),
    [("nonsense", "not a usable SQLAlchemy URL"), ("nosuchdb://x/y", "not a usable SQLAlchemy URL"),
     ("postgresql+nosuchdriver://u:secret@localhost/db", "not a usable SQLAlchemy URL"),
     ("sqlite:////nonexistent/folder/review.db", "cannot open the database")],
)
def test_a_bad_db_url_is_a_clear_error(tmp_path, url, message):
    from rescue.review.db import DatabaseError, make_engine

    with pytest.raises(DatabaseError, match=message) as caught:
        make_engine(url)
    assert "secret" not in str(caught.value)


def test_a_missing_database_driver_is_a_clear_error():
    import importlib.util

    from rescue.review.db import DatabaseError, make_engine

    url = next((f"postgresql+{driver}://lab:secret@127.0.0.1:1/review" for driver, module in
                (("psycopg", "psycopg"), ("pg8000", "pg8000"), ("asyncpg", "asyncpg")) if importlib.util.find_spec(module) is None),
               None)
    if url is None:
        pytest.skip("every PostgreSQL driver tried is installed here")
    with pytest.raises(DatabaseError, match=r"driver is not installed.*rescue-bench\[review-pg\]") as caught:
        make_engine(url)
    assert "secret" not in str(caught.value)


def test_an_unreachable_postgresql_server_is_a_clear_error():
    import importlib.util

    from rescue.review.db import DatabaseError, make_engine

    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("psycopg (the review-pg extra) is not installed")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DatabaseError, match="cannot open the database") as caught:
        make_engine(f"postgresql://lab:secret@127.0.0.1:{port}/review")  # a bare postgresql:// means psycopg 3
    assert "secret" not in str(caught.value) and "postgresql+psycopg" in str(caught.value)


@pytest.mark.slow
def test_cli_bad_folder_exits_2_without_a_traceback(tmp_path):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "rescue", "review", "export", str(tmp_path / "nope"), "--out",
                             str(tmp_path / "v.jsonl")], capture_output=True, text=True, check=False,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")})
    assert result.returncode == 2 and "Traceback" not in result.stderr and "no such project folder" in result.stderr
    assert not (tmp_path / "v.jsonl").exists()


def test_text_the_database_cannot_store_is_refused_naming_the_field(app):
    """PostgreSQL's text columns cannot hold a NUL character (SQLite's can): a 4xx on every backend, never a 500,
    and nothing stored."""
    from fastapi.testclient import TestClient

    ann, root = Client(app, "ann"), Client(app, "root")
    nul = "a\x00b"
    answer = ann.write("POST", seg_url(FIRST) + "/comments", {"text": nul})
    assert answer.status_code == 422 and "text" in answer.text
    answer = ann.write("POST", seg_url(FIRST) + "/discard", {"reason": "other", "comment": nul})
    assert answer.status_code == 422 and "comment" in answer.text
    assert root.write("POST", "/api/users", {"name": nul, "role": "annotator", "password": PASSWORD}).status_code == 422
    assert TestClient(app).post("/api/login", json={"name": nul, "password": PASSWORD}).status_code in (401, 422)
    assert Client(app, "ada").get(seg_url(FIRST) + "?copy=" + "a%00b").status_code in (404, 422)
    assert ann.get(seg_url("a\x00b")).status_code in (404, 422)
    assert ann.save(1, {"tone_of_voice": nul}, 0).status_code in (200, 422)  # stored as JSON, where NUL is escaped
    seg = ann.segment()
    assert seg["comments"] == [] and seg["status"]["status"] == "open"


def test_a_sample_id_with_a_nul_character_is_a_clear_error_at_load(tmp_path):
    from rescue.review.project import ProjectError, load_project

    samples = demo_samples()[:1]
    samples[0]["sample_id"] = "couple/a\x00b"
    proj = make_review_project(tmp_path / "p", samples, media=False)
    with pytest.raises(ProjectError, match=r"draft.jsonl:1.*NUL"):
        load_project(proj)
