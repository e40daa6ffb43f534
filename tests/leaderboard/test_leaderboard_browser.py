"""The leaderboard site in Chromium (issue #45): from a folder (file://) and from a static host (127.0.0.1), sorting,
the views, an entry page, a download, 1440 and 390 px, the keyboard, and an accessibility check (contrast, labels,
headings, alternative text)."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import TIMEOUT_S, browser  # noqa: F401 (the browser fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Every text's contrast with the background it sits on, by WCAG's formula: 4.5:1 for text (3:1 when large).
CONTRAST = """() => {
  function rgb(text) { const m = text.match(/[\\d.]+/g) || [0, 0, 0, 0]; return m.map(Number); }
  function lum(c) { const v = c.slice(0, 3).map(x => { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
                    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; }
  function background(el) { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
                            if (c.length < 4 || c[3] > 0) { return c; } } return [255, 255, 255, 1]; }
  const bad = [];
  for (const el of document.querySelectorAll("body *")) {
    if (!el.offsetParent && el.tagName !== "BODY") { continue; }
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) { continue; }
    const style = getComputedStyle(el);
    const fg = lum(rgb(style.color)), bg = lum(background(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    const large = parseFloat(style.fontSize) >= 24 || (parseFloat(style.fontSize) >= 18.66 && +style.fontWeight >= 700);
    if (ratio < (large ? 3 : 4.5)) { bad.push(el.tagName + ": " + el.textContent.trim().slice(0, 40) + " " + ratio.toFixed(2)); }
  }
  return bad;
}"""
# Every control has a label, every image alternative text, every table a caption, one h1 and no heading level skipped.
STRUCTURE = """() => {
  const bad = [];
  for (const c of document.querySelectorAll("select, input, textarea")) {
    if (!c.labels || !c.labels.length) { bad.push("unlabelled " + c.tagName + "#" + c.id); } }
  for (const i of document.querySelectorAll("img")) { if (!i.getAttribute("alt")) { bad.push("no alt: " + i.src); } }
  for (const t of document.querySelectorAll("table")) { if (!t.querySelector("caption")) { bad.push("no caption: " + t.id); } }
  for (const b of document.querySelectorAll("button, a")) { if (!b.textContent.trim()) { bad.push("empty " + b.tagName); } }
  const levels = [...document.querySelectorAll("h1, h2, h3, h4")].map(h => +h.tagName[1]);
  if (levels.filter(l => l === 1).length !== 1) { bad.push("h1 count " + levels.filter(l => l === 1).length); }
  for (let i = 1; i < levels.length; i++) { if (levels[i] > levels[i - 1] + 1) { bad.push("skipped to h" + levels[i]); } }
  return bad;
}"""


@pytest.fixture(scope="module")
def host(site: Path) -> Iterator[str]:
    """The site on a static host: Python's own file server on 127.0.0.1, stopped with the module."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _page(browser, width: int):  # type: ignore[no-untyped-def]  # noqa: F811
    page = browser.new_page(viewport={"width": width, "height": 900}, accept_downloads=True)
    page.set_default_timeout(TIMEOUT_S * 1000)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    return page, requests


def _ranks(page, scope: str = "all") -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return page.evaluate(f"""() => [...document.querySelectorAll('tbody[data-scope="{scope}"] tr')].map(
        r => [r.getAttribute('data-system'), r.querySelector('td.rank').textContent.trim()])""")


@pytest.mark.parametrize("width", [1440, 390])
def test_the_table_reads_at_both_widths_from_a_folder_and_asks_nothing_elsewhere(browser, site: Path,  # noqa: F811
                                                                                width: int) -> None:
    page, requests = _page(browser, width)
    page.goto((site / "index.html").as_uri())
    assert page.locator("h1").count() == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= width + 1  # only the table scrolls sideways
    assert page.locator("#board tbody[data-scope='all'] tr").count() > 5
    assert all(url.startswith("file://") or url.startswith("data:") for url in requests), requests
    assert page.evaluate(CONTRAST) == []
    assert page.evaluate(STRUCTURE) == []
    page.close()


def test_sorting_ranks_by_the_column_sorted_and_references_stay_unranked(browser, site: Path) -> None:  # noqa: F811
    page, _ = _page(browser, 1440)
    page.goto((site / "index.html").as_uri())
    header = page.locator("th[data-col='itp.f1']")
    assert header.get_attribute("aria-sort") == "descending"
    ranks = _ranks(page)
    assert next(rank for _, rank in ranks if rank != "reference") == "1"  # the best ranked row leads group 1
    assert all(rank == "reference" for system, rank in ranks if system.startswith(("human/", "paper: ")))
    page.click("button[data-sort='itp.f1']")
    assert header.get_attribute("aria-sort") == "ascending"
    page.click("button[data-sort='rpp.accuracy']")
    assert page.locator("th[data-col='rpp.accuracy']").get_attribute("aria-sort") == "descending"
    values = page.evaluate("""() => [...document.querySelectorAll('tbody[data-scope="all"] tr')].map(
        r => (JSON.parse(r.getAttribute('data-cells'))['rpp.accuracy'] || [null])[0]).filter(v => v !== null)""")
    assert values == sorted(values, reverse=True)
    first_ranked = next(rank for system, rank in _ranks(page) if rank != "reference")
    assert first_ranked == "1"
    page.close()


def test_the_views_by_scenario_task_and_relation_pattern(browser, site: Path) -> None:  # noqa: F811
    page, _ = _page(browser, 1440)
    page.goto((site / "index.html").as_uri())
    page.select_option("#scope", "family")
    assert page.locator("tbody[data-scope='family']").is_visible()
    assert not page.locator("tbody[data-scope='all']").is_visible()
    page.select_option("#view", "rpp")
    assert page.locator("th[data-col='rpp.accuracy']").is_visible()
    assert not page.locator("th[data-col='itp.f1']").is_visible()
    page.select_option("#view", "patterns")
    assert page.locator("#patterns").is_visible() and not page.locator("#board").is_visible()
    assert "pursue_withdraw" in page.locator("#patterns").inner_text() or page.locator("#patterns th").count() > 2
    page.close()


def test_keyboard_alone_sorts_and_opens_an_entry(browser, site: Path) -> None:  # noqa: F811
    page, _ = _page(browser, 1440)
    page.goto((site / "index.html").as_uri())
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('data-sort')") == "stp.recall_at_1":
            break
    else:
        raise AssertionError("the STP R@1 sort button is not reachable by Tab")
    page.keyboard.press("Enter")
    assert page.locator("th[data-col='stp.recall_at_1']").get_attribute("aria-sort") == "descending"
    link = page.locator("tbody[data-scope='all'] a[href*='entries/']").first
    link.focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "/entries/" in page.url and page.locator("h1").count() == 1
    assert page.evaluate(STRUCTURE) == [] and page.evaluate(CONTRAST) == []
    page.close()


def test_an_entry_page_and_a_download_from_a_static_host(browser, host: str, site: Path) -> None:  # noqa: F811
    page, requests = _page(browser, 1440)
    page.goto(f"{host}/entries/model-a/index.html")
    text = page.inner_text("main")
    for fact in ("scripted-model", "scripted-model-v2", "Zero-shot", "yes", "every metric to the last digit",
                 "Why answers failed", "answers.jsonl"):
        assert fact in text, fact
    with page.expect_download() as download:
        page.click("a[href='answers.jsonl']")
    saved = download.value.path()
    assert Path(saved).read_bytes() == (site / "entries" / "model-a" / "answers.jsonl").read_bytes()
    assert all(url.startswith(host) for url in requests), requests
    page.goto(f"{host}/changelog.html")
    assert page.evaluate(STRUCTURE) == [] and "model-b" in page.inner_text("main")
    page.close()
