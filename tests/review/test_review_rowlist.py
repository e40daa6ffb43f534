"""What the row list says (issue #37 item 4), through the API: each row's ``origin`` says whether its span is the
draft's, was moved (``re-timed``) or came from a cut (``re-cut``); a merge that would make the first row's speaker
a target of their own row can leave the speaker out of the targets, in the same write."""

from __future__ import annotations

from review_helpers import FIRST, Client, seg_url

ROWS = seg_url(FIRST) + "/rows"


def origins(client: Client) -> list[str]:
    return [r["origin"] for r in client.segment()["rows"]]


def test_untouched_rows_say_draft_and_a_moved_boundary_says_re_timed(ann):
    seg = ann.segment()
    assert set(origins(ann)) == {"draft"}
    second = seg["rows"][1]
    assert ann.save(2, {"end_time": second["end_time"] - 0.5}, 0).status_code == 200
    assert origins(ann)[1] == "re-timed" and origins(ann).count("draft") == len(seg["rows"]) - 1
    assert ann.save(1, {"tone_of_voice": "flat"}, 0).status_code == 200  # an edit alone keeps the draft's span
    assert origins(ann)[0] == "draft"


def test_split_merge_and_insert_rows_say_re_cut_and_the_others_keep_theirs(ann):
    seg = ann.segment()
    count = len(seg["rows"])
    first = seg["rows"][0]
    at = round((first["start_time"] + first["end_time"]) / 2, 2)
    split = ann.write("POST", ROWS + "/1/split", {"layout": 0, "version": 0, "at": at})
    assert split.status_code == 200, split.text
    assert origins(ann) == ["re-cut", "re-cut", *["draft"] * (count - 1)]
    rows = ann.segment()["rows"]
    merged = ann.write("POST", ROWS + "/4/merge", {"layout": 1, "version": rows[3]["version"],
                                                   "next_version": rows[4]["version"]})
    assert merged.status_code == 200, merged.text
    assert origins(ann) == ["re-cut", "re-cut", "draft", "re-cut", *["draft"] * (count - 4)]
    last = ann.segment()["rows"][-1]
    inserted = ann.write("POST", ROWS, {"layout": 2, "start_time": last["end_time"] + 0.1,
                                        "end_time": last["end_time"] + 0.6})
    assert inserted.status_code == 201, inserted.text
    assert origins(ann)[-1] == "re-cut" and origins(ann)[2] == "draft"
    moved = ann.segment()["rows"][2]  # in a re-cut copy, a moved boundary still says re-timed
    assert ann.save(3, {"end_time": moved["end_time"] - 0.3}, moved["version"]).status_code == 200
    assert origins(ann)[2] == "re-timed"


def _therapist_then_client(seg: dict) -> int:
    """The first row of a pair: a Therapist row followed by a row that targets the Therapist."""
    rows = [r["values"] for r in seg["rows"]]
    return next(i for i in range(1, len(rows)) if rows[i - 1]["primary_speaker"] == "Therapist"
                and rows[i]["primary_speaker"] != "Therapist" and "Therapist" in rows[i]["target"])


def test_a_merge_of_a_therapist_row_and_a_client_row_can_leave_the_self_target_out(app):
    for drop, self_target in ((False, True), (True, False)):
        client = Client(app, "ann" if drop else "bob")
        seg = client.segment()
        i = _therapist_then_client(seg)
        body = {"layout": 0, "version": 0, "next_version": 0} | ({"drop_self_target": True} if drop else {})
        answer = client.write("POST", ROWS + f"/{i}/merge", body)
        assert answer.status_code == 200, answer.text
        row = answer.json()["segment"]["rows"][i - 1]
        assert row["values"]["primary_speaker"] == "Therapist"
        assert ("Therapist" in row["values"]["target"]) == self_target
        assert any(c["rule"] == "self-target" for c in row["checks"]) == self_target
        # the other targets of both rows stay
        both = set(seg["rows"][i - 1]["values"]["target"]) | set(seg["rows"][i]["values"]["target"])
        assert set(row["values"]["target"]) == both - ({"Therapist"} if drop else set())
        merges = [e for e in client.get(seg_url(FIRST) + "/audit").json() if e["action"] == "row.merge"]
        assert len(merges) == 1  # one write, fix included
        verified = client.verify()
        assert (verified.status_code == 422 and "self-target" in verified.text) == self_target, verified.text
