"""The review server's small things: a favicon, and what importing the app leaves for later."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from review_helpers import Client



@pytest.fixture
def project(small_project):
    return small_project


def test_every_page_links_a_favicon_and_favicon_ico_answers_without_a_login(app):
    anonymous = TestClient(app)
    for url in ("/favicon.ico", "/static/favicon.svg"):
        answer = anonymous.get(url)
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("image/svg+xml")
        assert answer.content.startswith(b"<svg")
    assert '<link rel="icon" href="/static/favicon.svg"' in anonymous.get("/login").text
    root = Client(app, "root")
    for page in ("/", "/agreement", "/admin"):
        assert '<link rel="icon" href="/static/favicon.svg"' in root.get(page).text, page


@pytest.mark.slow
def test_importing_the_app_leaves_what_the_first_page_does_not_need():
    """ftfy (mojibake repair: only non-ASCII data needs it) and the agreement statistics load when used."""
    code = ("import sys, rescue.review.api; "
            "print(sorted(m for m in ('ftfy', 'httpx', 'rescue.review.annotator_agreement', 'rescue.metrics', 'krippendorff') "
            "if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert result.stdout.strip() == "[]"


def test_mojibake_is_still_found_once_ftfy_loads_on_demand(tmp_path):
    from rescue.data.encoding import fix_text

    assert fix_text("plain") == "plain"
    assert fix_text("Bill\u00e2\u0080\u0094enjoying") == "Bill\u2014enjoying"
