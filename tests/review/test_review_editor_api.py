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


def _ids(answer) -> list[str]:  # type: ignore[no-untyped-def]
    assert answer.status_code == 200, answer.text
    return [s["sample_id"] for s in answer.json()]


@pytest.mark.slow
def test_the_queue_filters_and_sorts_by_status_problems_speakers_duration_and_assignee(tmp_path):
    project = make_review_project(tmp_path / "proj", media=True, max_seconds=30)  # build problems on FIRST
    app = make_app(project, tmp_path / "db.sqlite")
    root, ada, ann = Client(app, "root"), Client(app, "ada"), Client(app, "ann")
    everything = ada.get("/api/segments").json()
    assert {"speakers", "speaker_names", "duration", "problems", "assigned", "status"} <= set(everything[0])
    family = next(s for s in everything if s["scenario"] == "family")
    assert family["speakers"] == len(family["speaker_names"]) >= 3
    assert _ids(ada.get("/api/segments?problems=true")) == [FIRST]
    assert FIRST not in _ids(ada.get("/api/segments?problems=false"))
    counts = {s["speakers"] for s in everything}
    assert len(counts) >= 2
    for n in counts:
        assert _ids(ada.get(f"/api/segments?speakers={n}")) == [s["sample_id"] for s in everything if s["speakers"] == n]
    by_duration = sorted(everything, key=lambda s: s["duration"])
    assert _ids(ada.get("/api/segments?sort=duration")) == [s["sample_id"] for s in by_duration]
    assert _ids(ada.get("/api/segments?sort=duration&order=desc")) == [s["sample_id"] for s in reversed(by_duration)]
    longest = by_duration[-1]["duration"]
    assert _ids(ada.get(f"/api/segments?min_duration={longest}")) == [by_duration[-1]["sample_id"]]
    assert len(_ids(ada.get(f"/api/segments?max_duration={longest - 0.01}"))) == len(everything) - 1
    # assignment and status
    assert root.write("POST", "/api/assignments", {"k": 1, "annotators": ["ann", "bob"]}).status_code == 200
    mine = _ids(ada.get("/api/segments?assignee=ann"))
    assert mine and mine == _ids(ann.get("/api/segments"))
    assert ann.verify(mine[0]).status_code == 200
    assert _ids(ada.get("/api/segments?status=verified")) == [mine[0]]
    assert _ids(ada.get("/api/segments?sort=status"))[-1] == mine[0]  # settled segments last
    assert _ids(ada.get("/api/segments?sort=assignee"))[: len(mine)] == mine
    # a bad filter names its parameter
    for bad in ("status=finished", "sort=colour", "speakers=-1", "min_duration=abc", "order=up"):
        answer = ada.get("/api/segments?" + bad)
        assert answer.status_code == 422 and bad.split("=")[0] in answer.text, bad


def test_search_finds_words_across_segments_and_in_edited_copies(project, tmp_path):
    app = make_app(project, tmp_path / "db.sqlite")
    ann, bob, ada = Client(app, "ann"), Client(app, "bob"), Client(app, "ada")
    first_row = ann.segment()["rows"][0]["values"]["dialogue_cleaned"]
    word = first_row.split()[1]
    hits = ann.get("/api/search", params={"q": word}).json()["hits"]
    assert any(h["sample_id"] == FIRST and h["row_index"] == 1 and h["copy"] == "draft" for h in hits)
    assert all(word.casefold() in h["text"].casefold() for h in hits)
    # every word must appear, in any case
    two = " ".join(first_row.split()[:2]).upper()
    assert {(h["sample_id"], h["row_index"]) for h in ann.get("/api/search", params={"q": two}).json()["hits"]} >= {(FIRST, 1)}
    # an edit is found by its new words, in that copy only, and only by whoever may read it
    assert ann.save(2, {"dialogue_cleaned": "the zebra crossing story again"}).status_code == 200
    found = ann.get("/api/search", params={"q": "zebra crossing"}).json()["hits"]
    assert [(h["sample_id"], h["row_index"], h["copy"]) for h in found] == [(FIRST, 2, "ann")]
    assert bob.get("/api/search", params={"q": "zebra"}).json()["hits"] == []
    assert [h["copy"] for h in ada.get("/api/search", params={"q": "zebra"}).json()["hits"]] == ["ann"]
    limited = ada.get("/api/search", params={"q": "e", "limit": 3}).json()
    assert len(limited["hits"]) == 3 and limited["truncated"] is True
    assert ann.get("/api/search", params={"q": ""}).status_code == 422
    assert ann.get("/api/search").status_code == 422


def test_the_dashboard_page_filters_sorts_and_searches(project, tmp_path):
    ada = Client(make_app(project, tmp_path / "db.sqlite"), "ada")
    listing = ada.get("/api/segments").json()
    family = next(s for s in listing if s["scenario"] == "family")
    page = ada.get("/", params={"scenario": "x", "speakers": str(family["speakers"]), "sort": "duration", "order": "desc",
                                "status": "", "min_duration": "oops", "q": "", "problems": "", "assignee": "",
                                "max_duration": ""}).text  # empty and unreadable fields filter nothing
    for s in listing:
        assert (f'data-id="{s["sample_id"]}"' in page) == (s["speakers"] == family["speakers"])
    sorted_page = ada.get("/", params={"sort": "duration", "order": "desc"}).text
    assert 'href="/?sort=duration&amp;order=asc"' in sorted_page  # a second click reverses
    word = ada.segment()["rows"][0]["values"]["dialogue_cleaned"].split()[1]
    found = ada.get("/", params={"q": word}).text
    assert 'id="search-hits"' in found and '#row-1">' in found


def test_versions_align_each_copy_with_the_final_rows(project, tmp_path):
    app = make_app(project, tmp_path / "db.sqlite")
    ann, ada = Client(app, "ann"), Client(app, "ada")
    assert ann.save(2, {"tone_of_voice": "icy"}).status_code == 200
    versions = ada.get("/api/segments/" + quote(FIRST, safe="") + "/versions").json()
    aligned = versions["aligned"]["ann"]
    assert len(aligned) == len(versions["final"]["rows"]) and aligned[1]["tone_of_voice"] == "icy"
    assert aligned == versions["copies"]["ann"]  # uncut copies line up row for row


def test_versions_align_a_re_cut_copy_by_time(project, tmp_path):
    app = make_app(project, tmp_path / "db.sqlite")
    ann, ada = Client(app, "ann"), Client(app, "ada")
    segment = ann.segment()
    row = segment["rows"][1]
    at = row["start_time"] + (row["end_time"] - row["start_time"]) / 3  # the second part overlaps row 2 longest
    answer = ann.write("POST", "/api/segments/" + quote(FIRST, safe="") + "/rows/2/split",
                       {"layout": segment["layout"], "version": row["version"], "at": at})
    assert answer.status_code == 200, answer.text
    assert ann.save(3, {"tone_of_voice": "the longer part"}).status_code == 200
    versions = ada.get("/api/segments/" + quote(FIRST, safe="") + "/versions").json()
    assert len(versions["copies"]["ann"]) == len(versions["final"]["rows"]) + 1
    aligned = versions["aligned"]["ann"]
    assert len(aligned) == len(versions["final"]["rows"]) and aligned[1]["tone_of_voice"] == "the longer part"
    assert aligned[2] == versions["copies"]["ann"][3]  # the rows after the cut shift by one
