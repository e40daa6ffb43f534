"""The server side of the segment editor and the queue: the lab's guidelines rendered safely, label sets with
their definitions, the dashboard's filters and sort, and the transcript search."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from review_helpers import FIRST, Client, make_app

from rescue.review.guidelines import load_guidelines
from rescue.testing.review_project import make_review_project


@pytest.fixture
def project(tmp_path) -> Path:
    return make_review_project(tmp_path / "proj", media=False)


def _template(html: str) -> str:
    start = html.index('<template id="lab-guidelines"')
    return html[start:html.index("</template>", start)]


def test_the_guidelines_render_without_raw_html_or_script_links(project, tmp_path):
    (project / "guidelines.md").write_text(
        "# Lab rules\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n"
        "[bad](javascript:alert(3)) [also bad](vbscript:x) [good](https://example.org/g)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        encoding="utf-8")
    client = Client(make_app(project, tmp_path / "db.sqlite"), "ann")
    page = client.get("/segments/" + quote(FIRST, safe="")).text
    inside = _template(page)
    assert "<h1>Lab rules</h1>" in inside and "<table>" in inside
    assert "<script" not in inside and "<img" not in inside and "&lt;script&gt;" in inside
    assert 'href="javascript' not in inside and 'href="vbscript' not in inside
    assert 'href="https://example.org/g"' in inside
    adjudicator = Client(client.http.app, "ada")
    assert "Lab rules" in _template(adjudicator.get("/segments/" + quote(FIRST, safe="") + "/adjudicate").text)


def test_no_guidelines_file_gives_an_empty_panel_and_an_edit_shows_at_once(project, tmp_path):
    assert load_guidelines(project).html == ""
    client = Client(make_app(project, tmp_path / "db.sqlite"), "ann")
    assert _template(client.get("/segments/" + quote(FIRST, safe="")).text).endswith(">")
    (project / "guidelines.md").write_text("first version\n", encoding="utf-8")
    assert "first version" in load_guidelines(project).html
    (project / "guidelines.md").write_text("the second, longer version\n", encoding="utf-8")
    assert "second" in load_guidelines(project).html


def test_label_sets_carry_when_to_use_each_label(project, tmp_path):
    client = Client(make_app(project, tmp_path / "db.sqlite"), "ann")
    relation = client.segment()["labels"]["relation"]
    first = relation[0]
    assert first["name"] == "pursue_withdraw" and first["definition"] and first["use_when"] and first["do_not_use_when"]
