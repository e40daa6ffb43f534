"""The review database's JSON fields are read back as untrusted input (issue #42, item 4): a row, its accepted
fields, its acknowledged warnings or an audit entry edited by hand to hold what rescue never stores is named
(table, column, row), answered 500 by the app and exit 2 by `rescue review export`, and left as it is."""

from __future__ import annotations

import sqlite3

import pytest
from _cli import invoke_main
from review_helpers import FIRST, Client, make_app, seg_url

HUGE = "9" * 5000
VALUES = {  # what a hand edit left in the column, and a word of the message naming it
    "NaN": '{"target": NaN}',
    "Infinity": '{"start_time": Infinity}',
    "1e308": '{"start_time": 1e308}',
    "5000 digits": '{"row_index": ' + HUGE + "}",
    "100,000 brackets": "[" * 100_000,
    "nested in a field": '{"target": ' + "[" * 70 + "]" * 70 + "}",
    "not JSON": "{'target': 'Sam'}",
    "truncated": '{"target": ["Sa',
    "a list for the row": '["Sam"]',
}
NAMES = {
    "a string": '"target"',
    "numbers": "[1, 2]",
    "NaN": "[NaN]",
    "not JSON": "[target",
}


@pytest.fixture
def saved(small_project, tmp_path):
    app = make_app(small_project, tmp_path / "review.db")
    ann = Client(app, "ann")
    assert ann.save(1, {"target": ["Sam"]}, 0).status_code == 200
    yield app, ann, tmp_path / "review.db"
    app.state.engine.dispose()


def _spoil(database, sql: str, value: str) -> None:
    with sqlite3.connect(database) as db:
        assert db.execute(sql, (value,)).rowcount >= 1


def _held(database, sql: str) -> list[str]:
    with sqlite3.connect(database) as db:
        return [row[0] for row in db.execute(sql)]


@pytest.mark.parametrize("variant", list(VALUES))
def test_a_row_edited_in_the_database_is_named_not_a_traceback(saved, variant):
    app, ann, database = saved
    _spoil(database, "UPDATE row_copies SET values_json = ? WHERE row_index = 1", VALUES[variant])
    answer = ann.get(seg_url(FIRST))
    assert answer.status_code == 500, answer.text
    detail = answer.json()["detail"]
    assert "row_copies.values_json" in detail and repr(FIRST) in detail and "row 1" in detail, detail
    assert _held(database, "SELECT values_json FROM row_copies WHERE row_index = 1") == [VALUES[variant]]
    found = Client(app, "ada").get("/api/search?q=Sam")  # the search reads every stored row too
    assert found.status_code == 500 and "row_copies.values_json" in found.json()["detail"], found.text


@pytest.mark.parametrize("column", ["accepted_json", "acknowledged_json"])
@pytest.mark.parametrize("variant", list(NAMES))
def test_accepted_and_acknowledged_names_edited_in_the_database_are_named(saved, column, variant):
    app, ann, database = saved
    _spoil(database, f"UPDATE row_copies SET {column} = ? WHERE row_index = 1", NAMES[variant])
    answer = ann.get(seg_url(FIRST))
    assert answer.status_code == 500 and f"row_copies.{column}" in answer.json()["detail"], answer.text
    if column == "accepted_json":  # the segment list counts accepted rows too
        listing = Client(app, "root").get("/api/segments")
        assert listing.status_code == 500 and column in listing.json()["detail"], listing.text


@pytest.mark.parametrize("variant", ["NaN", "100,000 brackets", "not JSON"])
def test_an_audit_entry_edited_in_the_database_is_named(saved, variant):
    app, ann, database = saved
    _spoil(database, "UPDATE audit SET new_json = ? WHERE field = 'target'", VALUES[variant])
    answer = ann.get(seg_url(FIRST) + "/rows/1/audit")
    assert answer.status_code == 500 and "audit.new_json" in answer.json()["detail"], answer.text


def test_review_export_exits_2_naming_the_stored_value(saved, tmp_path, small_project):
    app, ann, database = saved
    root = Client(app, "root")
    root.write("POST", "/api/assignments", {"k": 1, "annotators": ["ann"]})
    assert ann.verify().status_code == 200
    _spoil(database, "UPDATE row_copies SET values_json = ? WHERE row_index = 1", VALUES["NaN"])
    out = tmp_path / "verified.jsonl"
    result = invoke_main(["review", "export", str(small_project), "--db", f"sqlite:///{database}", "--out", str(out)])
    assert result.exit_code == 2 and "row_copies.values_json" in result.output, result.output
    assert "Traceback" not in result.output and not out.exists()
