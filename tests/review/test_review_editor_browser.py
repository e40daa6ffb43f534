"""The segment editor in Debian's Chromium: no false "edited" (values compared, not JSON text), the compact
editor (fields by the row's role, label digits, accept-row key, shortcut bar, guidelines panel) and the
keystrokes a 20-row segment whose draft is right takes to verify."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from review_helpers import make_app
from test_review_browser import Server, browser, login, open_segment, wait_until  # noqa: F401 (the browser fixture)

from rescue.testing.review_project import demo_samples, make_review_project

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FAMILY = "demo_family_okafor/001_session"
COUPLE = "demo_couple_riley_and_sam/001_session"
# Where the measured heights and keystrokes go when asked (the closing note of issue 21 quotes them).
MEASURE_OUT = os.environ.get("RESCUE_EDITOR_MEASURES")


GUIDELINES = """# Lab rules

Code the **speaker's** stance, not the listener's.

<script>window.pwned = 1</script>

[a bad link](javascript:window.pwned=2) and [a good one](https://example.org/guide)
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    samples = {s["sample_id"]: s for s in demo_samples()}
    couple = samples[COUPLE]
    couple["rows"] = couple["rows"][:20]  # the 20-row segment
    for row in couple["rows"]:
        for name in ("relation_pattern_evidence_rows", "relation_cycle_evidence_rows"):
            if isinstance(row.get(name), list):
                row[name] = [i for i in row[name] if 1 <= i <= 20]
    root = make_review_project(tmp_path_factory.mktemp("editor") / "proj", [couple, samples[FAMILY]], media=False)
    (root / "guidelines.md").write_text(GUIDELINES, encoding="utf-8")
    return root


def _errors(page) -> list[str]:  # type: ignore[no-untyped-def]
    found: list[str] = []
    page.on("pageerror", lambda exc: found.append(str(exc)))
    return found


def _walk_rows(page, count: int) -> list[int]:  # type: ignore[no-untyped-def]
    """Go down every row with j; the number of "use draft" prompts on each."""
    prompts = []
    page.locator("#row-1").click()
    for i in range(1, count + 1):
        page.wait_for_selector(f"#row-{i}.selected")
        prompts.append(page.locator("#editor button:text('use draft')").count())
        if i < count:
            page.keyboard.press("Escape")
            page.keyboard.press("j")
    return prompts


def test_no_false_edited_after_an_unchanged_save_and_verify(browser, server, project):
    context, page = login(browser, server, "ann")
    errors = _errors(page)
    open_segment(page, server, FAMILY)
    count = page.locator(".rowlist tbody tr").count()
    assert count == 35
    page.click("#row-2")
    page.click("#accept-row")  # a save that changes nothing
    page.wait_for_selector("#save-status.good")
    page.click("#verify")
    page.wait_for_selector("#seg-status.verified")
    # the server now holds every row with its list entries' keys sorted, unlike the draft
    stored = page.evaluate("fetch('/api/segments/' + encodeURIComponent('%s')).then((r) => r.json())" % FAMILY)
    posture = next(r for r in stored["rows"] if r["values"]["body_posture"])
    assert list(posture["values"]["body_posture"][0]) != list(posture["draft"]["body_posture"][0])
    page.reload()
    page.wait_for_selector("#row-1")
    assert page.locator(".rowlist .badge.edited").count() == 0
    assert page.locator(".rowlist .badge.draft").count() == count
    assert _walk_rows(page, count) == [0] * count
    assert not errors, errors
    context.close()


def _height(page) -> float:  # type: ignore[no-untyped-def]
    # The editor's content: the pane itself is the window's height now, and scrolls when the content is taller.
    return float(page.evaluate("""(() => { const e = document.getElementById('editor'), top = e.getBoundingClientRect().top;
        return Math.max(...[...e.children].map((c) => c.getBoundingClientRect().bottom)) - top + e.scrollTop; })()"""))


def test_compact_editor_by_role_with_label_digits_and_guidelines(browser, server):
    context, page = login(browser, server, "bob", width=1440, height=900)
    errors = _errors(page)
    open_segment(page, server, COUPLE)
    rows = page.evaluate("fetch('/api/segments/' + encodeURIComponent('%s')).then((r) => r.json())" % COUPLE)["rows"]
    client = next(r["row_index"] for r in rows if r["values"]["primary_speaker"] != "Therapist"
                  and not r["values"]["support_strategy"] and not r["values"].get("relation_pattern"))
    therapist = next(r["row_index"] for r in rows if r["values"]["primary_speaker"] == "Therapist")
    page.click(f"#row-{client}")
    # a client row: strategy and relation fields folded away, no per-field accept boxes
    assert not page.is_visible("#block-support_strategy") and not page.is_visible("#block-relation_pattern")
    assert "Support strategies" in page.inner_text("#more-fields summary")
    assert page.locator("#editor input[type=checkbox][id^=accept-]").count() == 0
    client_height = _height(page)
    # digits pick a label in a focused label list; 0 clears it
    page.focus("#input-utterance_type")
    page.keyboard.press("2")
    second = page.evaluate("document.querySelectorAll('#input-utterance_type option')[2].value")
    assert page.input_value("#input-utterance_type") == second
    assert page.locator(f"#row-{client} .badge.unsaved").count() == 1
    page.keyboard.press("0")
    assert page.input_value("#input-utterance_type") == ""
    # the editor follows the role: made a Therapist row, the strategy field opens (and focus stays on the speaker)
    page.select_option("#input-primary_speaker", "Therapist")
    page.wait_for_selector("#block-support_strategy", state="visible")
    assert page.evaluate("document.activeElement.id") == "input-primary_speaker"
    page.select_option("#input-primary_speaker", rows[client - 1]["values"]["primary_speaker"])
    page.wait_for_selector("#block-support_strategy", state="hidden")
    page.keyboard.press("Escape")
    page.click(f"#row-{therapist}")
    assert page.is_visible("#block-support_strategy") and not page.is_visible("#block-utterance_type")
    therapist_height = _height(page)
    # the shortcut bar is in sight without scrolling; the guidelines panel opens with g
    bar = page.locator("#shortcut-bar").bounding_box()
    assert bar and bar["y"] + bar["height"] <= 900 and "accept row" in page.inner_text("#shortcut-bar")
    page.keyboard.press("Escape")
    page.keyboard.press("g")
    page.wait_for_selector("#guidelines:not([hidden])")
    panel = page.locator("#guidelines")
    assert "Lab rules" in panel.inner_text() and "speaker's" in panel.inner_text()
    assert "<script>" in panel.inner_text()  # the file's HTML shows as text
    assert panel.locator("script").count() == 0 and page.evaluate("window.pwned") is None
    assert panel.locator("a[href^='javascript']").count() == 0
    assert panel.locator("a[href='https://example.org/guide']").count() == 1
    assert panel.locator("code:text('pursue_withdraw')").count() == 1  # the taxonomy's definitions
    page.keyboard.press("g")
    page.wait_for_selector("#guidelines[hidden]", state="attached")
    assert client_height < 900 and therapist_height < 1100, (client_height, therapist_height)
    if MEASURE_OUT:
        Path(MEASURE_OUT).write_text(json.dumps({"client_row_px": client_height, "therapist_row_px": therapist_height,
                                                 "client_row": client, "therapist_row": therapist}), encoding="utf-8")
    assert not errors, errors
    context.close()


def test_a_right_draft_of_20_rows_verifies_in_21_keystrokes(browser, server):
    context, page = login(browser, server, "cat", width=1440, height=900)
    errors = _errors(page)
    open_segment(page, server, COUPLE)
    keys = ["a"] * 20 + ["Shift+V"]  # accept each row (the key moves on to the next), then verify
    for key in keys:
        page.keyboard.press(key)
    page.wait_for_selector("#seg-status.verified")
    wait_until(page, "document.querySelectorAll('.rowlist .badge.reviewed').length === 20")
    assert page.locator(".rowlist .badge.edited").count() == 0
    assert page.locator(".rowlist .badge.unsaved").count() == 0
    page.reload()
    page.wait_for_selector("#seg-status.verified")
    assert page.locator(".rowlist .badge.reviewed").count() == 20
    if MEASURE_OUT:
        out = Path(MEASURE_OUT).with_suffix(".keys.json")
        out.write_text(json.dumps({"rows": 20, "keystrokes": len(keys), "keys": keys}), encoding="utf-8")
    assert not errors, errors
    context.close()


def test_the_dashboard_queue_filters_sorts_and_searches_the_transcript(browser, server):
    context, page = login(browser, server, "ada")
    errors = _errors(page)
    assert page.locator("#segments tbody tr").count() == 2
    page.select_option("#f-speakers", page.evaluate(
        "[...document.querySelectorAll('#f-speakers option')].map((o) => o.value).filter(Boolean).pop()"))
    page.click("#apply-filters")
    page.wait_for_selector("#queue-count")
    assert [r.get_attribute("data-id") for r in page.locator("#segments tbody tr").all()] == [FAMILY]
    page.click("a:text('Clear')")
    page.click("#sort-duration")
    page.click("#sort-duration")  # the second click: longest first
    page.wait_for_selector("#sort-duration.desc")
    assert page.locator("#segments tbody tr").first.get_attribute("data-id") == FAMILY
    page.fill("#q", "slow down")
    page.press("#q", "Enter")
    page.wait_for_selector("#search-hits")
    hit = page.locator("#search-hits tbody tr").first
    assert "slow down" in hit.inner_text().lower()
    row = hit.locator("td").nth(1).inner_text()
    hit.locator("a").click()
    page.wait_for_selector(f"#row-{row}.selected")
    assert page.inner_text("#editor h2") == f"Row {row}"
    assert not errors, errors
    context.close()


def test_adjudication_with_the_clip_row_filter_and_taking_rows_and_segments(browser, tmp_path):
    from contextlib import closing

    from test_review_browser import _api_client

    sample = {s["sample_id"]: s for s in demo_samples()}[COUPLE]
    sample["rows"] = [r for r in sample["rows"] if r["end_time"] <= 45]
    for row in sample["rows"]:
        for name in ("relation_pattern_evidence_rows", "relation_cycle_evidence_rows"):
            if isinstance(row.get(name), list):
                row[name] = [i for i in row[name] if 1 <= i <= len(sample["rows"])]
    running = Server(make_app(make_review_project(tmp_path / "adj", [sample]), tmp_path / "db.sqlite"))
    url = "/api/segments/" + COUPLE.replace("/", "%2F")
    try:
        with closing(_api_client(running, "root")) as root:
            assert root.post("/api/assignments", json={"k": 2, "annotators": ["ann", "bob"]}).status_code == 200
        # ann and bob agree on row 1 (an unchanged save stores it with sorted keys) and differ on rows 2 and 3
        for name, tone2, tone3 in (("ann", "icy", "flat"), ("bob", "weary", "warm")):
            with closing(_api_client(running, name)) as client:
                assert client.put(url + "/rows/1", json={"version": 0, "fields": {}, "accepted": ["tone_of_voice"]}).status_code == 200
                assert client.put(url + "/rows/2", json={"version": 0, "fields": {"tone_of_voice": tone2}}).status_code == 200
                assert client.put(url + "/rows/3", json={"version": 0, "fields": {"tone_of_voice": tone3}}).status_code == 200
                assert client.post(url + "/verify").status_code == 200
        context, page = login(browser, running, "ada")
        errors = _errors(page)
        page.goto(running.url + "/segments/" + COUPLE.replace("/", "%2F") + "/adjudicate")
        page.wait_for_selector("#verify-final")
        assert page.locator("video#video").count() == 1
        # the timeline of the final copy, read only: a block per row; a click seeks there
        page.wait_for_selector("#timeline .block")
        assert page.locator("#timeline .block").count() == len(sample["rows"])
        assert page.locator("#cut-tools #split-row").is_hidden()
        page.click("#block-3")
        wait_until(page, f"document.getElementById('video').currentTime >= {sample['rows'][2]['start_time'] - 0.3}")
        # rows where the copies differ: rows 2 and 3, every field of each
        page.select_option("#adj-filter", "rows")
        assert [h.get_attribute("id") for h in page.locator("tr.row-head").all()] == ["adj-row-2", "adj-row-3"]
        assert page.locator("#adj-row-2 ~ tr th.field-name").count() >= 19
        # one order for list entries, whichever copy they come from (stored copies have sorted keys)
        page.select_option("#adj-filter", "all")
        cells = page.locator("tr:has(th.field-name:text-is('Body posture'))").first.locator("div.value").all_inner_texts()
        assert len(set(cells)) == 1, cells
        # play a row: the clip seeks to it
        page.click("#adj-row-2 .play-row")
        wait_until(page, "document.getElementById('video').currentTime > 0")
        # take bob's row 2, then all of ann's for the segment (only row 3 still differs from ann's)
        page.select_option("#adj-filter", "rows")
        page.click("#adj-row-2 button.take-row[data-name=bob]")
        page.wait_for_selector("#adj-status:text('Took 1 row(s) from bob')")
        final = page.evaluate("fetch('%s?copy=final').then((r) => r.json())" % url)
        assert final["rows"][1]["values"]["tone_of_voice"] == "weary"
        assert final["rows"][1]["values"]["body_posture"] == final["rows"][1]["draft"]["body_posture"]
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("button.take-all[data-name=ann]")
        page.wait_for_selector("#adj-status:text('from ann')")
        final = page.evaluate("fetch('%s?copy=final').then((r) => r.json())" % url)
        assert [r["values"]["tone_of_voice"] for r in final["rows"][1:3]] == ["icy", "flat"]  # every row ann's
        assert page.inner_text("#adj-status") == "Took 2 row(s) from ann"
        page.click("#verify-final")
        page.wait_for_selector(".badge.verified:has-text('final: verified')")
        assert not errors, errors
        context.close()
    finally:
        running.stop()


def test_the_real_155_row_family_segment_shows_no_false_edit_after_verify(browser, real_data_path, tmp_path):
    """The issue's own case: after a verify with no change, 107 of 155 rows showed "edited"."""
    lines = real_data_path.read_text(encoding="utf-8").splitlines()
    longest = max(lines, key=lambda line: len(json.loads(line)["rows"]))
    sample = json.loads(longest)
    assert len(sample["rows"]) >= 100
    proj = tmp_path / "real"
    proj.mkdir()
    (proj / "draft.jsonl").write_text(longest + "\n", encoding="utf-8")
    running = Server(make_app(proj, tmp_path / "db.sqlite"))
    try:
        context, page = login(browser, running, "ann")
        errors = _errors(page)
        open_segment(page, running, sample["sample_id"])
        page.click("#verify")
        page.wait_for_selector("#seg-status.verified")
        page.reload()
        page.wait_for_selector("#row-1")
        count = len(sample["rows"])
        assert page.locator(".rowlist .badge.edited").count() == 0
        assert page.locator(".rowlist .badge.reviewed").count() == count
        assert sum(_walk_rows(page, count)) == 0
        assert not errors, errors
        context.close()
    finally:
        running.stop()
