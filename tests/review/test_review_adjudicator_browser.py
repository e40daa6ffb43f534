"""The adjudicator's tools in Debian's Chromium (issue #37 item 5): "take all" sends one write, not one save per
row; the adjudication view shows each annotator's rows as a strip under the final copy's timeline, on its scale;
and dragging a boundary two rows share moves both rows' times."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from review_helpers import FIRST, Client
from test_review_browser import browser, login, open_segment, wait_until  # noqa: F401 (the browser fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _copies(app) -> tuple[Client, Client]:  # type: ignore[no-untyped-def]
    """ann re-words two rows; bob splits row 1 and re-words another."""
    ann, bob = Client(app, "ann"), Client(app, "bob")
    for row, tone in ((2, "ann two"), (4, "ann four")):
        assert ann.save(row, {"tone_of_voice": tone}).status_code == 200
    assert bob.save(3, {"tone_of_voice": "bob three"}).status_code == 200
    first = bob.segment()["rows"][0]
    at = round((first["start_time"] + first["end_time"]) / 2, 2)
    split = bob.write("POST", "/api/segments/" + quote(FIRST, safe="") + "/rows/1/split",
                      {"layout": 0, "version": 0, "at": at})
    assert split.status_code == 200, split.text
    return ann, bob


def test_the_adjudication_view_shows_each_annotators_timeline_and_takes_all_in_one_write(browser, server, app):
    ann, bob = _copies(app)
    context, page = login(browser, server, "ada")
    writes: list[str] = []
    page.on("request", lambda request: writes.append(f"{request.method} {request.url}") if request.method != "GET" else None)
    page.goto(server.url + "/segments/" + quote(FIRST, safe="") + "/adjudicate")
    page.wait_for_selector("#copy-timelines .copy-lane")
    strips = page.evaluate("""[...document.querySelectorAll('#copy-timelines .copy-lane')].map((lane) => ({
        name: lane.dataset.copy, labels: [...lane.querySelectorAll('.block-label')].map((b) => b.textContent),
        lefts: [...lane.querySelectorAll('.block')].map((b) => Math.round(b.getBoundingClientRect().left)),
        colours: [...lane.querySelectorAll('.block')].map((b) => getComputedStyle(b).backgroundColor) }))""")
    by_name = {s["name"]: s for s in strips}
    assert set(by_name) == {"ann", "bob"}
    for name, client in (("ann", ann), ("bob", bob)):
        rows = client.segment()["rows"]
        assert by_name[name]["labels"] == [r["values"]["primary_speaker"] for r in rows]  # bob's has his split
    final_lefts = page.evaluate("[...document.querySelectorAll('#timeline .block')].sort((a, b) => a.dataset.index - b.dataset.index)"
                                ".map((b) => Math.round(b.getBoundingClientRect().left))")
    assert by_name["ann"]["lefts"] == final_lefts  # the same scale and scroll: ann kept the draft's cut
    assert len(by_name["bob"]["lefts"]) == len(final_lefts) + 1
    speakers = by_name["ann"]["labels"]
    colour = dict(zip(speakers, by_name["ann"]["colours"]))
    assert len(set(colour.values())) == len(colour) and all(colour[s] == c for s, c in zip(speakers, by_name["ann"]["colours"]))
    # take all of ann's: one write
    writes.clear()
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button.take-all[data-name=ann]")
    page.wait_for_selector("#adj-status:text('Took 2 row(s) from ann')")
    assert len(writes) == 1 and writes[0].startswith("POST ") and "/rows/take-fields?copy=final" in writes[0], writes
    final = Client(app, "ada").segment(copy="final")["rows"]
    assert [final[1]["values"]["tone_of_voice"], final[3]["values"]["tone_of_voice"]] == ["ann two", "ann four"]
    context.close()


def test_dragging_a_boundary_two_rows_share_moves_both(browser, server, app):
    ann = Client(app, "ann")
    rows = ann.segment()["rows"]
    assert ann.save(1, {"end_time": rows[1]["start_time"]}, 0).status_code == 200  # rows 1 and 2 now meet
    shared = rows[1]["start_time"]
    context, page = login(browser, server, "ann")
    open_segment(page, server, FIRST)
    page.wait_for_selector("#timeline #block-1")
    pps = page.evaluate("ReviewTimeline.state().pxPerSecond")
    edge = page.locator("#block-1 .edge.end").bounding_box()
    x, y = edge["x"] + edge["width"] / 2, edge["y"] + edge["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - pps / 2, y, steps=3)
    page.mouse.move(x - pps, y, steps=3)
    page.mouse.up()
    wait_until(page, f"window.reviewState().rows[0].end < {shared - 0.5}")
    after = ann.segment()["rows"]
    assert after[0]["end_time"] == after[1]["start_time"] < shared - 0.5  # both moved, still meeting
    assert after[1]["end_time"] == rows[1]["end_time"]
    # one key undoes the move, for both rows
    page.focus("#row-1")
    page.keyboard.press("Control+z")
    wait_until(page, f"window.reviewState().rows[0].end === {shared}")
    after = ann.segment()["rows"]
    assert after[0]["end_time"] == after[1]["start_time"] == shared
    context.close()
