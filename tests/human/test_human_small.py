"""Small things a first admin met (issue #43 item 4), each reproduced and then held."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from _cli import invoke_main
from bench_helpers import ScanningClient, answer_queue, bench_app, make_bench, scripted_answer
from review_helpers import PASSWORD

from rescue.data.reading import demo_path
from rescue.human.export import pooled_value
from rescue.human.store import assign
from rescue.review import crud
from rescue.tasks import TASKS, get_task


@pytest.fixture
def app(tmp_path: Path) -> Any:
    application = bench_app(make_bench(tmp_path / "bench", sample=3), tmp_path / "review.db")
    yield application
    application.state.engine.dispose()


def test_a_person_named_pooled_cannot_erase_the_panel_from_the_export(tmp_path):
    """An account made before the refusal (or through the accounts page): the export names it and writes nothing."""
    bench = make_bench(tmp_path / "bench", tasks=["itp"], sample=2)
    app = bench_app(bench, bench / "review.db", ["ann"], 1)
    with app.state.sessions() as db:
        crud.create_user(db, "test", "pooled", "annotator", PASSWORD)
        assign(db, "test", app.state.project, 1, ["ann", "pooled"])
    for name in ("ann", "pooled"):
        answer_queue(ScanningClient(app, name), random.Random(1))
    app.state.engine.dispose()
    made = invoke_main(["review", "export", str(bench), "--as-run", str(tmp_path / "out"), "--no-bertscore"])
    assert made.exit_code == 2 and "'pooled'" in made.output and "choose another name" in " ".join(made.output.split())
    assert not (tmp_path / "out" / "results.json").exists()


def test_k_1_with_two_people_gives_each_person_every_task(app):
    with app.state.sessions() as db:
        assign(db, "test", app.state.project, 1, ["ann", "bob"])
    for name in ("ann", "bob"):
        queue = ScanningClient(app, name).get("/api/bench/queue").json()
        assert {q["task"] for q in queue} == set(TASKS), name


def test_init_without_data_takes_the_bundled_demo_dataset(tmp_path):
    made = invoke_main(["review", "init", str(tmp_path / "p"), "--benchmark", "--tasks", "itp", "--sample", "2"])
    assert made.exit_code == 0, made.output
    config = json.loads((tmp_path / "p" / "benchmark.json").read_text())
    assert config["data"] == f"data/{demo_path().name}"
    assert (tmp_path / "p" / "data" / demo_path().name).read_bytes() == demo_path().read_bytes()


def test_the_queue_page_says_continue_before_the_first_answer_as_the_docs_do(app):
    home = ScanningClient(app, "ann").get("/")
    assert 'id="bench-continue"' in home.text and ">Continue</a>" in home.text and ">Start<" not in home.text


def test_a_viewpoint_whose_source_is_its_target_is_refused_as_for_models(app):
    ann = ScanningClient(app, "ann")
    entry = next(q for q in ann.get("/api/bench/queue").json() if q["task"] == "vp")
    url = f"/api/bench/items/vp/{entry['number']}"
    for q in ann.get("/api/bench/queue").json():  # taken in order up to it, so it is open
        if (q["task"], q["number"]) == ("vp", entry["number"]):
            break
        item = ann.get(f"/api/bench/items/{q['task']}/{q['number']}").json()
        ann.write("PUT", f"/api/bench/items/{q['task']}/{q['number']}/answer",
                  {"value": scripted_answer(item, random.Random(0)), "version": 0})
    item = ann.get(url).json()
    person = item["people"][0]
    refused = ann.write("PUT", url + "/answer", {"value": [{"source": person, "target": person, "viewpoint": "is fine"}],
                                                 "version": 0})
    assert refused.status_code == 422 and "source and its target" in refused.json()["detail"]
    assert ann.get(url).json()["version"] == 0


@pytest.mark.parametrize(("intensities", "median"), [([4, 7], 6), ([4, 5], 4), ([3, 6], 4), ([2, 9, 5], 5)])
def test_the_panels_er_intensity_is_the_median_rounded_half_to_even_as_documented(app, intensities, median):
    bench = app.state.project
    by_person = {f"p{i}": {"emotion": f"phrase {i}", "intensity": v} for i, v in enumerate(intensities)}
    assert pooled_value(get_task("er"), bench.instance("er", 1), by_person)["intensity"] == median
    docs = (Path(__file__).resolve().parents[2] / "docs" / "human.md").read_text(encoding="utf-8")
    assert "median intensity\nrounded half to even" in docs or "median intensity rounded half to even" in " ".join(docs.split())


def test_an_admin_finds_agreement_and_the_answers_export_in_a_benchmark_project(app):
    for name in ("ann", "bob"):
        answer_queue(ScanningClient(app, name), random.Random(2))
    root = ScanningClient(app, "root")
    home = root.get("/")
    assert 'href="/agreement"' in home.text and 'href="/api/bench/export"' in home.text
    page = root.get("/agreement")
    assert page.status_code == 200 and 'id="bench-agreement"' in page.text and "/login" not in str(page.url)
    exported = root.get("/api/bench/export")
    assert exported.status_code == 200 and "attachment" in exported.headers["content-disposition"]
    lines = [json.loads(line) for line in exported.text.splitlines()]
    assert {line["user"] for line in lines} == {"ann", "bob"} and all(line["instance_id"] for line in lines)
    ann = ScanningClient(app, "ann")
    assert ann.get("/api/bench/export").status_code == 403 and ann.get("/agreement").status_code == 403


def test_pages_say_whose_next_turn_is_predicted_outside_the_folded_instructions(app):
    ann = ScanningClient(app, "ann")
    bench = app.state.project
    for task in ("rpp", "stp", "ssp"):
        entry = next(q for q in ann.get("/api/bench/queue").json() if q["task"] == task and not q["locked"])
        item = ann.get(f"/api/bench/items/{task}/{entry['number']}").json()
        assert item["statement"] and item["instructions"].startswith(item["statement"]), task
        assert "target row" in item["statement"] or "NEXT" in item["statement"], item["statement"]
        if task == "rpp":
            instance = bench.instance(task, entry["number"])
            assert item["given"]["target_speaker"] == next(r.speaker for r in instance.sample.rows if r.row_index == instance.row_index)


def test_label_definitions_are_whole(app):
    """Every indented line under a label in the instructions is in its definition (they were cut after two)."""
    ann = ScanningClient(app, "ann")
    for task in ("rpp", "ssp"):
        entry = next(q for q in ann.get("/api/bench/queue").json() if q["task"] == task and not q["locked"])
        item = ann.get(f"/api/bench/items/{task}/{entry['number']}").json()
        lines = item["instructions"].splitlines()
        for label in item["labels"]:
            at = next(i for i, line in enumerate(lines) if line.startswith(f"- {label['label']}: "))
            following = []
            for line in lines[at + 1:]:
                if not line.startswith("  "):
                    break
                following.append(line.strip())
            assert all(part in label["definition"] for part in following), (label, following)
    css = (Path(__file__).resolve().parents[2] / "src/rescue/review/static/benchmark.css").read_text()
    assert ".choice .definition { white-space: normal" in css  # review.css's one-line ellipsis undone here
