"""The timeline and row cuts in Debian's Chromium: rows as blocks per speaker with the clip's waveform, click to
seek, frame steps, split / merge / insert / delete and boundary moves by key and by drag, each stored on the
server (a reload shows it) and a stale cut answered by reloading the rows."""

from __future__ import annotations


import pytest
from review_helpers import FIRST, Client, make_app, seg_url
from test_review_browser import Server, browser, login, open_segment, wait_until  # noqa: F401 (the browser fixture)

from rescue.testing.review_project import make_review_project

pytestmark = [pytest.mark.browser, pytest.mark.slow]




def rows(page) -> list[dict]:  # type: ignore[no-untyped-def]
    return page.evaluate("window.reviewState().rows")  # type: ignore[no-any-return]


def seek(page, t: float) -> None:  # type: ignore[no-untyped-def]
    page.evaluate(f"(() => {{ const v = document.getElementById('video'); v.pause(); v.currentTime = {t}; }})()")
    wait_until(page, f"Math.abs(document.getElementById('video').currentTime - {t}) < 0.01 && !document.getElementById('video').seeking")


def press(page, key: str) -> None:  # type: ignore[no-untyped-def]
    page.focus("#row-1")  # keys act outside the editor's inputs
    page.keyboard.press(key)


def choose(page, index: int) -> None:  # type: ignore[no-untyped-def]
    page.click(f"#row-{index} td:first-child")
    wait_until(page, f"window.reviewState().selected === {index - 1}")


def test_timeline_shows_rows_text_and_waveform_and_seeks_and_steps_frames(browser, server, app):
    context, page = login(browser, server, "ann")
    open_segment(page, server)
    count = len(rows(page))
    wait_until(page, f"document.querySelectorAll('#timeline .block').length === {count}")
    wait_until(page, "ReviewTimeline.state().wave !== null")
    wave = page.evaluate("ReviewTimeline.state()")
    assert wave["wave"]["fps"] == 5 and wave["wave"]["peaks"] > 100
    # one lane per speaker: every block sits in the lane named after its row's speaker
    placed = page.evaluate("[...document.querySelectorAll('#timeline .block')].sort((a, b) => a.dataset.index - b.dataset.index)"
                           ".map((b) => b.parentElement.dataset.speaker)")
    speakers = page.evaluate("[...document.querySelectorAll('.rowlist tbody tr')].map((tr) => tr.children[2].textContent)")
    assert placed == speakers
    # the row list shows each row's text
    segment = Client(app, "ann").segment()
    texts = page.evaluate("[...document.querySelectorAll('.rowlist td.text')].map((td) => td.textContent)")
    assert texts == [r["values"]["dialogue_cleaned"] for r in segment["rows"]]
    # click on the waveform to seek
    box = page.locator("#waveform").bounding_box()
    pps = wave["pxPerSecond"]
    page.mouse.click(box["x"] + 7.5 * pps, box["y"] + box["height"] / 2)
    wait_until(page, "Math.abs(document.getElementById('video').currentTime - 7.5) < 0.2")
    head = page.locator("#playhead").bounding_box()
    assert abs(head["x"] - (box["x"] + 7.5 * pps)) < 3
    # frame steps without playing: the test clip has 5 frames a second
    seek(page, 3.0)
    press(page, ".")
    press(page, ".")
    wait_until(page, "Math.abs(document.getElementById('video').currentTime - 3.4) < 0.01")
    press(page, ",")
    wait_until(page, "Math.abs(document.getElementById('video').currentTime - 3.2) < 0.01")
    assert page.evaluate("document.getElementById('video').paused")
    # clicking a block chooses its row
    page.click("#block-3 .block-label", force=True)
    wait_until(page, "window.reviewState().selected === 2")
    # zoom in: twice the pixels a second, the blocks twice as wide
    width = page.locator("#block-3").bounding_box()["width"]
    page.click("#zoom-in")
    wait_until(page, f"ReviewTimeline.state().pxPerSecond === {2 * pps}")
    assert abs(page.locator("#block-3").bounding_box()["width"] - 2 * width) < 2
    context.close()


def test_split_merge_insert_and_delete_from_the_keyboard(browser, server, app):
    context, page = login(browser, server, "ann")
    open_segment(page, server)
    before = rows(page)
    second = before[1]
    middle = round((second["start"] + second["end"]) / 2, 1)
    choose(page, 2)
    seek(page, middle)
    press(page, "s")
    wait_until(page, f"window.reviewState().rows.length === {len(before) + 1}")
    after = rows(page)
    assert (after[1]["end"], after[2]["start"]) == (middle, middle)
    assert [r["row_index"] for r in after] == list(range(1, len(after) + 1))
    wait_until(page, f"document.querySelectorAll('#timeline .block').length === {len(after)}")
    # merge the halves again
    choose(page, 2)
    press(page, "m")
    wait_until(page, f"window.reviewState().rows.length === {len(before)}")
    assert (rows(page)[1]["start"], rows(page)[1]["end"]) == (second["start"], second["end"])
    # a new row at the playhead, for speech nobody annotated
    t = round(before[0]["start"] + 0.3, 1)
    seek(page, t)
    press(page, "n")
    wait_until(page, f"window.reviewState().rows.length === {len(before) + 1}")
    new = rows(page)[1]
    assert new["start"] == t and page.evaluate("window.reviewState().selected") == 1
    # ... and delete it again (the browser asks first)
    page.once("dialog", lambda dialog: dialog.accept())
    press(page, "Shift+Delete")
    wait_until(page, f"window.reviewState().rows.length === {len(before)}")
    # everything was stored: a reload shows the same rows, and the audit log has each cut
    page.reload()
    page.wait_for_selector("#row-1")
    assert [(r["start"], r["end"]) for r in rows(page)] == [(r["start"], r["end"]) for r in before]
    log = Client(app, "ada").get(seg_url(FIRST) + "/audit").json()
    assert [e["action"] for e in log if e["action"].startswith("row.")] == ["row.split", "row.merge", "row.insert", "row.delete"]
    context.close()


def test_boundaries_move_by_key_and_by_drag(browser, server, app):
    context, page = login(browser, server, "ann")
    open_segment(page, server)
    third = rows(page)[2]
    choose(page, 3)
    start = round(third["start"] + 0.4, 1)
    seek(page, start)
    press(page, "i")
    wait_until(page, f"window.reviewState().rows[2].start === {start}")
    end = round(third["end"] - 0.4, 1)
    seek(page, end)
    press(page, "o")
    wait_until(page, f"window.reviewState().rows[2].end === {end}")
    assert rows(page)[2]["version"] == 2
    # drag the end edge of row 3 one second to the right
    pps = page.evaluate("ReviewTimeline.state().pxPerSecond")
    edge = page.locator("#block-3 .edge.end").bounding_box()
    x, y = edge["x"] + edge["width"] / 2, edge["y"] + edge["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + pps / 2, y, steps=3)
    page.mouse.move(x + pps, y, steps=3)
    page.mouse.up()
    wait_until(page, "window.reviewState().rows[2].version === 3")
    dragged = rows(page)[2]["end"]
    assert abs(dragged - (end + 1.0)) < 0.5
    page.reload()
    page.wait_for_selector("#row-3")
    assert (rows(page)[2]["start"], rows(page)[2]["end"]) == (start, dragged)
    edits = [e["field"] for e in Client(app, "ann").get(seg_url(FIRST) + "/rows/3/audit").json()
             if e["action"] == "row.edit"]
    assert edits == ["start_time", "end_time", "end_time"]
    context.close()


def test_a_cut_over_a_newer_cut_reloads_the_rows(browser, server, app):
    context, page = login(browser, server, "ann")
    open_segment(page, server)
    count = len(rows(page))
    # the same annotator in another tab deletes row 5 first
    other = Client(app, "ann")
    assert other.write("DELETE", seg_url(FIRST) + "/rows/5", {"layout": 0, "version": 0}).status_code == 200
    choose(page, 2)
    press(page, "m")
    wait_until(page, "/changed since/.test(document.getElementById('save-status').textContent)")
    wait_until(page, f"window.reviewState().rows.length === {count - 1}")  # the other tab's cut, not a merge
    context.close()


def test_without_a_clip_a_click_on_the_timeline_places_the_playhead_for_a_split(browser, tmp_path):
    bare = make_review_project(tmp_path / "bare", media=False)
    running = Server(make_app(bare, tmp_path / "review.db"))
    try:
        context, page = login(browser, running, "ann")
        open_segment(page, running)
        before = rows(page)
        wait_until(page, f"document.querySelectorAll('#timeline .block').length === {len(before)}")
        second = before[1]
        middle = (second["start"] + second["end"]) / 2
        pps = page.evaluate("ReviewTimeline.state().pxPerSecond")
        box = page.locator("#waveform").bounding_box()
        choose(page, 2)  # choosing a row puts the playhead at its start and its block in view
        assert abs(float(page.evaluate("parseFloat(document.getElementById('playhead').style.left)")) - second["start"] * pps) < 0.5
        box = page.locator("#waveform").bounding_box()
        page.mouse.click(box["x"] + middle * pps, box["y"] + box["height"] / 2)
        press(page, "s")
        wait_until(page, f"window.reviewState().rows.length === {len(before) + 1}")
        cut_at = rows(page)[1]["end"]
        assert abs(cut_at - middle) < 2 / pps and rows(page)[2]["start"] == cut_at
        context.close()
    finally:
        running.stop()


def test_the_adjudicator_takes_an_annotators_cut(browser, server, app):
    Client(app, "root").write("POST", "/api/assignments", {"k": 2, "annotators": ["ann", "bob"]})
    ann, bob = Client(app, "ann"), Client(app, "bob")
    row = ann.segment()["rows"][1]
    middle = round((row["start_time"] + row["end_time"]) / 2, 3)
    assert ann.write("POST", seg_url(FIRST) + "/rows/2/split", {"layout": 0, "version": 0, "at": middle}).status_code == 200
    for client in (ann, bob):
        assert client.verify().status_code == 200
    theirs = [(r["start_time"], r["end_time"]) for r in ann.segment()["rows"]]
    context, page = login(browser, server, "ada")
    page.goto(server.url + "/segments/" + FIRST.replace("/", "%2F") + "/adjudicate")
    page.wait_for_selector("#verify-final")
    assert page.locator("button.take-cut[data-name=bob]").count() == 0  # bob kept the draft's cut, as the final copy
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button.take-cut[data-name=ann]")
    page.wait_for_selector("#adj-status:text(\"ann's\")")
    final = Client(app, "ada").segment(copy="final")
    assert [(r["start_time"], r["end_time"]) for r in final["rows"]] == theirs and final["layout"] == 1
    # the final copy now has ann's cut: now bob's is the one that differs
    assert page.locator("button.take-cut[data-name=ann]").count() == 0
    assert page.locator("button.take-cut[data-name=bob]").count() == 1
    context.close()


def test_unsaved_edits_from_before_a_cut_elsewhere_are_set_aside_not_misapplied(browser, server, app):
    context, page = login(browser, server, "ann")
    open_segment(page, server)
    fourth = Client(app, "ann").segment()["rows"][3]
    choose(page, 4)
    page.fill("#input-tone_of_voice", "meant for row four")
    wait_until(page, "Object.keys(window.reviewState().pending).length === 1")
    # another tab deletes row 1: what was row 4 is now row 3, and row 4 is another row
    other = Client(app, "ann")
    assert other.write("DELETE", seg_url(FIRST) + "/rows/1", {"layout": 0, "version": 0}).status_code == 200
    page.keyboard.press("Control+s")
    page.wait_for_selector("#set-aside")
    assert "meant for row four" in page.inner_text("#set-aside")
    assert page.evaluate("Object.keys(window.reviewState().pending).length") == 0
    rows_now = Client(app, "ann").segment()["rows"]
    assert all(r["values"]["tone_of_voice"] != "meant for row four" for r in rows_now)
    assert rows_now[2]["values"]["dialogue_cleaned"] == fourth["values"]["dialogue_cleaned"]
    page.reload()  # still shown after a reload, until dismissed
    page.wait_for_selector("#set-aside")
    page.click("#dismiss-aside")
    wait_until(page, "!document.getElementById('set-aside')")
    context.close()
