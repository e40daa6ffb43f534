"""Row references across copies cut differently (#42 item 9), through the real review app: taking an annotator's
fields into a final copy cut otherwise moves each evidence reference to the row that stands for it by time (it
wrote ``[8]/[11]/...`` as numbers, which then named other people's lines), or refuses the take; the final copy's
agreed values read a re-cut copy's references in the draft's numbering; rows whose references a split only
renumbered are not edits; a take naming rows that do not exist is a 422; a merge adds no field neither row held,
an undo's saves give a row back the accepted fields it had, and an undone merge gives each row back its own set
of fields (a save's ``remove``, refused where the release requires the field)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from review_helpers import FIRST, Client, seg_url

from rescue.data.validation import validate_path
from rescue.review.cuts import EVIDENCE

PATTERN, CYCLE = EVIDENCE


@pytest.fixture
def project(small_project: Path) -> Path:
    return small_project  # the demo's 24 rows, no clips: cuts need only the rows' times


def two_annotators(app: Any) -> tuple[Client, Client, Client]:
    Client(app, "root").write("POST", "/api/assignments", {"k": 2, "annotators": ["ann", "bob"]})
    return Client(app, "ann"), Client(app, "bob"), Client(app, "ada")


def split(client: Client, row: int, at: float, copy: str | None = None) -> dict[str, Any]:
    segment = client.segment(copy=copy)
    url = seg_url(FIRST) + f"/rows/{row}/split" + (f"?copy={copy}" if copy else "")
    answer = client.write("POST", url, {"layout": segment["layout"], "version": segment["rows"][row - 1]["version"],
                                        "at": at})
    assert answer.status_code == 200, answer.text
    return answer.json()["segment"]  # type: ignore[no-any-return]


def take(client: Client, kind: str, source: str, rows: list[int] | None = None, **extra: Any):  # type: ignore[no-untyped-def]
    final = client.segment(copy="final")
    body: dict[str, Any] = {"layout": final["layout"], "source": source}
    if kind == "take-fields":
        body["versions"] = {str(r["row_index"]): r["version"] for r in final["rows"]}
        if rows is not None:
            body["rows"] = rows
    body.update(extra)
    return client.write("POST", seg_url(FIRST) + f"/rows/{kind}?copy=final", body)


def spans(rows: list[dict[str, Any]]) -> list[tuple[float, float]]:
    return [(r["start_time"], r["end_time"]) for r in rows]


def same_speech(rows: list[dict[str, Any]], refs: list[int], their_rows: list[dict[str, Any]],
                their_refs: list[int]) -> bool:
    """Whether two lists of references name the same speech: one for one, the same speaker over the same time."""
    return len(refs) == len(their_refs) and all(
        a["values"]["primary_speaker"] == b["values"]["primary_speaker"]
        and min(a["end_time"], b["end_time"]) - max(a["start_time"], b["start_time"]) > 0
        for a, b in ((rows[r - 1], their_rows[t - 1]) for r, t in zip(refs, their_refs)))


def test_take_all_from_a_copy_cut_otherwise_moves_references_to_the_same_speech(app, tmp_path):
    ann, bob, ada = two_annotators(app)
    # ann splits row 4 (Riley, 31.17-38.91 s) in two: every later row moves down one. bob keeps the draft's cut and
    # names his evidence rows in it.
    split(ann, 4, 36.0)
    mine = {8: [6, 7], 13: [10, 12], 16: [13, 15], 19: [17, 18]}
    for row, refs in mine.items():
        assert bob.save(row, {PATTERN: refs}).status_code == 200
    bobs = bob.segment()["rows"]
    # The adjudicator takes ann's cut, then every field of bob's ("take all").
    assert take(ada, "take", "ann").status_code == 200
    answer = take(ada, "take-fields", "bob")
    assert answer.status_code == 200, answer.text
    final = ada.segment(copy="final")["rows"]
    assert spans(final) == spans(ann.segment()["rows"])
    for row, refs in mine.items():
        taken = final[row]["values"][PATTERN]  # bob's row N is the final copy's row N + 1
        assert same_speech(final, taken, bobs, refs), (row, taken)  # it wrote bob's numbers: other lines
    # Verified and exported, the references still name bob's lines (validation checks numbers, not speech).
    assert ada.verify(copy="final").status_code == 200
    out = tmp_path / "verified.jsonl"
    out.write_text(ada.get("/api/export").text)
    assert not validate_path(out).errors
    exported = json.loads(out.read_text().splitlines()[0])["rows"]
    assert [exported[row][PATTERN] for row in mine] == [final[row]["values"][PATTERN] for row in mine]


def test_taking_chosen_rows_moves_their_references_too(app):
    ann, bob, ada = two_annotators(app)
    split(ann, 2, 12.0)  # Sam's 9.42-17.88 s: the first half is the shorter, the second stands for the row
    assert bob.save(6, {PATTERN: [2, 5]}).status_code == 200
    assert bob.save(3, {CYCLE: [2, 3]}).status_code == 200
    bobs = bob.segment()["rows"]
    assert take(ada, "take", "ann").status_code == 200
    answer = take(ada, "take-fields", "bob", rows=[7, 4])
    assert answer.status_code == 200 and sorted(answer.json()["taken"]) == [4, 7], answer.text
    final = ada.segment(copy="final")["rows"]
    assert final[6]["values"][PATTERN] == [3, 6] and same_speech(final, [3, 6], bobs, [2, 5])
    assert final[3]["values"][CYCLE] == [3, 4] and same_speech(final, [3, 4], bobs, [2, 3])


def test_taking_from_a_recut_copy_into_the_drafts_cut_moves_references_back(app):
    ann, _bob, ada = two_annotators(app)
    split(ann, 4, 36.0)
    assert ann.save(7, {PATTERN: [4, 6]}).status_code == 200  # Riley's row 6 in the draft's numbering; [4, 5] there
    anns = ann.segment()["rows"]
    answer = take(ada, "take-fields", "ann")  # the final copy keeps the draft's cut
    assert answer.status_code == 200, answer.text
    final = ada.segment(copy="final")["rows"]
    assert spans(final) != spans(anns) and final[5]["values"][PATTERN] == [4, 5]
    assert same_speech(final, [4, 5], anns, [4, 6])
    # Every other row's references, renumbered by ann's split, read back as the draft's: nothing else was written.
    assert all(r["values"].get(PATTERN) == r["draft"].get(PATTERN) for r in final if r["row_index"] != 6)


def test_a_reference_to_a_row_the_final_cut_lacks_refuses_the_take_and_writes_nothing(app):
    ann, bob, ada = two_annotators(app)
    ann_rows = ann.segment()["rows"]
    gone = ann.write("DELETE", seg_url(FIRST) + "/rows/5", {"layout": 0, "version": ann_rows[4]["version"]})
    assert gone.status_code == 200  # ann deletes Sam's row 5 (39.26-44.48 s): no row of her cut overlaps it
    assert bob.save(6, {PATTERN: [4, 5]}).status_code == 200
    assert take(ada, "take", "ann").status_code == 200
    before = ada.segment(copy="final")
    refused = take(ada, "take-fields", "bob")
    assert refused.status_code == 422, refused.text
    problems = refused.json()["problems"]
    assert {(p["field"], p["row_index"]) for p in problems} == {(PATTERN, 5)}
    assert "bob's row 6 refers to their row 5, which no row of this copy's cut stands for" in problems[0]["message"]
    assert ada.segment(copy="final") == before  # nothing of the take was written
    # Other rows of bob's are still taken when the refused one is left out.
    assert take(ada, "take-fields", "bob", rows=[r for r in range(1, len(before["rows"]) + 1) if r != 5]).status_code == 200


@pytest.mark.parametrize("body, field", [
    ({"rows": [99]}, "rows"), ({"rows": [0]}, "rows"), ({"rows": [-1]}, "rows"), ({"rows": [1, 25]}, "rows"),
    ({"versions": {"99": 0}}, "versions"), ({"versions": {"0": 0}}, "versions"),
])
def test_a_take_naming_rows_that_do_not_exist_is_a_422(app, body, field):
    _ann, bob, ada = two_annotators(app)
    assert bob.save(3, {"tone_of_voice": "taken?"}).status_code == 200
    final = ada.segment(copy="final")
    versions = {str(r["row_index"]): r["version"] for r in final["rows"]}
    payload = {"layout": final["layout"], "source": "bob", "versions": {**versions, **body.get("versions", {})}}
    if "rows" in body:
        payload["rows"] = body["rows"]
    answer = ada.write("POST", seg_url(FIRST) + "/rows/take-fields?copy=final", payload)
    assert answer.status_code == 422, answer.text  # it answered 200 (taking nothing, or the rows that exist)
    assert {p["field"] for p in answer.json()["problems"]} == {field}
    assert "does not exist (1-24)" in answer.text
    assert ada.segment(copy="final")["rows"][2]["values"]["tone_of_voice"] != "taken?"


def test_the_final_copys_agreed_values_read_a_recut_copys_references_in_the_drafts_numbering(app):
    ann, bob, ada = two_annotators(app)
    split(ann, 4, 36.0)
    # Both name the same speech as evidence for Riley's row 6 (draft numbering): ann's cut numbers it 7 and the
    # rows 4 and 6; bob's, 6 and the rows 4 and 5.
    assert ann.save(7, {PATTERN: [4, 6]}).status_code == 200
    assert bob.save(6, {PATTERN: [4, 5]}).status_code == 200
    final = ada.segment(copy="final")["rows"]
    assert final[5]["values"][PATTERN] == [4, 5]  # agreed (was the draft's [4, 5, 6]: the numbers differed)
    # Where they differ in speech, the draft's value stays.
    assert bob.save(8, {PATTERN: [6, 8]}).status_code == 200
    assert ada.segment(copy="final")["rows"][7]["values"][PATTERN] == [6, 7, 8]


@pytest.mark.parametrize("at", [36.0, 33.0])  # the first half the longer, then the second
def test_rows_whose_references_a_split_only_renumbered_are_not_edits(app, at):
    ann, bob, ada = two_annotators(app)
    segment = split(ann, 4, at)
    edited = [r["row_index"] for r in segment["rows"] if any(r["values"].get(n) != r["draft"].get(n) for n in EVIDENCE)]
    assert edited == []  # rows 6-25 showed "edited": their references had moved with the cut
    assert ann.verify().status_code == 200 and bob.verify().status_code == 200
    assert take(ada, "take", "ann").status_code == 200
    assert ada.verify(copy="final").status_code == 200
    entry = ada.get("/api/export?provenance=true").json()["segments"][0]
    assert [c for c in entry["changes_from_draft"] if c["field"] in EVIDENCE] == []
    # A reference really changed is still a change.
    row = ann.segment()["rows"][7]
    assert ann.save(8, {PATTERN: [5, 7]}, row["version"]).status_code == 200
    assert ann.segment()["rows"][7]["draft"][PATTERN] != [5, 7]


def test_a_merge_adds_no_field_neither_row_held(app):
    ann, *_ = two_annotators(app)
    before = ann.segment()["rows"]
    assert CYCLE not in before[0]["values"] and CYCLE not in before[1]["values"]
    split(ann, 1, 4.0)
    halves = ann.segment()["rows"][:2]
    merged = ann.write("POST", seg_url(FIRST) + "/rows/1/merge", {"layout": 1, "version": halves[0]["version"],
                                                                  "next_version": halves[1]["version"]})
    assert merged.status_code == 200, merged.text
    row = merged.json()["segment"]["rows"][0]["values"]
    assert set(row) == set(before[0]["values"]), set(row) ^ set(before[0]["values"])  # two new null keys before


def test_an_undos_save_gives_the_row_back_its_accepted_fields(app):
    """What undo.js sends to undo a split: the merge, then each row's values and accepted fields as they were."""
    ann, *_ = two_annotators(app)
    assert ann.save(2, {"tone_of_voice": "calm"}, accepted=["target"]).status_code == 200
    whole = ann.segment()["rows"][1]
    assert whole["accepted"] == ["target", "tone_of_voice"]
    split(ann, 2, 12.0)
    halves = ann.segment()["rows"][1:3]
    merged = ann.write("POST", seg_url(FIRST) + "/rows/2/merge", {"layout": 1, "version": halves[0]["version"],
                                                                  "next_version": halves[1]["version"]})
    row = merged.json()["segment"]["rows"][1]
    fields = {n: v for n, v in whole["values"].items() if row["values"].get(n) != v and n != "row_index"}
    assert list(fields) == ["dialogue_cleaned"]  # the merge joined the two halves' copies of the text
    url = seg_url(FIRST) + "/rows/2"
    restored = ann.write("PUT", url, {"version": row["version"], "fields": fields,
                                      "restore_accepted": whole["accepted"]})
    assert restored.status_code == 200, restored.text
    back = ann.segment()["rows"][1]
    assert back["values"] == whole["values"] and back["accepted"] == whole["accepted"]  # not + dialogue_cleaned
    refused = ann.write("PUT", url, {"version": back["version"], "fields": {}, "restore_accepted": ["nonsense"]})
    assert refused.status_code == 422


def _undo_restore(client: Client, segment: dict[str, Any], index: int, target: dict[str, Any],
                  accepted: list[str]) -> Any:
    """The save undo.js's ``restore`` sends to give row ``index`` the values ``target`` held: each editable field
    that differs, a field ``target`` did not hold removed where the release lets a row leave it out."""
    row = segment["rows"][index - 1]
    fields, remove = {}, []
    for spec in [*segment["fields"], {"name": "start_time"}, {"name": "end_time"}]:
        name = spec["name"]
        if name in target:
            if row["values"].get(name, ...) != target[name]:
                fields[name] = target[name]
        elif name in row["values"] and spec.get("optional"):
            remove.append(name)
    body = {"version": row["version"], "fields": fields, "restore_accepted": accepted, "remove": remove}
    return client.write("PUT", seg_url(FIRST) + f"/rows/{index}", body)


@pytest.mark.parametrize("row, lacks", [
    (3, "the second"),  # row 3 holds the cycle fields, row 4 none: the split gave row 4 all three
    (2, "the first"),   # row 2 lacks them and row 3 holds them: the merge took row 3's reason and evidence
])
def test_undoing_a_merge_gives_both_rows_back_their_own_keys(app, row, lacks):
    """What undo.js sends to undo a merge: the split (``text_at`` at the first row's text), then each row's
    values and accepted fields as they were; a field the row never held leaves it again, not as null."""
    ann, bob, ada = two_annotators(app)
    before = ann.segment()
    a, b = before["rows"][row - 1], before["rows"][row]
    assert set(a["values"]) != set(b["values"]), lacks
    merged = ann.write("POST", seg_url(FIRST) + f"/rows/{row}/merge",
                       {"layout": 0, "version": a["version"], "next_version": b["version"]})
    assert merged.status_code == 200, merged.text
    whole = merged.json()["segment"]["rows"][row - 1]
    text_at = len(a["values"]["dialogue_cleaned"].strip())
    cut = ann.write("POST", seg_url(FIRST) + f"/rows/{row}/split", {"layout": 1, "version": whole["version"],
                                                                     "at": b["start_time"], "text_at": text_at})
    assert cut.status_code == 200, cut.text
    for index in range(1, len(before["rows"]) + 1):
        answer = _undo_restore(ann, ann.segment(), index, before["rows"][index - 1]["values"],
                               before["rows"][index - 1]["accepted"])
        assert answer.status_code == 200, answer.text
    after = ann.segment()["rows"]
    for old, new in zip(before["rows"], after):
        gained = set(new["values"]) - set(old["values"])
        assert not gained, (new["row_index"], gained)  # null relation_cycle_* keys nobody wrote
        assert new["values"] == old["values"] and new["accepted"] == old["accepted"]
    # Exported, the undone merge is no change from the draft: the same rows, key for key.
    assert ann.verify().status_code == 200 and bob.verify().status_code == 200
    exported = json.loads(ada.get("/api/export").text.splitlines()[0])["rows"]
    assert exported == [r["values"] for r in before["rows"]]


@pytest.mark.parametrize("remove, fields, field", [
    (["primary_speaker"], {}, "primary_speaker"),            # the release requires it: its validation says missing
    (["nonsense"], {}, "nonsense"),                          # not a field
    (["row_index"], {}, "row_index"),                        # not editable
    (["start_time"], {}, "start_time"),                      # a row's span is never absent
    (["<script>alert(1)</script>"], {}, "<script>alert(1)</script>"),
    (["tone_of_voice", "tone_of_voice"], {}, "tone_of_voice"),  # named twice
    (["tone_of_voice"], {"tone_of_voice": "calm"}, "tone_of_voice"),  # saved and removed at once
    (["tone_of_voice"] * 10_000, {}, "remove"),              # huge: one problem, not ten thousand
    ([3], {}, None),                                         # not a name
])
def test_a_removal_the_release_does_not_allow_is_a_422_and_writes_nothing(app, remove, fields, field):
    ann, *_ = two_annotators(app)
    row = ann.segment()["rows"][3]
    answer = ann.write("PUT", seg_url(FIRST) + "/rows/4", {"version": row["version"], "fields": fields,
                                                             "remove": remove})
    assert answer.status_code == 422, answer.text
    if field is not None:
        assert [p["field"] for p in answer.json()["problems"]] == [field], answer.text
    assert ann.segment()["rows"][3] == row


def test_a_removal_takes_the_key_out_and_a_stale_retry_is_a_409(app):
    ann, *_ = two_annotators(app)
    row = ann.segment()["rows"][2]
    assert "relation_cycle_state" in row["values"]
    url = seg_url(FIRST) + "/rows/3"
    body = {"version": row["version"], "remove": ["relation_cycle_state", "tone_of_voice"]}
    assert ann.write("PUT", url, body).status_code == 200
    saved = ann.segment()["rows"][2]
    assert set(row["values"]) - set(saved["values"]) == {"relation_cycle_state", "tone_of_voice"}
    assert {"relation_cycle_state", "tone_of_voice"} <= set(saved["accepted"])  # a removal is an edit of the field
    log = ann.get(url + "/audit").json()
    assert {(e["field"], e["new"]) for e in log if e["action"] == "row.edit"} >= {("tone_of_voice", None)}
    retry = ann.write("PUT", url, body)  # the same PUT again (a lost answer retried): its version is stale
    assert retry.status_code == 409 and retry.json()["yours"]["remove"] == body["remove"], retry.text
    assert ann.segment()["rows"][2] == saved
    # Removing what the row does not hold changes no value.
    again = ann.write("PUT", url, {"version": saved["version"], "remove": ["tone_of_voice"]})
    assert again.status_code == 200 and ann.segment()["rows"][2]["values"] == saved["values"]


def test_undoing_a_delete_gives_the_row_back_its_own_keys(app):
    """A variant the fix was not written for: undo.js undoes a delete with an insert (a blank row, every relation
    field null) and the same restoring saves; the row given back lacks what it lacked."""
    ann, *_ = two_annotators(app)
    before = ann.segment()
    gone = before["rows"][3]  # Riley's row 4: no relation_cycle_* fields
    deleted = ann.write("DELETE", seg_url(FIRST) + "/rows/4", {"layout": 0, "version": gone["version"]})
    assert deleted.status_code == 200, deleted.text
    values = gone["values"]
    inserted = ann.write("POST", seg_url(FIRST) + "/rows", {
        "layout": 1, "start_time": values["start_time"], "end_time": values["end_time"],
        "primary_speaker": values["primary_speaker"], "dialogue_cleaned": values["dialogue_cleaned"]})
    assert inserted.status_code == 201 and inserted.json()["row_index"] == 4, inserted.text
    for index in range(1, len(before["rows"]) + 1):
        answer = _undo_restore(ann, ann.segment(), index, before["rows"][index - 1]["values"],
                               before["rows"][index - 1]["accepted"])
        assert answer.status_code == 200, answer.text
    assert [(r["values"], r["accepted"]) for r in ann.segment()["rows"]] == [
        (r["values"], r["accepted"]) for r in before["rows"]]  # the blank row's three null keys stayed
