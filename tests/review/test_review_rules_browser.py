"""In Debian's Chromium: the rulebook's warnings on a row and their acknowledgement before verify, the
Accounts page, and pages without console errors (the favicon)."""

from __future__ import annotations

import pytest
from review_helpers import FIRST, PASSWORD, Client
from test_review_browser import Server, browser, login, open_segment, wait_until  # noqa: F401 (fixtures)


pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def project(small_project):
    return small_project


def _console_errors(page) -> list[str]:  # type: ignore[no-untyped-def]
    found: list[str] = []
    page.on("console", lambda message: found.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda exc: found.append(str(exc)))
    # A request the browser itself abandons because the page moved on (net::ERR_ABORTED: the favicon of a page
    # left before it loaded) is no fault of the server's; any other failure is.
    page.on("requestfailed", lambda request: found.append(f"failed: {request.url} ({request.failure})")
            if "ERR_ABORTED" not in (request.failure or "") else None)
    page.on("response", lambda response: found.append(f"{response.status}: {response.url}") if response.status >= 400 else None)
    return found


def test_a_warning_is_acknowledged_on_the_row_before_verify(browser, server, app):  # noqa: F811
    assert Client(app, "ann").save(1, {"target": []}, 0).status_code == 200  # a row addressed to nobody
    context, page = login(browser, server, "ann")
    open_segment(page, server)
    page.locator("#row-1").click()
    page.wait_for_selector("#checks .check-warning")
    assert "empty target" in page.locator("#checks").inner_text()
    page.locator("#verify").click()
    wait_until(page, "document.getElementById('save-status').textContent.includes('Not verified')")
    assert "acknowledge" in page.locator("#save-status").inner_text()
    page.locator("#checks input.ack").check()
    page.locator("#save").click()
    wait_until(page, "document.getElementById('save-status').textContent.startsWith('Saved')")
    page.locator("#verify").click()
    wait_until(page, "document.getElementById('save-status').textContent.includes('verified')")
    assert Client(app, "ann").segment()["status"]["status"] == "verified"
    context.close()


def test_the_accounts_page_disables_and_sets_passwords_without_console_errors(browser, server, app):  # noqa: F811
    context, page = login(browser, server, "root")
    errors = _console_errors(page)
    for url in ("/", "/agreement", "/segments/" + FIRST.replace("/", "%2F")):
        page.goto(server.url + url)
        page.wait_for_load_state("networkidle")
    page.goto(server.url + "/admin")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator('tr[data-name="bob"] button.disable').click()
    page.wait_for_selector('tr[data-name="bob"] button.enable')
    page.locator('tr[data-name="ann"] input[name=password]').fill("a brand new password")
    page.locator('tr[data-name="ann"] form.passwd button').click()
    wait_until(page, "document.getElementById('admin-status').textContent.includes('New password')")
    page.wait_for_load_state("networkidle")
    assert errors == []  # no 404 for /favicon.ico, no script error, on any page
    from fastapi.testclient import TestClient

    anonymous = TestClient(app)
    assert anonymous.post("/api/login", json={"name": "bob", "password": PASSWORD}).status_code == 403
    assert anonymous.post("/api/login", json={"name": "ann", "password": "a brand new password"}).status_code == 200
    context.close()
