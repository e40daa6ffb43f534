"""Re-cutting rows through the review API (split, merge, insert, delete, boundary moves): versioned, audited,
conflict-checked, exported with consistent row numbers, and aligned by time for agreement."""

from __future__ import annotations

import json
from typing import Any

import pytest
from review_helpers import FIRST, Client, make_app, seg_url

from rescue.data.validation import validate_path
from rescue.review import cuts
from rescue.testing.review_project import make_review_project


@pytest.fixture
def db_url(review_db_url):
    return review_db_url


def cut(client: Client, action: str, body: dict[str, Any], row: int | None = None, copy: str | None = None):  # type: ignore[no-untyped-def]
    url = seg_url(FIRST) + "/rows" + (f"/{row}" if row is not None else "") + (f"/{action}" if action in ("split", "merge") else "")
    url += f"?copy={copy}" if copy else ""
    method = {"split": "POST", "merge": "POST", "insert": "POST", "delete": "DELETE"}[action]
    return client.write(method, url, body)


def spans(segment: dict[str, Any]) -> list[tuple[int, float, float]]:
    return [(r["row_index"], r["start_time"], r["end_time"]) for r in segment["rows"]]


def test_split_a_row_at_a_time_renumbers_the_rest_and_is_audited(ann):
    before = ann.segment()
    row = before["rows"][1]
    middle = round((row["start_time"] + row["end_time"]) / 2, 3)
    text = row["values"]["dialogue_cleaned"]
    answer = cut(ann, "split", {"layout": 0, "version": 0, "at": middle, "text_at": len(text) // 2}, row=2)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["layout"] == 1 and body["row_index"] == 2
    after = body["segment"]
    assert after["layout"] == 1 and len(after["rows"]) == len(before["rows"]) + 1
    assert [r["row_index"] for r in after["rows"]] == list(range(1, len(after["rows"]) + 1))
    first, second = after["rows"][1], after["rows"][2]
    assert (first["start_time"], first["end_time"], second["start_time"], second["end_time"]) == (
        row["start_time"], middle, middle, row["end_time"])
    assert first["values"]["dialogue_cleaned"] + " " + second["values"]["dialogue_cleaned"] == " ".join(
        [text[: len(text) // 2].rstrip(), text[len(text) // 2:].lstrip()])
    assert first["values"]["primary_speaker"] == second["values"]["primary_speaker"] == row["values"]["primary_speaker"]
    # the rows after the cut moved: their draft is still the draft row they came from, its evidence references
    # read in the copy's numbering (as the cut renumbered the row's own): not an edit
    moved, came_from = after["rows"][3]["draft"], before["rows"][2]["draft"]
    assert {k: v for k, v in moved.items() if k not in cuts.EVIDENCE} == {
        k: v for k, v in came_from.items() if k not in cuts.EVIDENCE} and after["rows"][3]["values"]["row_index"] == 4
    assert all(moved.get(k) == after["rows"][3]["values"].get(k) for k in cuts.EVIDENCE)
    assert ann.segment() == after
    log = ann.get(seg_url(FIRST) + "/audit").json()
    assert [(e["action"], e["row_index"], e["new"]["rows"]) for e in log if e["action"].startswith("row.")] == [
        ("row.split", 2, len(after["rows"]))]


def test_a_cut_from_a_stale_layout_or_row_version_is_a_409(ann, app):
    other = Client(app, "ann")  # the same annotator in a second tab
    row = ann.segment()["rows"][0]
    assert cut(ann, "split", {"layout": 0, "version": 0, "at": row["start_time"] + 0.5}, row=1).status_code == 200
    stale = cut(other, "delete", {"layout": 0, "version": 0}, row=3)
    assert stale.status_code == 409 and stale.json()["layout"] == 1
    # a field save with the pre-cut version of a row that moved is refused too, never written to another row
    moved = other.save(3, {"tone_of_voice": "stale"}, 0)
    assert moved.status_code == 409 and moved.json()["layout"] == 1  # the page reloads rather than merge
    assert moved.json()["current"]["version"] >= 1
    fresh = ann.segment()
    assert all(r["values"]["tone_of_voice"] != "stale" for r in fresh["rows"])
    wrong_version = cut(ann, "delete", {"layout": 1, "version": 7}, row=3)
    assert wrong_version.status_code == 409 and wrong_version.json()["current"]["row_index"] == 3
    assert cut(ann, "delete", {"layout": 1, "version": fresh["rows"][2]["version"]}, row=3).status_code == 200


def test_merge_two_rows_keeps_both_dialogues_and_the_span(ann):
    before = ann.segment()
    a, b = before["rows"][2], before["rows"][3]
    answer = cut(ann, "merge", {"layout": 0, "version": 0, "next_version": 0}, row=3)
    assert answer.status_code == 200, answer.text
    after = answer.json()["segment"]
    merged = after["rows"][2]
    assert len(after["rows"]) == len(before["rows"]) - 1
    assert (merged["start_time"], merged["end_time"]) == (a["start_time"], max(a["end_time"], b["end_time"]))
    assert merged["values"]["dialogue_cleaned"] == f"{a['values']['dialogue_cleaned']} {b['values']['dialogue_cleaned']}"
    assert after["rows"][3]["values"]["dialogue_cleaned"] == before["rows"][4]["values"]["dialogue_cleaned"]
    last = len(after["rows"])
    refused = cut(ann, "merge", {"layout": 1, "version": after["rows"][-1]["version"], "next_version": 0}, row=last)
    assert refused.status_code == 404


def test_insert_a_row_for_missed_speech_and_delete_it(ann):
    before = ann.segment()
    gap_start = before["rows"][0]["start_time"] + 0.2
    answer = cut(ann, "insert", {"layout": 0, "start_time": gap_start, "end_time": gap_start + 1.0,
                                 "primary_speaker": "Sam", "dialogue_cleaned": "(mumbles)"})
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["row_index"] == 2
    new = body["segment"]["rows"][1]
    assert new["values"]["primary_speaker"] == "Sam" and new["values"]["dialogue_cleaned"] == "(mumbles)"
    assert new["values"]["target"] == [] and new["accepted"] == []
    # the new row is edited like any other
    assert ann.save(2, {"target": ["Riley"]}, new["version"]).status_code == 200
    version = ann.segment()["rows"][1]["version"]
    gone = cut(ann, "delete", {"layout": 1, "version": version}, row=2)
    assert gone.status_code == 200
    assert spans(gone.json()["segment"]) == spans(before)
    actions = [e["action"] for e in ann.get(seg_url(FIRST) + "/audit").json()]
    assert actions == ["row.insert", "row.edit", "row.accept", "row.delete"]


@pytest.mark.parametrize(("body", "field"), [
    ({"start_time": 5.0, "end_time": 4.0}, "end_time"),
    ({"start_time": -1.0, "end_time": 1.0}, "start_time"),
])
def test_a_bad_insert_is_a_422_naming_the_field(ann, body, field):
    answer = cut(ann, "insert", {"layout": 0, **body})
    assert answer.status_code == 422
    assert field in json.dumps(answer.json())


def test_a_split_outside_the_row_is_a_422(ann):
    row = ann.segment()["rows"][0]
    answer = cut(ann, "split", {"layout": 0, "version": 0, "at": row["end_time"] + 3}, row=1)
    assert answer.status_code == 422, answer.text
    assert answer.json()["problems"][0]["field"] == "at", answer.text


def test_moving_a_boundary_is_a_versioned_audited_save(ann):
    rows = ann.segment()["rows"]
    new_end = round(rows[1]["end_time"] - 0.3, 3)
    answer = ann.save(2, {"end_time": new_end}, 0)
    assert answer.status_code == 200, answer.text
    row = ann.segment()["rows"][1]
    assert row["end_time"] == new_end and row["version"] == 1
    assert "end_time" not in row["accepted"]  # a span is not a field one accepts
    assert ann.save(2, {"end_time": 1.0}, 0).status_code == 409
    edits = [(e["field"], e["old"], e["new"]) for e in ann.get(seg_url(FIRST) + "/rows/2/audit").json()
             if e["action"] == "row.edit"]
    assert edits == [("end_time", rows[1]["end_time"], new_end)]


@pytest.mark.parametrize(("fields", "named"), [
    ({"end_time": 0.0}, "end_time"),
    ({"start_time": 10_000.0}, "start_time"),  # past the next row's start
    ({"start_time": -2.0}, "start_time"),
])
def test_a_boundary_out_of_order_is_a_422(ann, fields, named):
    answer = ann.save(3, fields, 0)
    assert answer.status_code == 422, answer.text
    assert named in {p["field"] for p in answer.json()["problems"]}


def _two_annotators(app):  # type: ignore[no-untyped-def]
    Client(app, "root").write("POST", "/api/assignments", {"k": 2, "annotators": ["ann", "bob"]})
    return Client(app, "ann"), Client(app, "bob")


def test_a_recut_copy_exports_valid_with_consistent_row_numbers(app, tmp_path):
    ann, bob = _two_annotators(app)
    for client in (ann, bob):
        row = client.segment()["rows"][0]
        at = round(row["start_time"] + 0.5, 3)
        assert cut(client, "split", {"layout": 0, "version": 0, "at": at}, row=1).status_code == 200
        assert client.save(4, {"relation_pattern_evidence_rows": [1, 3]},
                           client.segment()["rows"][3]["version"]).status_code == 200
        assert client.verify().status_code == 200, client.verify().text
    ada = Client(app, "ada")
    out = tmp_path / "verified.jsonl"
    out.write_text(ada.get("/api/export").text)
    report = validate_path(out)
    assert not report.errors
    sample = json.loads(out.read_text().splitlines()[0])
    assert [r["row_index"] for r in sample["rows"]] == list(range(1, len(sample["rows"]) + 1))
    assert sample["rows"][3]["relation_pattern_evidence_rows"] == [1, 3]
    entry = ada.get("/api/export?provenance=true").json()["segments"][0]
    assert entry["recut"] == {"draft_rows": len(sample["rows"]) - 1, "rows": len(sample["rows"])}
    assert 4 in {c["row_index"] for c in entry["changes_from_draft"] if c["field"] == "relation_pattern_evidence_rows"}


def test_agreement_aligns_copies_with_different_cuts_by_time(app):
    ann, bob = _two_annotators(app)
    draft = ann.segment()["rows"]
    # ann splits row 2 and relabels both halves; bob keeps the draft's cut and relabels row 2 the same way
    middle = round((draft[1]["start_time"] + draft[1]["end_time"]) / 2 + 0.2, 3)
    assert cut(ann, "split", {"layout": 0, "version": 0, "at": middle}, row=2).status_code == 200
    for index in (2, 3):
        version = ann.segment()["rows"][index - 1]["version"]
        assert ann.save(index, {"relation_pattern": "attack_attack"}, version).status_code == 200
    assert bob.save(2, {"relation_pattern": "attack_attack"}, 0).status_code == 200
    for client in (ann, bob):
        assert client.verify().status_code == 200
    result = Client(app, "ada").get("/api/agreement").json()
    fields = {f["field"]: f for f in result["fields"]}
    assert result["rows"] == len(draft)  # the units are the draft's rows
    assert fields["relation_pattern"]["percent_agreement"] == 1.0
    assert fields["primary_speaker"]["percent_agreement"] == 1.0


def test_a_deleted_row_is_missing_for_that_annotator_in_agreement(app):
    ann, bob = _two_annotators(app)
    assert cut(ann, "delete", {"layout": 0, "version": 0}, row=2).status_code == 200
    for client in (ann, bob):
        assert client.verify().status_code == 200
    result = Client(app, "ada").get("/api/agreement").json()
    rows = len(bob.segment()["rows"])
    assert {f["field"]: f["units"] for f in result["fields"]}["primary_speaker"] == rows - 1


def test_evidence_references_follow_the_cut():
    rows = [cuts.blank_row(i, i + 1.0) for i in range(4)]
    rows = cuts._renumber(rows, lambda r: r)
    rows[3]["relation_pattern_evidence_rows"] = [2, 3]
    split = cuts.split(rows, 2, 1.5)
    assert split[4]["relation_pattern_evidence_rows"] == [2, 4] and split[4]["row_index"] == 5
    deleted = cuts.delete(rows, 2)
    assert deleted[2]["relation_pattern_evidence_rows"] == [2]
    merged = cuts.merge(rows, 2)
    assert merged[2]["relation_pattern_evidence_rows"] == [2]


def test_alignment_by_time_overlap():
    draft = cuts._renumber([cuts.blank_row(0, 2), cuts.blank_row(2, 4), cuts.blank_row(4, 4)], lambda r: r)
    recut = cuts._renumber([cuts.blank_row(0, 2), cuts.blank_row(2, 2.5), cuts.blank_row(2.5, 6)], lambda r: r)
    assert cuts.align(draft, recut) == [0, 2, 2]
    assert cuts.align(draft, draft) == [0, 1, 2]
    assert cuts.align(recut, draft) == [0, 1, 1]
    assert cuts.align(draft, [cuts.blank_row(10, 11)]) == [None, None, None]


def test_the_waveform_is_computed_once_from_the_clip_and_served_small(ann, project):
    answer = ann.get(seg_url(FIRST) + "/waveform")
    assert answer.status_code == 200, answer.text
    wave = answer.json()
    assert wave["fps"] == 5 and wave["rate"] == 50
    assert abs(len(wave["peaks"]) - wave["duration"] * wave["rate"]) <= 1
    assert max(wave["peaks"]) == 255 and len(answer.content) < 20_000  # the test clip is a steady tone
    cached = list((project / ".review-cache" / "waveforms").glob("*.json"))
    assert len(cached) >= 1
    # served from the cache: a changed cache file is what the next answer says
    for path in cached:
        path.write_text(json.dumps({**json.loads(path.read_text()), "peaks": [1, 2, 3]}))
    assert ann.get(seg_url(FIRST) + "/waveform").json()["peaks"] == [1, 2, 3]
    for path in cached:
        path.unlink()


def test_no_waveform_without_a_clip(tmp_path):
    app = make_app(make_review_project(tmp_path / "bare", media=False), tmp_path / "review.db")
    answer = Client(app, "ann").get(seg_url(FIRST) + "/waveform")
    assert answer.status_code == 404 and "no clip" in answer.json()["detail"]


@pytest.mark.slow
def test_concurrent_cuts_of_one_copy_lose_nothing(app):
    """Several clients cut the final copy at once: from one layout exactly one cut wins; inserting with a retry
    on 409 (taking the newer layout from the answer) keeps every confirmed row, each audited once."""
    from concurrent.futures import ThreadPoolExecutor

    clients = [Client(app, name) for name in ("ada", "root", "ada", "root", "ada", "root")]
    draft = clients[0].segment(copy="final")["rows"]
    at = draft[-1]["start_time"] + 0.1  # after the last row's start (so the new rows come last), inside the media
    with ThreadPoolExecutor(len(clients)) as pool:
        first = list(pool.map(lambda c: cut(c, "insert", {"layout": 0, "start_time": at, "end_time": at + 0.5,
                                                         "dialogue_cleaned": "first"}, copy="final").status_code, clients))
    assert sorted(first) == [201] + [409] * (len(clients) - 1)

    def insert(job: tuple[int, Client]) -> list[str]:
        number, client = job
        done, layout = [], 1
        for n in range(3):
            words = f"c{number}-{n}"
            while True:
                answer = cut(client, "insert", {"layout": layout, "start_time": at + 0.05 + number / 10 + n / 100,
                                                "end_time": at + 0.1 + number / 10 + n / 100, "dialogue_cleaned": words},
                             copy="final")
                if answer.status_code == 201:
                    layout = answer.json()["layout"]
                    done.append(words)
                    break
                assert answer.status_code == 409, answer.text
                layout = answer.json()["layout"]
        return done

    with ThreadPoolExecutor(len(clients)) as pool:
        confirmed = [w for words in pool.map(insert, enumerate(clients)) for w in words]
    rows = clients[0].segment(copy="final")["rows"]
    texts = [r["values"]["dialogue_cleaned"] for r in rows[len(draft):]]
    assert sorted(texts) == sorted(["first", *confirmed]) and len(confirmed) == 3 * len(clients)
    assert [r["start_time"] for r in rows] == sorted(r["start_time"] for r in rows)
    inserts = [e for e in clients[0].get(seg_url(FIRST) + "/audit").json() if e["action"] == "row.insert"]
    assert len(inserts) == 1 + len(confirmed)


def test_a_save_racing_a_split_lands_on_its_row_or_is_refused(app):
    from concurrent.futures import ThreadPoolExecutor

    ann, tab = Client(app, "ann"), Client(app, "ann")
    rows = ann.segment()["rows"]
    at = round((rows[0]["start_time"] + rows[0]["end_time"]) / 2, 3)
    with ThreadPoolExecutor(2) as pool:
        split = pool.submit(cut, ann, "split", {"layout": 0, "version": 0, "at": at}, 1)
        saved = pool.submit(tab.save, 3, {"tone_of_voice": "raced"}, 0)
        split_status, save_status = split.result().status_code, saved.result().status_code
    assert split_status == 200 and save_status in (200, 409), saved.result().text
    after = ann.segment()["rows"]
    holders = [r["values"]["dialogue_cleaned"] for r in after if r["values"]["tone_of_voice"] == "raced"]
    assert holders == ([rows[2]["values"]["dialogue_cleaned"]] if save_status == 200 else [])


def test_an_adjudicator_takes_an_annotators_cut_into_the_final_copy(app):
    ann, bob = _two_annotators(app)
    row = ann.segment()["rows"][1]
    middle = round((row["start_time"] + row["end_time"]) / 2, 3)
    assert cut(ann, "split", {"layout": 0, "version": 0, "at": middle}, row=2).status_code == 200
    assert ann.save(3, {"tone_of_voice": "second half"}, ann.segment()["rows"][2]["version"]).status_code == 200
    theirs = ann.segment()["rows"]
    ada = Client(app, "ada")
    url = seg_url(FIRST) + "/rows/take"
    assert ann.write("POST", url + "?copy=final", {"layout": 0, "source": "bob"}).status_code == 403
    assert ada.write("POST", url, {"layout": 0, "source": "ann"}).status_code == 422  # only into the final copy
    assert ada.write("POST", url + "?copy=final", {"layout": 0, "source": "zed"}).status_code == 404
    answer = ada.write("POST", url + "?copy=final", {"layout": 0, "source": "ann"})
    assert answer.status_code == 200, answer.text
    final = answer.json()["segment"]
    assert final["layout"] == 1 and [r["values"] for r in final["rows"]] == [r["values"] for r in theirs]
    assert ada.write("POST", url + "?copy=final", {"layout": 0, "source": "bob"}).status_code == 409
    take = [e for e in ada.get(seg_url(FIRST) + "/audit").json() if e["action"] == "rows.take"]
    assert len(take) == 1 and take[0]["new"]["rows"] == len(theirs) and take[0]["user"] == "ada"
    # the final copy, with ann's cut, verifies and exports
    assert ada.verify(copy="final").status_code == 200
    exported = [json.loads(line) for line in ada.get("/api/export").text.splitlines()]
    assert len(exported[0]["rows"]) == len(theirs) and exported[0]["rows"][2]["tone_of_voice"] == "second half"
