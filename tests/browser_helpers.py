"""Shared by the browser tests (marked ``browser``): Debian's Chromium through Playwright, and a wait that polls
from Python (the apps' Content-Security-Policy refuses Playwright's in-page polling)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--autoplay-policy=no-user-gesture-required"]
# How long a page action or a wait may take before the test fails: generous, as Chromium on a loaded machine
# (the CI's clean clone runs beside other work) can take many seconds to load a page or a video.
TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not installed (scripts/test.sh installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def wait_until(page, expression: str, timeout: float = TIMEOUT_S) -> None:  # type: ignore[no-untyped-def]
    """Poll a JavaScript expression from Python. Playwright's wait_for_function evals its predicate inside the
    page, which the app's Content-Security-Policy (no 'unsafe-eval') refuses whenever it has to poll."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {expression}")
        time.sleep(0.05)
