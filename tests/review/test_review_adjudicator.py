"""The adjudicator's tools (issue #37 item 5), through the API: taking an annotator's values of every differing
row is one write (all or nothing, every row's version checked), and a boundary two rows share moves for both in
one write."""

from __future__ import annotations

import pytest
from review_helpers import FIRST, Client, seg_url

from rescue.review.fields import FIELD_NAMES



@pytest.fixture
def db_url(review_db_url):  # every test on SQLite and (slow) on PostgreSQL
    return review_db_url


SEG = seg_url(FIRST)
ROWS = SEG + "/rows"


def _final(client: Client) -> dict:
    return client.segment(copy="final")


def _versions(seg: dict) -> dict[str, int]:
    return {str(r["row_index"]): r["version"] for r in seg["rows"]}


def _edits(app) -> dict[int, str]:  # type: ignore[no-untyped-def]
    """ann and bob disagree on three rows' tone; bob also re-words row 1."""
    ann, bob = Client(app, "ann"), Client(app, "bob")
    tones = {1: "ann one", 2: "ann two", 4: "ann four"}
    for row, tone in tones.items():
        assert ann.save(row, {"tone_of_voice": tone}).status_code == 200
        assert bob.save(row, {"tone_of_voice": "bob " + tone}).status_code == 200
    assert bob.save(1, {"dialogue_cleaned": "bob's words"}).status_code == 200
    return tones


def _audit_count(client: Client) -> int:
    return len(client.get(SEG + "/audit").json())


def test_take_all_writes_every_differing_row_in_one_write(app, ada):
    tones = _edits(app)
    final = _final(ada)
    before = _audit_count(ada)
    answer = ada.write("POST", ROWS + "/take-fields?copy=final", {"layout": 0, "source": "ann", "versions": _versions(final)})
    assert answer.status_code == 200, answer.text
    assert sorted(answer.json()["taken"]) == sorted(tones)
    after = _final(ada)["rows"]
    for row, tone in tones.items():
        assert after[row - 1]["values"]["tone_of_voice"] == tone
    assert after[0]["values"]["dialogue_cleaned"] == final["rows"][0]["values"]["dialogue_cleaned"]  # ann kept the draft's
    edits = [e for e in ada.get(SEG + "/audit").json()[before:] if e["action"] == "row.edit"]
    assert sorted(e["row_index"] for e in edits) == sorted(tones) and {e["field"] for e in edits} == {"tone_of_voice"}
    # only some rows, as "take row" does
    bob = ada.write("POST", ROWS + "/take-fields?copy=final", {"layout": 0, "source": "bob",
                                                               "versions": _versions(_final(ada)), "rows": [1]})
    assert bob.status_code == 200 and bob.json()["taken"] == [1], bob.text
    row = _final(ada)["rows"][0]["values"]
    assert row["tone_of_voice"] == "bob ann one" and row["dialogue_cleaned"] == "bob's words"
    assert _final(ada)["rows"][1]["values"]["tone_of_voice"] == "ann two"


@pytest.mark.parametrize("stale", ["a row saved since", "a row never seen"])
def test_take_all_over_a_newer_final_row_writes_nothing(app, ada, stale):
    _edits(app)
    final = _final(ada)
    versions = _versions(final)
    root = Client(app, "root")
    if stale == "a row saved since":
        assert root.save(4, {"tone_of_voice": "root's"}, copy="final").status_code == 200
    else:
        del versions["2"]
    now = _final(ada)
    before = _audit_count(ada)
    answer = ada.write("POST", ROWS + "/take-fields?copy=final", {"layout": 0, "source": "ann", "versions": versions})
    assert answer.status_code == 409, answer.text
    assert _final(ada)["rows"] == now["rows"] and _audit_count(ada) == before  # not one row of it


def test_take_fields_is_for_adjudicators_and_the_final_copy(app, ann, ada):
    _edits(app)
    body = {"layout": 0, "source": "bob", "versions": {}}
    assert ann.write("POST", ROWS + "/take-fields?copy=final", body).status_code == 403
    assert ada.write("POST", ROWS + "/take-fields", body).status_code == 422
    assert ada.write("POST", ROWS + "/take-fields?copy=final", body | {"source": "nobody"}).status_code == 404


# --- a boundary two rows share ------------------------------------------------------------------------------------------


def _shared(client: Client, copy: str | None = None) -> tuple[int, dict, dict]:
    """Rows i and i+1 whose boundary is shared (made so first: row i ends where row i+1 starts)."""
    seg = client.segment(copy=copy)
    first, second = seg["rows"][0], seg["rows"][1]
    if first["end_time"] != second["start_time"]:
        assert client.save(1, {"end_time": second["start_time"]}, first["version"], copy=copy).status_code == 200
        seg = client.segment(copy=copy)
    return 1, seg["rows"][0], seg["rows"][1]


@pytest.mark.parametrize("who", ["ann", "ada"])
@pytest.mark.parametrize("shift", [-0.7, 0.9])
def test_a_shared_boundary_moves_for_both_rows_in_one_write(app, who, shift):
    client = Client(app, who)
    copy = "final" if who == "ada" else None
    i, first, second = _shared(client, copy)
    at = round(first["end_time"] + shift, 3)
    url = SEG + "/boundary" + ("?copy=final" if copy else "")
    answer = client.write("POST", url, {"layout": 0, "row": i, "version": first["version"],
                                        "next_version": second["version"], "at": at})
    assert answer.status_code == 200, answer.text
    rows = client.segment(copy=copy)["rows"]
    assert rows[0]["end_time"] == at and rows[1]["start_time"] == at
    assert rows[0]["values"]["end_time"] == at and rows[1]["values"]["start_time"] == at
    # every other field as it was
    assert all(rows[0]["values"].get(n) == first["values"].get(n) for n in FIELD_NAMES)
    # stale versions: a conflict, nothing moved
    again = client.write("POST", url, {"layout": 0, "row": i, "version": first["version"],
                                       "next_version": second["version"], "at": at + 0.1})
    assert again.status_code == 409
    assert client.segment(copy=copy)["rows"][0]["end_time"] == at


@pytest.mark.parametrize("at", ["past the next row's end", "before the row's start", "Infinity"])
def test_a_shared_boundary_cannot_cross_either_row(app, ann, at):
    i, first, second = _shared(ann)
    time = {"past the next row's end": second["end_time"] + 0.5, "before the row's start": first["start_time"] - 0.5,
            "Infinity": float("inf")}[at]
    before = ann.segment()["rows"]
    body = '{"layout": 0, "row": 1, "version": %d, "next_version": %d, "at": %s}' % (
        first["version"], second["version"], "Infinity" if at == "Infinity" else repr(time))
    answer = ann.http.post(SEG + "/boundary", content=body.encode(), headers={"X-CSRF-Token": ann.csrf,
                                                                                   "Content-Type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert ann.segment()["rows"] == before
