"""The row list in Debian's Chromium (issue #37 item 4): rows from a split and a moved boundary say ``re-cut`` and
``re-timed`` (not "draft"), and merging a therapist row with a client row that speaks to the therapist asks first,
offering to leave the therapist out of the merged row's targets (verify would refuse the self-target)."""

from __future__ import annotations

import pytest
from review_helpers import FIRST, Client
from test_review_browser import browser, login, open_segment, wait_until  # noqa: F401 (the browser fixture)
from test_review_cuts_browser import choose, press, seek

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def badges(page) -> list[str]:  # type: ignore[no-untyped-def]
    return page.evaluate("[...document.querySelectorAll('.rowlist tbody tr')].map((tr) => tr.children[7].textContent)")  # type: ignore[no-any-return]


def test_re_cut_and_re_timed_rows_say_so_and_a_self_target_merge_offers_the_fix(browser, server, app):
    api = Client(app, "ann")
    seg = api.segment()
    values = [r["values"] for r in seg["rows"]]
    pair = next(i for i in range(1, len(values)) if values[i - 1]["primary_speaker"] == "Therapist"
                and values[i]["primary_speaker"] != "Therapist" and "Therapist" in values[i]["target"])
    context, page = login(browser, server, "ann")
    open_segment(page, server, FIRST)
    assert set(badges(page)) == {"draft"}
    # a moved boundary: the row says re-timed at once
    choose(page, pair + 1)
    r = page.evaluate(f"window.reviewState().rows[{pair}]")
    seek(page, round(r["end"] - 0.4, 2))
    press(page, "o")
    wait_until(page, f"document.querySelectorAll('.rowlist tbody tr')[{pair}].children[7].textContent === 're-timed'")
    # the merge asks: cancel first (nothing happens), then take the fix
    count = len(values)
    choose(page, pair)
    press(page, "m")
    page.wait_for_selector("#merge-dialog")
    assert "self-target" in page.inner_text("#merge-dialog")
    page.click("#merge-cancel")
    assert page.locator("#merge-dialog").count() == 0 and len(api.segment()["rows"]) == count
    press(page, "m")
    page.click("#merge-fix")
    wait_until(page, f"window.reviewState().rows.length === {count - 1}")
    merged = api.segment()["rows"][pair - 1]
    assert merged["values"]["primary_speaker"] == "Therapist" and "Therapist" not in merged["values"]["target"]
    assert not any(c["rule"] == "self-target" for c in merged["checks"])
    assert badges(page)[pair - 1].startswith("re-cut")  # "re-cut · edited": its words differ from the draft row's too
    # a split: both halves say re-cut
    choose(page, 1)
    first = page.evaluate("window.reviewState().rows[0]")
    seek(page, round((first["start"] + first["end"]) / 2, 2))
    press(page, "s")
    wait_until(page, f"window.reviewState().rows.length === {count}")
    assert all(b.startswith("re-cut") for b in badges(page)[:2]), badges(page)
    context.close()
