"""The rulebook in the review tool, through the real FastAPI app: a save that breaks an error rule is a 422
naming the field, a warning is shown on the row and must be fixed or acknowledged before verify, and the
final copy and the export hold the same rules."""

from __future__ import annotations

import json

import pytest
from review_helpers import FIRST, Client, make_app, seg_url

from rescue.testing.review_project import demo_samples, make_review_project

# Rows of the first demo segment: 1 Riley (client, target Therapist), 3 Therapist (target Couple, a strategy).
STRATEGY = {"provider": "Therapist", "strategy_type": "track", "target": ["Riley"], "strategy_content": "tracks"}


@pytest.fixture
def project(small_project):
    return small_project


@pytest.mark.parametrize(("row", "fields", "named", "rule"), [
    (1, {"target": ["Riley"]}, "target", "self-target"),
    (3, {"support_strategy": [{**STRATEGY, "target": ["Therapist"]}]}, "support_strategy[0].target", "self-target"),
    (1, {"viewpoints_attitudes": [{"source": "Riley", "target": "Riley", "viewpoint": "I am a mess", "attitude": "low"}]},
     "viewpoints_attitudes[0].target", "self-viewpoint"),
    (1, {"support_strategy": [STRATEGY]}, "support_strategy", "strategy-therapist-only"),
    (1, {"body_posture": [{"person": "", "description": ""}]}, "body_posture[0]", "blank-entry"),
    (1, {"interaction_behavior": [{"initiator": "Riley", "target": ["Riley"], "description": "x"}]},
     "interaction_behavior[0].target", "self-target"),
    (3, {"utterance_type": "request"}, "utterance_type", "therapist-utterance-type"),
    (3, {"support_strategy": [{**STRATEGY, "target": ["Couple", "Sam"]}]}, "support_strategy[0].target",
     "group-target-alone"),
])
def test_a_save_that_breaks_an_error_rule_is_a_422_naming_the_field(ann, row, fields, named, rule):
    answer = ann.save(row, fields, 0)
    assert answer.status_code == 422, answer.text
    problems = answer.json()["problems"]
    assert (named, rule) in [(p["field"], p.get("rule")) for p in problems]
    assert ann.segment()["rows"][row - 1]["version"] == 0  # nothing was written


def test_an_edit_that_brings_in_a_breach_elsewhere_in_the_row_is_refused(ann):
    # Riley's row targets Therapist: making Therapist the speaker makes the untouched target a self-target.
    answer = ann.save(1, {"primary_speaker": "Therapist", "utterance_type": ""}, 0)
    assert answer.status_code == 422 and ("target", "self-target") in [(p["field"], p.get("rule")) for p in answer.json()["problems"]]


def test_a_warning_is_shown_on_the_row_and_verify_waits_for_its_acknowledgement(ann):
    saved = ann.save(1, {"target": []}, 0)
    assert saved.status_code == 200, saved.text
    checks = saved.json()["checks"]
    assert [(c["rule"], c["field"], c["severity"], c["acknowledged"]) for c in checks] == [
        ("empty-target", "target", "warning", False)]
    row = ann.segment()["rows"][0]
    assert row["checks"] == checks and row["acknowledged"] == []
    refused = ann.verify()
    assert refused.status_code == 422
    assert [(p["row_index"], p["field"], p["key"]) for p in refused.json()["problems"]] == [(1, "target", "empty-target@target")]
    # an error cannot be acknowledged, nor a warning the row does not have
    assert ann.write("PUT", seg_url(FIRST) + "/rows/1", {"version": 1, "fields": {}, "acknowledged": ["self-target@target"]}).status_code == 422
    answer = ann.write("PUT", seg_url(FIRST) + "/rows/1", {"version": 1, "fields": {}, "acknowledged": ["empty-target@target"]})
    assert answer.status_code == 200 and answer.json()["checks"][0]["acknowledged"] is True
    assert ann.verify().status_code == 200
    log = ann.get(seg_url(FIRST) + "/rows/1/audit").json()
    assert [(e["old"], e["new"]) for e in log if e["action"] == "row.acknowledge"] == [([], ["empty-target@target"])]


def test_an_acknowledgement_lapses_with_its_warning(ann):
    assert ann.save(1, {"target": []}, 0).status_code == 200
    url = seg_url(FIRST) + "/rows/1"
    assert ann.write("PUT", url, {"version": 1, "fields": {}, "acknowledged": ["empty-target@target"]}).status_code == 200
    fixed = ann.write("PUT", url, {"version": 2, "fields": {"target": ["Sam"]}})
    assert fixed.status_code == 200 and fixed.json()["acknowledged"] == [] and fixed.json()["checks"] == []
    again = ann.write("PUT", url, {"version": 3, "fields": {"target": []}})
    assert again.json()["checks"][0]["acknowledged"] is False
    assert ann.verify().status_code == 422


def test_the_final_copy_holds_the_same_rules(app):
    ada = Client(app, "ada")
    assert ada.save(1, {"target": ["Riley"]}, 0, copy="final").status_code == 422
    assert ada.save(1, {"target": []}, 0, copy="final").status_code == 200
    assert ada.verify(copy="final").status_code == 422
    assert ada.write("PUT", seg_url(FIRST) + "/rows/1?copy=final",
                     {"version": 1, "fields": {}, "acknowledged": ["empty-target@target"]}).status_code == 200
    assert ada.verify(copy="final").status_code == 200


def test_a_draft_breach_blocks_verify_but_not_an_unrelated_save(tmp_path):
    samples = demo_samples()[:1]
    samples[0]["rows"][0]["target"] = ["Riley"]  # what a model draft (or an older tool) may hold
    client = Client(make_app(make_review_project(tmp_path / "p", samples, media=False), tmp_path / "db.sqlite"), "ann")
    assert [c["rule"] for c in client.segment()["rows"][0]["checks"]] == ["self-target"]
    assert client.save(1, {"tone_of_voice": "tense"}, 0).status_code == 200
    refused = client.verify()
    assert refused.status_code == 422 and refused.json()["problems"][0]["rule"] == "self-target"
    assert client.save(1, {"target": ["Sam"]}, 1).status_code == 200
    assert client.verify().status_code == 200


def test_export_refuses_a_verified_copy_that_breaks_a_rule(app, tmp_path):
    """A copy verified before the rule existed (written here straight into the database) is not exported."""
    from rescue.review.crud import verify
    from rescue.review.models import RowCopy

    ann = Client(app, "ann")
    assert ann.verify().status_code == 200
    with app.state.sessions() as db:
        stored = db.query(RowCopy).filter_by(segment_id=FIRST, copy="ann", row_index=1).one()
        values = json.loads(stored.values_json)
        stored.values_json = json.dumps({**values, "target": ["Riley"]})
        db.commit()
    answer = Client(app, "ada").get("/api/export")
    assert answer.status_code == 422
    assert [(p["field"], p["row_index"]) for p in answer.json()["problems"]] == [("target", 1)]
    with app.state.sessions() as db, pytest.raises(Exception, match="self-target"):
        verify(db, "ann", app.state.project.segments[FIRST], "ann")


def test_the_segment_carries_the_rulebook(ann):
    rules = {r["id"]: r for r in ann.segment()["rules"]}
    assert rules["self-target"]["severity"] == "error" and rules["empty-target"]["severity"] == "warning"


def test_a_database_from_before_the_rulebook_is_upgraded_in_place(tmp_path):
    """A lab's review.db made by the previous version lacks the new columns; opening it adds them, keeping rows."""
    import sqlite3

    from rescue.review.db import make_engine

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name VARCHAR(64) UNIQUE, role VARCHAR(16), "
                    "password_hash VARCHAR(255), created_at VARCHAR(40))")
        con.execute("CREATE TABLE row_copies (id INTEGER PRIMARY KEY, segment_id TEXT, copy VARCHAR(64), row_index "
                    "INTEGER, version INTEGER, values_json TEXT, accepted_json TEXT, updated_by VARCHAR(64), "
                    "updated_at VARCHAR(40), UNIQUE (segment_id, copy, row_index))")
        con.execute("INSERT INTO row_copies VALUES (1, 's/1', 'ann', 1, 3, '{}', '[]', 'ann', 'then')")
    make_engine(f"sqlite:///{path}").dispose()
    make_engine(f"sqlite:///{path}").dispose()  # a second start finds nothing to do
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT version, acknowledged_json FROM row_copies").fetchall() == [(3, "[]")]
        assert "disabled_at" in [c[1] for c in con.execute("PRAGMA table_info(users)")]


@pytest.mark.slow
def test_a_postgresql_database_from_before_the_rulebook_is_upgraded_in_place(postgres_url):
    from sqlalchemy import create_engine, text

    from rescue.review.db import make_engine, resolve_url

    old = create_engine(resolve_url(postgres_url))
    with old.begin() as con:
        con.execute(text("CREATE TABLE users (id SERIAL PRIMARY KEY, name VARCHAR(64) UNIQUE, role VARCHAR(16), "
                         "password_hash VARCHAR(255), created_at VARCHAR(40))"))
        con.execute(text("CREATE TABLE row_copies (id SERIAL PRIMARY KEY, segment_id TEXT, copy VARCHAR(64), row_index "
                         "INTEGER, version INTEGER, values_json TEXT, accepted_json TEXT, updated_by VARCHAR(64), "
                         "updated_at VARCHAR(40), UNIQUE (segment_id, copy, row_index))"))
        con.execute(text("INSERT INTO row_copies (segment_id, copy, row_index, version, values_json, accepted_json, "
                         "updated_by, updated_at) VALUES ('s/1', 'ann', 1, 3, '{}', '[]', 'ann', 'then')"))
    old.dispose()
    make_engine(postgres_url).dispose()
    make_engine(postgres_url).dispose()
    check = create_engine(resolve_url(postgres_url))
    with check.connect() as con:
        assert con.execute(text("SELECT version, acknowledged_json FROM row_copies")).all() == [(3, "[]")]
        assert con.execute(text("SELECT count(*) FROM information_schema.columns WHERE table_name = 'users' "
                                "AND column_name = 'disabled_at'")).scalar() == 1
    check.dispose()
