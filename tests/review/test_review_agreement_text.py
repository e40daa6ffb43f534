"""Agreement on every field: free-text fields (exact after normalisation, token overlap) beside alpha, and time
per row per annotator from the audit log, through the real app."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from review_helpers import FIRST, Client

from rescue.metrics.agreement import text_agreement, text_tokens, token_overlap


def test_text_normalisation_and_token_overlap():
    assert text_tokens("Leans  IN, arms crossed… Don’t!") == ["leans", "in", "arms", "crossed", "don't"]
    assert token_overlap("arms crossed", "Crossed, arms.") == 1.0
    assert token_overlap("a b c", "a d") == pytest.approx(0.4)  # 1 shared: precision 1/2, recall 1/3
    assert token_overlap("", "") == 1.0 and token_overlap("", "x") == 0.0
    result = text_agreement([["Tense.", "tense"], ["flat voice", "warm voice", "flat voice"], ["only one"]])
    assert result["units"] == 2 and result["exact"] == 0.5
    assert result["token_overlap"] == pytest.approx((1.0 + (0.5 + 1.0 + 0.5) / 3) / 2)
    assert text_agreement([]) == {"units": 0, "exact": None, "token_overlap": None}


@pytest.fixture
def project(small_project):
    return small_project


def test_text_fields_are_measured_beside_alpha(app):
    root = Client(app, "root")
    root.write("POST", "/api/assignments", {"k": 2, "annotators": ["ann", "bob"]})
    ann, bob = Client(app, "ann"), Client(app, "bob")
    draft = ann.segment()["rows"][0]["values"]
    assert ann.save(1, {"tone_of_voice": "Sharp, rising."}, 0).status_code == 200
    assert bob.save(1, {"tone_of_voice": "sharp rising",
                        "body_posture": [{"person": "Riley", "description": "arms crossed, leaning away"}]}, 0).status_code == 200
    assert ann.save(2, {"viewpoints_attitudes": [{"source": "Sam", "target": "Riley", "viewpoint": "she nags",
                                                   "attitude": "defensive"}]}, 0).status_code == 200
    for client in (ann, bob):
        assert client.verify().status_code == 200
    result = Client(app, "ada").get("/api/agreement").json()
    texts = {t["field"]: t for t in result["text_fields"]}
    assert {"tone_of_voice", "body_posture", "facial_expressions", "viewpoints_attitudes", "interaction_behavior",
            "emotion_text", "strategy_content"} <= set(texts)
    rows = result["rows"]
    tone = texts["tone_of_voice"]
    assert tone["level"] == "text" and tone["units"] == rows
    assert tone["exact"] == 1.0 and tone["token_overlap"] == 1.0  # "Sharp, rising." and "sharp rising" agree
    assert tone["unchanged"] == 2 * rows - 2  # both changed row 1's tone from the draft
    posture = texts["body_posture"]
    assert posture["exact"] == pytest.approx((rows - 1) / rows) and posture["token_overlap"] < 1.0
    views = texts["viewpoints_attitudes"]
    assert views["exact"] == pytest.approx((rows - 1) / rows)
    assert draft["tone_of_voice"] != "Sharp, rising."
    csv_text = Client(app, "ada").get("/api/agreement?format=csv").text
    line = next(x for x in csv_text.splitlines() if x.startswith("tone_of_voice,text,"))
    assert line.endswith(",1.0000")
    page = Client(app, "ada").get("/agreement").text
    assert 'id="text-agreement"' in page and 'id="lead-time"' in page


def test_time_per_row_per_annotator_comes_from_the_audit(app):
    """The audit's times are set to a known schedule after the real actions, so the numbers are exact."""
    from rescue.review.models import AuditEntry

    ann = Client(app, "ann")  # login
    assert ann.save(1, {"tone_of_voice": "a"}, 0).status_code == 200
    assert ann.save(2, {"tone_of_voice": "b"}, 0).status_code == 200
    assert ann.save(3, {"tone_of_voice": "c"}, 0).status_code == 200
    assert ann.verify().status_code == 200
    start = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    # login 0 s; row 1 at 30 s; row 2 at 50 s; a break; row 3 at 50 s + 20 min; verify 10 s later
    offsets = {"login": [0], "row.edit": [30, 50, 1250], "row.accept": [30, 50, 1250], "segment.verified": [1260]}
    with app.state.sessions() as db:
        seen: dict[str, int] = {}
        for entry in db.query(AuditEntry).filter(AuditEntry.user == "ann").order_by(AuditEntry.id):
            k = seen.get(entry.action, 0)
            seen[entry.action] = k + 1
            if entry.action in offsets:
                entry.at = (start + timedelta(seconds=offsets[entry.action][min(k, len(offsets[entry.action]) - 1)])).isoformat()
        db.commit()
    result = Client(app, "ada").get("/api/agreement").json()
    ann_time = next(t for t in result["time"] if t["annotator"] == "ann")
    rows = len(app.state.project.segments[FIRST].rows)
    # 30 + 20 (rows 1, 2) + 0 (the 20-minute break) + 10 (verify); accept entries share their edit's time
    assert ann_time["active_seconds"] == 60 and ann_time["segments"] == 1 and ann_time["rows"] == rows
    assert ann_time["seconds_per_row"] == pytest.approx(60 / rows)
    assert ann_time["rows_worked"] == 3 and ann_time["median_row_seconds"] == 20
    assert ann_time["role"] == "annotator" and result["idle_seconds"] == 300
