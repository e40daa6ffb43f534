"""A screen that stays still (issue #37 item 2), in Debian's Chromium at 1440x900: the video and the timeline keep
their size whatever row is chosen (the editor column no longer widens for a therapist row's strategy line), a
therapist row fits without the page scrolling, the rows under the timeline fill the column (room for ten or more), and the timeline's
blocks are labelled by speaker with a colour per speaker."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from review_helpers import FIRST
from test_review_browser import browser, login, open_segment, wait_until  # noqa: F401 (the browser fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTH, HEIGHT = 1440, 900
MEASURE_OUT = os.environ.get("RESCUE_SCREEN_MEASURES")  # where the measured figures go when asked

MEASURE = """() => {
  const box = (sel) => { const n = document.querySelector(sel); if (!n) return null;
    const r = n.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; };
  const list = document.querySelector('.rows');
  const lr = list.getBoundingClientRect();
  const head = list.querySelector('thead') ? list.querySelector('thead').getBoundingClientRect().height : 0;
  const visible = [...list.querySelectorAll('tbody tr')].filter((tr) => {
    const r = tr.getBoundingClientRect(); return r.top >= lr.top + head - 1 && r.bottom <= lr.bottom + 1; }).length;
  const rowHeight = list.querySelector('tbody tr').getBoundingClientRect().height;
  const editor = document.getElementById('editor');
  return { video: box('#video'), timeline: box('#timeline'), rows_visible: visible,
           rows_room: Math.floor((list.clientHeight - head) / rowHeight),
           page_height: document.documentElement.scrollHeight, window_height: window.innerHeight,
           editor_fits: editor.scrollHeight <= editor.clientHeight + 1, speaker: document.getElementById('input-primary_speaker').value };
}"""


def _measure(page: Any, row: int) -> dict[str, Any]:
    page.click(f"#row-{row}")
    page.wait_for_selector(f"#row-{row}.selected")
    wait_until(page, "document.getElementById('video').readyState >= 1")
    return page.evaluate(MEASURE)  # type: ignore[no-any-return]


def test_the_video_and_timeline_keep_their_size_and_a_therapist_row_fits_without_page_scroll(browser, server):
    context, page = login(browser, server, "ann", width=WIDTH, height=HEIGHT)
    open_segment(page, server, FIRST)
    rows = page.evaluate("fetch('/api/segments/' + encodeURIComponent('%s')).then((r) => r.json())" % FIRST)["rows"]
    client = next(r["row_index"] for r in rows if r["values"]["primary_speaker"] != "Therapist")
    therapist = next(r["row_index"] for r in rows if r["values"]["primary_speaker"] == "Therapist")
    seen = {"client": _measure(page, client), "therapist": _measure(page, therapist)}
    seen["client_again"] = _measure(page, client)
    page.click(f"#row-{therapist}")
    page.keyboard.press("Enter")  # into the editor, as an annotator works
    seen["therapist_editing"] = page.evaluate(MEASURE)
    if MEASURE_OUT:
        Path(MEASURE_OUT).write_text(json.dumps(seen, indent=1), encoding="utf-8")
    assert seen["therapist"]["speaker"] == "Therapist" and seen["client"]["speaker"] != "Therapist"
    sizes = {name: (m["video"], m["timeline"]) for name, m in seen.items()}
    assert len(set(map(json.dumps, sizes.values()))) == 1, sizes  # one size, whatever the row
    for name, m in seen.items():
        assert m["page_height"] <= m["window_height"], (name, m)  # the page itself never scrolls
    assert seen["therapist"]["editor_fits"], seen["therapist"]  # nor does a therapist row's editor
    assert seen["client"]["video"][0] >= 560, seen["client"]  # the video stays large
    assert all(m["rows_visible"] == len(rows) for m in seen.values()), seen  # this segment's rows, all in sight
    assert min(m["rows_room"] for m in seen.values()) >= 10, seen  # room for ten or more under the timeline
    context.close()


def test_timeline_blocks_are_labelled_by_speaker_with_a_colour_per_speaker(browser, server):
    context, page = login(browser, server, "ann", width=WIDTH, height=HEIGHT)
    open_segment(page, server, FIRST)
    page.wait_for_selector("#timeline .block")
    blocks = page.evaluate("""() => [...document.querySelectorAll('#timeline .block')].map((b) => ({
        label: b.querySelector('.block-label').textContent, lane: b.parentElement.dataset.speaker,
        colour: getComputedStyle(b).backgroundColor, lane_colour: getComputedStyle(b.parentElement.querySelector('.lane-name')).color,
        selected: b.classList.contains('selected') }))""")
    assert blocks
    colour_of: dict[str, str] = {}
    for block in blocks:
        assert block["label"] == block["lane"], block  # the speaker's name, not the row number
        assert colour_of.setdefault(block["lane"], block["colour"]) == block["colour"], block  # the chosen one too
        assert block["lane_colour"] == block["colour"], block  # as its lane's name
    assert len(set(colour_of.values())) == len(colour_of) >= 2, colour_of  # one colour per speaker
    context.close()
