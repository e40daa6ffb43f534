"""Undo and redo in Debian's Chromium (issue #37 item 3): Ctrl+Z undoes an annotator's saved edits and cuts, last
first, Shift+Ctrl+Z redoes them; every undo is a conflict-checked write, so one over a change made elsewhere is
refused and writes nothing; an undone merge gives each row back its own set of fields, and redoing it merges them
again. The rows compared are the server's, read through the API after each key."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from review_helpers import FIRST, Client
from test_review_browser import browser, login, open_segment, wait_until  # noqa: F401 (the browser fixture)
from test_review_cuts_browser import choose, press, seek

from rescue.review.fields import FIELD_NAMES

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MEASURE_OUT = os.environ.get("RESCUE_UNDO_MEASURES")  # the keystrokes counted, when asked
EDITABLE = [*FIELD_NAMES, "start_time", "end_time"]


def differences(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[tuple[int, str, Any, Any]]:
    """Where two row lists differ: (row, field, one, other); the row count first."""
    if len(a) != len(b):
        return [(0, "rows", len(a), len(b))]
    return [(i, name, x[name], y[name]) for i, (x, y) in enumerate(zip(a, b), start=1) for name in x if x[name] != y[name]]


def stored(client: Client) -> list[dict[str, Any]]:
    """The copy's rows as the server holds them: every editable field of every row."""
    return [{name: r["values"].get(name) for name in EDITABLE} for r in client.segment()["rows"]]


def row_count(page: Any, count: int) -> None:
    wait_until(page, f"window.reviewState().rows.length === {count} && window.reviewState().undo !== undefined")


def keys(page: Any, key: str, refused: bool = False) -> str:
    """Press an undo or redo key and wait until it has done all its writes (it then says so); what it said."""
    page.evaluate("document.getElementById('save-status').textContent = ''")
    press(page, key)
    wait_until(page, "/(Undone|Redone|Not undone|Not redone|Nothing)/.test(document.getElementById('save-status').textContent)")
    said = page.inner_text("#save-status")
    assert said.startswith("Not ") == refused, said
    return said


def opened(browser: Any, server: Any, app: Any) -> tuple[Client, list[dict[str, Any]], Any, Any]:
    """The API as ann (her other tab), her rows as stored, and her browser on the segment."""
    api = Client(app, "ann")
    original = stored(api)
    context, page = login(browser, server, "ann")
    open_segment(page, server, FIRST)
    return api, original, context, page


def whole(client: Client) -> list[tuple[dict[str, Any], list[str]]]:
    """Every row's values (every key, so a key added as null counts) and accepted fields, as the server holds them."""
    return [(r["values"], sorted(r["accepted"])) for r in client.segment()["rows"]]


def test_ctrl_z_undoes_a_split_in_one_keystroke_and_shift_ctrl_z_redoes_it(browser, server, app):
    api, original, context, page = opened(browser, server, app)
    before = whole(api)  # #42 item 9: the undo left dialogue_cleaned accepted and two new null keys
    choose(page, 2)
    r2 = page.evaluate("window.reviewState().rows[1]")
    seek(page, round((r2["start"] + r2["end"]) / 2, 2))
    press(page, "s")
    row_count(page, len(original) + 1)
    after_split = stored(api)
    assert len(after_split) == len(original) + 1
    strokes = 0
    keys(page, "Control+z")
    strokes += 1
    assert "Undone split of row 2" in page.inner_text("#save-status")
    row_count(page, len(original))
    assert not differences(stored(api), original)  # every field of every row as before the split
    assert whole(api) == before  # no key added, nothing accepted that nobody accepted
    keys(page, "Control+Shift+Z")
    assert "Redone split of row 2" in page.inner_text("#save-status")  # it said "Redone merge"
    row_count(page, len(original) + 1)
    assert not differences(stored(api), after_split)
    keys(page, "Control+z")
    row_count(page, len(original))
    assert not differences(stored(api), original)
    if MEASURE_OUT:
        Path(MEASURE_OUT).write_text(json.dumps({"keystrokes_to_undo_a_split": strokes}), encoding="utf-8")
    assert strokes == 1
    context.close()


def test_edits_and_cuts_are_undone_last_first_and_redone(browser, server, app):
    api, original, context, page = opened(browser, server, app)
    choose(page, 1)
    page.fill("#input-tone_of_voice", "undo me")
    page.keyboard.press("Control+s")
    wait_until(page, "/Saved/.test(document.getElementById('save-status').textContent)")
    tone = stored(api)
    r1 = page.evaluate("window.reviewState().rows[0]")
    seek(page, round(r1["end"] - 0.5, 2))
    press(page, "o")  # row 1 ends at the playhead
    wait_until(page, f"window.reviewState().rows[0].end === {round(r1['end'] - 0.5, 2)}")
    moved = stored(api)
    choose(page, 3)
    press(page, "m")  # rows 3 and 4 merged: a therapist row and a client row, so it asks first
    page.click("#merge-fix")
    row_count(page, len(original) - 1)
    seek(page, 1.0)
    press(page, "n")  # a new row at 1 s
    row_count(page, len(original))
    page.on("dialog", lambda dialog: dialog.accept())
    choose(page, 2)  # the new row
    press(page, "Shift+Delete")
    row_count(page, len(original) - 1)
    # undo: the delete, the insert, the merge, the boundary, the tone; each lands on what was there before it
    keys(page, "Control+z")
    row_count(page, len(original))
    keys(page, "Control+z")
    row_count(page, len(original) - 1)
    keys(page, "Control+z")
    row_count(page, len(original))
    assert not differences(stored(api), moved)
    keys(page, "Control+z")
    assert not differences(stored(api), tone)
    keys(page, "Control+z")
    assert not differences(stored(api), original)
    keys(page, "Control+z")
    assert "Nothing to undo" in page.inner_text("#save-status")
    # redo, in order: the tone, then the boundary
    keys(page, "Control+Shift+Z")
    assert not differences(stored(api), tone)
    keys(page, "Control+y")
    assert not differences(stored(api), moved)
    context.close()


def test_an_undo_over_a_change_made_elsewhere_is_refused_and_writes_nothing(browser, server, app):
    api = Client(app, "ann")  # the same annotator in another tab
    context, page = login(browser, server, "ann")
    open_segment(page, server, FIRST)
    choose(page, 1)
    page.fill("#input-tone_of_voice", "mine first")
    page.keyboard.press("Control+s")
    wait_until(page, "/Saved/.test(document.getElementById('save-status').textContent)")
    assert api.save(1, {"tone_of_voice": "the other tab"}).status_code == 200
    elsewhere = stored(api)
    assert "changed since" in keys(page, "Control+z", refused=True)
    assert not differences(stored(api), elsewhere)
    wait_until(page, "document.getElementById('input-tone_of_voice').value === 'the other tab'")  # shown as it is
    context.close()


def test_undoing_a_merge_gives_both_rows_back_their_own_fields(browser, server, app):
    api, original, context, page = opened(browser, server, app)
    before = whole(api)
    assert set(before[2][0]) != set(before[3][0])  # row 3 holds the relation_cycle_* fields, row 4 none
    choose(page, 3)
    press(page, "m")
    page.click("#merge-fix")
    row_count(page, len(original) - 1)
    merged = whole(api)
    keys(page, "Control+z")
    assert "Undone merge of row 3" in page.inner_text("#save-status")
    row_count(page, len(original))
    assert whole(api) == before  # row 4 kept three null relation_cycle_* keys it never had
    keys(page, "Control+Shift+Z")
    row_count(page, len(original) - 1)
    assert whole(api) == merged
    keys(page, "Control+z")
    row_count(page, len(original))
    assert whole(api) == before
    context.close()
