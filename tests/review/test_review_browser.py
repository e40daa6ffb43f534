"""End to end: the review tool in Debian's Chromium through Playwright, against a real uvicorn on 127.0.0.1."""

from __future__ import annotations

import json
import os
import time
from contextlib import closing
from pathlib import Path
from urllib.parse import quote

import pytest
from browser_helpers import TIMEOUT_S, browser, wait_until  # noqa: F401 (the browser fixture, for this module and others)
from review_helpers import FIRST, PASSWORD, Server, make_app

from rescue.data.validation import validate_path
from rescue.testing.review_project import make_review_project

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# The README's screenshot; a test run refreshes it only when asked, so running the suite never edits the tree.
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "review.png"


def login(browser, server, name: str, width: int = 1440, height: int = 960):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_S * 1000)
    page.goto(server.url + "/")
    assert "/login" in page.url  # every page needs a login
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(server.url + "/")
    return context, page


def open_segment(page, server, sample_id: str = FIRST, copy: str | None = None) -> None:  # type: ignore[no-untyped-def]
    page.goto(server.url + "/segments/" + quote(sample_id, safe="") + (f"?copy={copy}" if copy else ""))
    page.wait_for_selector("#row-1")


def current_time(page) -> float:  # type: ignore[no-untyped-def]
    return float(page.evaluate("document.getElementById('video').currentTime"))


def test_choose_a_row_seek_loop_edit_save_and_reload(browser, server):
    context, page = login(browser, server, "ann")
    assert page.locator("#segments").is_visible() and "remaining rows" in page.content()
    page.click(f"a[href='/segments/{quote(FIRST, safe='/')}']")
    page.wait_for_selector("#row-1")
    wait_until(page, "document.getElementById('video').readyState >= 1")
    rows = page.evaluate("window.reviewState().rows")
    third = rows[2]
    page.click("#row-3")
    wait_until(page, f"Math.abs(document.getElementById('video').currentTime - {third['start']}) < 0.3")
    assert third["start"] - 0.3 <= current_time(page) < third["end"]
    # loop the row at double speed: the playhead must come back to the row's start and never leave its span
    page.check("#loop")
    speed = 2
    page.select_option("#speed", str(speed))
    # The page checks the loop once a frame. A frame clock of the test's own tells how long the page has gone
    # without one when the playhead is read: on a loaded machine the page can stall while the video plays on,
    # and the playhead may then pass the row's end by what played meanwhile (speed x the stall), no more.
    page.evaluate("(() => { const beat = () => { window.testFrameAt = performance.now(); requestAnimationFrame(beat); };"
                  " beat(); })()")
    page.evaluate("document.getElementById('video').play()")
    span = third["end"] - third["start"]
    seen, wrapped, last = [], False, None
    deadline = time.monotonic() + span / speed + TIMEOUT_S  # Chromium's playback can stall on a loaded machine
    while time.monotonic() < deadline and not wrapped:
        t, stalled_ms = page.evaluate("[document.getElementById('video').currentTime,"
                                      " performance.now() - window.testFrameAt]")
        seen.append((float(t), float(stalled_ms) / 1000))
        if last is not None and t < last - 0.5:
            wrapped = True
        last = t
        time.sleep(0.1)
    page.evaluate("document.getElementById('video').pause()")
    assert wrapped, f"never looped back: {seen[-5:]}"
    outside = [(t, stalled) for t, stalled in seen
               if not third["start"] - 0.3 <= t <= third["end"] + 0.3 + speed * stalled]
    assert not outside, (third, outside)
    # the subtitle line under the playhead is highlighted
    assert page.locator("#row-3.playing").count() == 1 and page.locator("#cue").inner_text().strip()
    # keyboard: j moves to the next row and seeks there
    page.locator("#row-3").focus()
    page.keyboard.press("j")
    page.wait_for_selector("#row-4.selected")
    page.keyboard.press("k")
    page.wait_for_selector("#row-3.selected")
    # change the target, save, reload: the server has it
    page.uncheck("#input-target input[value=Therapist]")
    page.check("#input-target input[value=Sam]") if not page.is_checked("#input-target input[value=Sam]") else None
    assert page.locator("#row-3 .badge.unsaved").count() == 1
    page.click("#save")
    page.wait_for_selector("#save-status.good")
    page.reload()
    page.wait_for_selector("#row-3")
    page.click("#row-3")
    assert page.is_checked("#input-target input[value=Sam]") and not page.is_checked("#input-target input[value=Therapist]")
    assert "Sam" in page.locator("#row-3").inner_text()
    assert page.locator("#row-3 .badge.edited").count() == 1
    context.close()


def test_edits_survive_a_reload_before_saving_and_a_lost_connection(browser, server):
    context, page = login(browser, server, "ann")
    open_segment(page, server)
    page.click("#row-2")
    page.fill("#input-tone_of_voice", "flat, barely audible")
    page.reload()
    page.wait_for_selector("#row-2 .badge.unsaved")
    page.click("#row-2")
    assert page.input_value("#input-tone_of_voice") == "flat, barely audible"
    context.set_offline(True)
    page.click("#save")
    page.wait_for_selector("#save-status.bad")
    assert "kept in this browser" in page.inner_text("#save-status")
    context.set_offline(False)
    page.click("#save")
    page.wait_for_selector("#save-status.good")
    page.reload()
    page.wait_for_selector("#row-2")
    page.click("#row-2")
    assert page.input_value("#input-tone_of_voice") == "flat, barely audible"
    assert page.locator("#row-2 .badge.unsaved").count() == 0
    context.close()


def test_two_browsers_edit_one_row_and_the_second_gets_the_conflict(browser, server):
    first_context, first = login(browser, server, "ada")
    second_context, second = login(browser, server, "root")
    for page in (first, second):
        open_segment(page, server, copy="final")
        page.click("#row-2")
    first.fill("#input-tone_of_voice", "from the first browser")
    first.click("#save")
    first.wait_for_selector("#save-status.good")
    second.fill("#input-tone_of_voice", "from the second browser")
    second.click("#save")
    second.wait_for_selector(".conflict")
    assert "from the first browser" in second.inner_text(".conflict .theirs")
    assert "from the second browser" in second.inner_text(".conflict .mine")
    second.reload()  # nothing lost: the unsaved edit is still in the browser
    second.wait_for_selector("#row-2 .badge.unsaved")
    second.click("#row-2")
    assert second.input_value("#input-tone_of_voice") == "from the second browser"
    second.click("#save")
    second.wait_for_selector(".conflict")
    second.click("#resolve")  # keep mine
    second.wait_for_selector("#save-status.good")
    first.reload()
    first.wait_for_selector("#row-2")
    first.click("#row-2")
    assert first.input_value("#input-tone_of_voice") == "from the second browser"
    first_context.close()
    second_context.close()


def test_discard_with_a_reason(browser, server):
    context, page = login(browser, server, "bob")
    open_segment(page, server, "demo_family_okafor/001_session")
    page.click("#discard")
    page.select_option("#discard-reason", "other")
    page.click("#discard-confirm")
    page.wait_for_selector(".dialog .error:has-text('needs a comment')")
    page.select_option("#discard-reason", "speaker_mismatch")
    page.fill("#discard-comment", "two voices swap at 0:40")
    page.click("#discard-confirm")
    page.wait_for_selector("#seg-status.discarded")
    assert "speaker_mismatch" in page.inner_text("#seg-status")
    context.close()


def _api_client(server, name: str):  # type: ignore[no-untyped-def]
    import httpx

    client = httpx.Client(base_url=server.url, timeout=10)
    client.headers["X-CSRF-Token"] = client.post("/api/login", json={"name": name, "password": PASSWORD}).json()["csrf"]
    return client


def test_two_annotators_disagree_the_adjudicator_picks_exports_and_it_validates(browser, server, tmp_path):
    url = "/api/segments/" + quote(FIRST, safe="")
    with closing(_api_client(server, "root")) as root:
        assert root.post("/api/assignments", json={"k": 2, "annotators": ["ann", "bob"]}).status_code == 200
    for name, tone in (("ann", "icy"), ("bob", "weary")):
        with closing(_api_client(server, name)) as client:
            assert client.put(url + "/rows/1", json={"version": 0, "fields": {"tone_of_voice": tone}}).status_code == 200
    context, page = login(browser, server, "ann")
    open_segment(page, server)
    page.click("#verify")
    page.wait_for_selector("#seg-status.verified")
    context.close()
    with closing(_api_client(server, "bob")) as client:
        assert client.post(url + "/verify").status_code == 200
    context, page = login(browser, server, "ada")
    assert "need adjudication" in page.content()
    page.goto(server.url + "/segments/" + quote(FIRST, safe="") + "/adjudicate")
    page.wait_for_selector("#verify-final")
    page.click("button:text('use bob')")
    page.wait_for_selector("td.chosen:has-text('weary')")
    page.click("#verify-final")
    page.wait_for_selector(".badge.verified:has-text('final: verified')")
    page.goto(server.url + "/")
    with page.expect_download() as download:
        page.click("#export")
    out = tmp_path / "verified.jsonl"
    download.value.save_as(out)
    report = validate_path(out)
    assert not report.errors and [s.sample_id for s in report.samples] == [FIRST]
    assert report.samples[0].rows[0].tone_of_voice == "weary"
    page.goto(server.url + "/agreement")
    assert page.locator("#agreement tbody tr").count() >= 5
    context.close()


def test_data_written_to_contain_script_shows_as_text(browser, tmp_path):
    from rescue.testing.review_project import demo_samples

    samples = demo_samples()[:1]
    samples[0]["rows"][0]["dialogue_cleaned"] = "<script>window.pwned = 1</script><img src=x onerror='window.pwned=2'>"
    samples[0]["rows"][0]["tone_of_voice"] = "<b>bold</b>"
    proj = make_review_project(tmp_path / "p", samples, media=False)
    running = Server(make_app(proj, tmp_path / "db.sqlite"))
    try:
        context, page = login(browser, running, "ann")
        open_segment(page, running)
        page.click("#row-1")
        assert page.evaluate("window.pwned") is None
        assert "<script>" in page.input_value("#input-dialogue_cleaned")
        assert page.locator("#editor b:text('bold')").count() == 0
        context.close()
    finally:
        running.stop()


def test_screenshot_of_the_segment_view(browser, server, tmp_path):
    context, page = login(browser, server, "ann", width=1500, height=1000)
    # a couple of saved edits so the row list shows its states
    open_segment(page, server)
    page.click("#row-2")
    page.click("#accept-row")
    page.wait_for_selector("#save-status.good")
    page.click("#row-3")
    page.select_option("#input-relation_pattern", "pursue_withdraw")
    page.click("#save")
    page.wait_for_selector("#save-status.good")
    page.click("#row-4")
    page.fill("#input-tone_of_voice", "softer now, slower")
    wait_until(page, "document.getElementById('video').readyState >= 2")
    page.evaluate("""new Promise((done) => { const v = document.getElementById('video');
        v.addEventListener('seeked', () => setTimeout(done, 300), { once: true });
        v.currentTime = window.reviewState().rows[3].start + 0.5; })""")
    page.wait_for_selector("#row-4.playing")
    wait_until(page, "document.getElementById('video').readyState >= 3")
    wait_until(page, "ReviewTimeline.state().wave !== null")  # the timeline's waveform is in the picture
    shot = SCREENSHOT if os.environ.get("RESCUE_UPDATE_SCREENSHOTS") == "1" else tmp_path / "review.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000
    context.close()


def test_every_row_of_a_real_sample_opens_without_a_script_error(browser, real_data_path, tmp_path):
    proj = tmp_path / "real"
    proj.mkdir()
    lines = real_data_path.read_text(encoding="utf-8").splitlines()
    (proj / "draft.jsonl").write_text("\n".join(lines[:2]) + "\n", encoding="utf-8")
    running = Server(make_app(proj, tmp_path / "db.sqlite"))
    try:
        context, page = login(browser, running, "ann")
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        sample_id = json.loads(lines[0])["sample_id"]
        open_segment(page, running, sample_id)
        count = page.locator(".rowlist tbody tr").count()
        page.locator("#row-1").focus()
        for _ in range(count - 1):
            page.keyboard.press("j")
        page.wait_for_selector(f"#row-{count}.selected")
        assert page.locator("#editor fieldset.dimension").count() == 6
        page.click("#accept-row")
        page.wait_for_selector("#save-status.good")
        assert not errors, errors
        context.close()
    finally:
        running.stop()
