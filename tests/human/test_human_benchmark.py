"""A benchmark project through the real app (issue #38): answering each task, resuming, blindness, the leak scan on
every page and API answer, CSRF, and every kind of bad answer."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ALL_TASKS, ScanningClient, answer_queue, bench_app, make_bench, page_leaks, scripted_answer
from fastapi.testclient import TestClient
from sqlalchemy import select

from rescue.data.reading import demo_path
from rescue.errors import RescueError, ReviewError
from rescue.human.benchmark import MAX_ANSWER_TEXT, MAX_VIEWPOINTS, init_benchmark, load_benchmark
from rescue.human.store import AUDIT_ANSWER, assign
from rescue.review.models import AuditEntry
from rescue.review.security import body_limit
from rescue.tasks import get_task
from rescue.tasks.base import RenderOptions


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    return make_bench(tmp_path / "bench")


@pytest.fixture
def app(bench: Path, tmp_path: Path) -> Any:
    application = bench_app(bench, tmp_path / "review.db")
    yield application
    application.state.engine.dispose()


def first_of_each(client: ScanningClient) -> dict[str, dict[str, Any]]:
    """The first instance of each task in the client's queue that none chosen before it reveals (no look-ahead:
    a page that shows what an earlier-queued instance hides would lock it), in queue order."""
    chosen: dict[str, dict[str, Any]] = {}
    for q in client.get("/api/bench/queue").json():
        key = (q["task"], q["number"])
        if q["task"] not in chosen and not any(client.bench.reveals((c["task"], c["number"]), key) for c in chosen.values()):
            chosen[q["task"]] = q
    assert set(chosen) == set(ALL_TASKS)
    return chosen


def item_url(entry: dict[str, Any]) -> str:
    return f"/api/bench/items/{entry['task']}/{entry['number']}"


def test_a_person_answers_every_task_and_each_answer_is_saved_at_once(app):
    ann = ScanningClient(app, "ann")
    rng = random.Random(1)
    for task, entry in first_of_each(ann).items():
        item = ann.get(item_url(entry)).json()
        assert item["task"] == task and item["value"] is None and item["version"] == 0
        value = scripted_answer(item, rng)
        saved = ann.write("PUT", item_url(entry) + "/answer", {"value": value, "version": 0})
        assert saved.status_code == 200 and saved.json() == {"version": 1}, saved.text
        again = ann.get(item_url(entry)).json()
        assert again["value"] == value and again["version"] == 1
    with app.state.sessions() as db:
        audited = db.scalars(select(AuditEntry).where(AuditEntry.action == AUDIT_ANSWER)).all()
    assert len(audited) == len(ALL_TASKS) and {a.user for a in audited} == {"ann"}


def test_the_page_is_the_prompt_made_readable(app):
    """What the page shows comes from the instance's one prompt: its instructions, labels with their definitions,
    context rows and (where the task shows it) the current row."""
    ann = ScanningClient(app, "ann")
    bench = app.state.project
    for task, entry in first_of_each(ann).items():
        item = ann.get(item_url(entry)).json()
        instance = bench.instance(task, entry["number"])
        prompt = get_task(task).render([instance], RenderOptions())
        text = prompt[0]["content"]
        assert item["instructions"] and item["instructions"] in text
        assert all(row["row_index"] < instance.row_index for row in item["context"])
        assert (item["current"] is not None) == get_task(task).declaration.shows_row
        if instance.labels:
            assert [entry["label"] for entry in item["labels"]] == instance.labels
            assert all(entry["definition"] for entry in item["labels"]), item["labels"]


def test_a_person_stops_and_comes_back_to_the_same_answers(app):
    first = ScanningClient(app, "ann")
    answer_queue(first, random.Random(2), limit=7)
    first.write("POST", "/api/logout")
    later = ScanningClient(app, "ann")  # a new login, as after closing the browser
    queue = later.get("/api/bench/queue").json()
    assert [q["answered"] for q in queue[:8]] == [True] * 7 + [False]
    home = later.get("/")
    assert home.status_code == 200 and "7 of" in home.text
    assert f'href="/take/{queue[7]["task"]}/{queue[7]["number"]}"' in home.text and "Continue" in home.text
    item = later.get(item_url(queue[0])).json()
    assert item["version"] == 1 and item["value"] is not None and item["queue"]["next_open"] == \
        f"/take/{queue[7]['task']}/{queue[7]['number']}"


def test_people_are_blind_to_each_other_and_to_instances_not_theirs(app):
    ann, bob, cat = (ScanningClient(app, n) for n in ("ann", "bob", "cat"))
    entry = first_of_each(ann)["er"]
    secret = {"emotion": "a phrase only ann wrote", "intensity": 4}
    assert ann.write("PUT", item_url(entry) + "/answer", {"value": secret, "version": 0}).status_code == 200
    seen = bob.get(item_url(entry))
    assert seen.status_code == 200 and seen.json()["value"] is None and seen.json()["version"] == 0
    for url in ("/", "/api/bench/queue", item_url(entry), "/take/er/1"):
        assert "only ann wrote" not in bob.get(url).text
    # cat is not assigned anything: every instance is refused, reading and writing
    assert cat.get("/api/bench/queue").json() == []
    assert cat.get(item_url(entry)).status_code == 403 and cat.get("/take/er/1").status_code == 403
    assert cat.write("PUT", item_url(entry) + "/answer", {"value": secret, "version": 0}).status_code == 403
    assert bob.write("PUT", item_url(entry) + "/answer", {"value": secret, "version": 0}).status_code == 200


@pytest.mark.slow
def test_no_page_or_api_answer_of_any_instance_leaks(app):
    """Every instance of every task, as page and as API answer, through the leak scan (and every answer saved)."""
    ann = ScanningClient(app, "ann")
    rng = random.Random(3)
    queue = ann.get("/api/bench/queue").json()
    with app.state.sessions() as db:
        assert len(queue) == assign(db, "test", app.state.project, 2, ["ann", "bob"])["ann"]
    for entry in queue:
        assert ann.get(f"/take/{entry['task']}/{entry['number']}").status_code == 200
        item = ann.get(item_url(entry)).json()
        ann.write("PUT", item_url(entry) + "/answer", {"value": scripted_answer(item, rng), "version": 0})
    ann.get("/")
    assert ann.scanned == 3 * len(queue) + 2


def test_the_leak_scan_finds_what_a_page_must_not_show(app):
    """The scan is not vacuous: the sample itself, the next rows and the gold are found."""
    bench = app.state.project
    for task in ALL_TASKS:
        instance = bench.instance(task, 2)
        sample_json = json.dumps(instance.sample.model_dump(mode="json"), ensure_ascii=False)
        assert page_leaks(get_task(task), instance, sample_json), task
        assert page_leaks(get_task(task), instance, json.dumps({"gold": None}))
    er = bench.instance("er", 1)
    phrase = next(p for p in get_task("er").declaration.bertscore.texts(er.gold) if len(p.split()) >= 4)  # type: ignore[union-attr]
    assert page_leaks(get_task("er"), er, f"<p>{phrase}</p>")


def test_writes_need_the_login_and_its_csrf_token(app):
    ann = ScanningClient(app, "ann")
    entry = first_of_each(ann)["itp"]
    url = item_url(entry) + "/answer"
    assert ann.http.put(url, json={"value": "yes", "version": 0}).status_code == 403
    assert ann.http.put(url, json={"value": "yes", "version": 0}, headers={"X-CSRF-Token": "x" * 43}).status_code == 403
    anonymous = TestClient(app)
    assert anonymous.put(url, json={"value": "yes", "version": 0}).status_code == 401
    assert anonymous.get(item_url(entry)).status_code == 401
    assert anonymous.get("/take/itp/1", follow_redirects=False).status_code == 303
    assert ann.get(item_url(entry)).json()["version"] == 0  # nothing was stored


BAD_ANSWERS = {
    "itp": ["maybe", ["yes"], None, {"label": "yes"}, "Yes", "yes\x00"],
    "rpp": [[], ["attack_attack", "attack_attack"], ["nonsense"], "attack_attack", [["attack_attack"]],
            ["attack_attack", "pursue_withdraw", "withdraw_withdraw", "repair_softening"]],
    "er": [{"emotion": "hurt"}, {"emotion": "hurt", "intensity": 11}, {"emotion": "hurt", "intensity": True},
           {"emotion": "hurt", "intensity": 5.5}, {"emotion": "hurt", "intensity": "5"}, {"emotion": "  ", "intensity": 5},
           {"emotion": ["hurt"], "intensity": 5}, {"emotion": "hurt", "intensity": -1},
           {"emotion": "x" * (MAX_ANSWER_TEXT + 1), "intensity": 5}, {"emotion": "hurt", "intensity": 5, "gold": 1}, "hurt"],
    "vp": [[], [{"source": "Nobody", "target": "Nobody", "viewpoint": "x"}], [{"viewpoint": "x"}],
           [{"source": "{s}", "target": "{t}", "viewpoint": ""}],
           [{"source": "{s}", "target": "{t}", "viewpoint": "x"}] * (MAX_VIEWPOINTS + 1)],
}


@pytest.mark.parametrize("task", list(BAD_ANSWERS))
def test_an_answer_outside_the_tasks_shape_is_refused_and_stores_nothing(app, task):
    ann = ScanningClient(app, "ann")
    entry = first_of_each(ann)[task]
    item = ann.get(item_url(entry)).json()
    speaker, target = item["speaker"], (item["people"] or ["x"])[0]
    for bad in BAD_ANSWERS[task]:
        value = json.loads(json.dumps(bad).replace("{s}", speaker).replace("{t}", target))
        answer = ann.write("PUT", item_url(entry) + "/answer", {"value": value, "version": 0})
        assert answer.status_code == 422, (bad, answer.text)
        assert answer.json()["detail"], bad
    assert ann.get(item_url(entry)).json()["version"] == 0


def test_hostile_requests_are_refused(app):
    ann = ScanningClient(app, "ann")
    entry = first_of_each(ann)["itp"]
    url = item_url(entry) + "/answer"
    assert ann.write("PUT", url, {"value": "yes", "version": 0, "extra": 1}).status_code == 422
    assert ann.write("PUT", url, {"value": "yes"}).status_code == 422
    lone = ann.http.put(url, content='{"value": "\\ud800", "version": 0}',
                        headers={"X-CSRF-Token": ann.csrf, "Content-Type": "application/json"})
    assert lone.status_code == 422 and "surrogate" in lone.text
    huge = ann.http.put(url, content=b'{"value": "' + b"y" * (body_limit(url) + 10) + b'", "version": 0}',
                        headers={"X-CSRF-Token": ann.csrf, "Content-Type": "application/json"})
    assert huge.status_code == 413
    for missing in ("/api/bench/items/itp/0", "/api/bench/items/itp/99999", "/api/bench/items/nope/1",
                    "/api/bench/items/..%2F..%2Fetc/1"):
        assert ann.get(missing).status_code in (404, 422), missing
    assert ann.get("/api/bench/items/itp/x").status_code == 422
    deep = '{"value": ' + "[" * 5000 + "]" * 5000 + ', "version": 0}'
    nested = ann.http.put(url, content=deep, headers={"X-CSRF-Token": ann.csrf, "Content-Type": "application/json"})
    assert nested.status_code in (400, 422), nested.status_code
    assert ann.get(item_url(entry)).json()["version"] == 0


def test_an_answer_over_a_newer_one_is_a_conflict_that_shows_the_newer(app):
    first, second = ScanningClient(app, "ann"), ScanningClient(app, "ann")  # two tabs
    entry = first_of_each(first)["stp"]
    item = first.get(item_url(entry)).json()
    labels = [e["label"] for e in item["labels"]]
    assert first.write("PUT", item_url(entry) + "/answer", {"value": labels[:1], "version": 0}).status_code == 200
    stale = second.write("PUT", item_url(entry) + "/answer", {"value": labels[1:2], "version": 0})
    assert stale.status_code == 409 and stale.json()["current"] == {"value": labels[:1], "version": 1}
    assert second.write("PUT", item_url(entry) + "/answer", {"value": labels[1:2], "version": 1}).status_code == 200


def test_time_runs_from_first_shown_to_first_answer(app):
    ann = ScanningClient(app, "ann")
    entry = first_of_each(ann)["itp"]
    ann.get(item_url(entry))
    ann.write("PUT", item_url(entry) + "/answer", {"value": "yes", "version": 0})
    ann.write("PUT", item_url(entry) + "/answer", {"value": "no", "version": 1})
    from rescue.human.store import all_answers

    with app.state.sessions() as db:
        (stored,) = all_answers(db)
    assert stored["value"] == "no" and stored["seconds"] is not None and stored["seconds"] >= 0


def test_assignment_gives_each_instance_to_k_people_evenly(app):
    bench = app.state.project
    with app.state.sessions() as db:
        load = assign(db, "test", bench, 2, ["ann", "bob", "cat"])
        # An instance that clashes with another of its turn (each reveals what the other hides) shares the people.
        shares = [1 if any(bench.reveals(key, o) and bench.reveals(o, key) for o in bench.same_turn(*key)) else 2
                  for key in bench.keys()]
        assert sum(load.values()) == sum(shares) and max(load.values()) - min(load.values()) <= 1
        with pytest.raises(ReviewError, match="at least 4"):
            assign(db, "test", bench, 4, ["ann", "bob", "cat"])
        with pytest.raises(ReviewError, match="unknown"):
            assign(db, "test", bench, 1, ["nobody"])


def test_init_refuses_what_it_cannot_make(tmp_path):
    with pytest.raises(RescueError, match="unknown task"):
        init_benchmark(tmp_path / "a", demo_path(), ["itp", "xyz"], 2)
    with pytest.raises(ReviewError, match="at least one person"):
        init_benchmark(tmp_path / "b", demo_path(), ["itp"], 0)
    with pytest.raises(ReviewError, match="no such file"):
        init_benchmark(tmp_path / "c", tmp_path / "missing.jsonl", ["itp"], 2)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(demo_path().read_text(encoding="utf-8").splitlines()[0] + "\n{not json\n", encoding="utf-8")
    with pytest.raises(Exception, match=r"bad\.jsonl.*2|line 2"):
        init_benchmark(tmp_path / "d", bad, ["itp"], 2)
    assert not (tmp_path / "d" / "benchmark.json").exists()
    made = make_bench(tmp_path / "e", tasks=["itp"])
    with pytest.raises(ReviewError, match="already holds"):
        init_benchmark(made, demo_path(), ["itp"], 2)
    config = json.loads((made / "benchmark.json").read_text())
    config["data"] = "../../etc/passwd"
    (made / "benchmark.json").write_text(json.dumps(config))
    with pytest.raises(ReviewError, match="inside the project folder"):
        load_benchmark(made)


def test_the_commands_make_a_project_its_accounts_and_its_assignment(tmp_path):
    from _cli import invoke_main

    folder = str(tmp_path / "people")
    refused = invoke_main(["review", "init", folder, "--data", str(demo_path())])
    assert refused.exit_code != 0 and "--benchmark" in refused.output and not (tmp_path / "people").exists()
    made = invoke_main(["review", "init", folder, "--benchmark", "--data", str(demo_path()), "--tasks", "itp,ER",
                        "--per-instance", "2"])
    assert made.exit_code == 0, made.output
    config = json.loads((tmp_path / "people" / "benchmark.json").read_text())
    assert config["tasks"] == ["itp", "er"] and (tmp_path / "people" / "data" / demo_path().name).is_file()
    for name in ("ann", "bob"):
        added = invoke_main(["review", "user", "add", folder, name, "--password-stdin"], input=b"a-long-password\n")
        assert added.exit_code == 0, added.output
    total = sum(config["instances"].values())
    assigned = invoke_main(["review", "assign", folder])
    assert assigned.exit_code == 0 and f"Assigned {total} instances with 2 people each: ann {total}, bob {total}" \
        in " ".join(assigned.output.split()), assigned.output
    too_many = invoke_main(["review", "assign", folder, "--k", "3"])
    assert too_many.exit_code != 0 and "at least 3 annotator accounts" in " ".join(too_many.output.split())


def test_an_admin_sees_progress_as_counts_never_answers(app):
    ann = ScanningClient(app, "ann")
    entry = first_of_each(ann)["vp"]
    item = ann.get(item_url(entry)).json()
    value = [{"source": item["speaker"], "target": next(p for p in item["people"] if p != item["speaker"]), "viewpoint": "a view only ann holds"}]
    assert ann.write("PUT", item_url(entry) + "/answer", {"value": value, "version": 0}).status_code == 200
    root = ScanningClient(app, "root")
    home = root.get("/")
    assert home.status_code == 200 and 'id="bench-people"' in home.text and "only ann holds" not in home.text
    assert root.get(item_url(entry)).status_code == 403  # an admin is not a taker of the instance
    assert root.get("/admin").status_code == 200 and "ann" in root.get("/api/users").text
    agreement = root.get("/agreement", follow_redirects=False)  # the benchmark's own (it led home once)
    assert agreement.status_code == 200 and "only ann holds" not in agreement.text


def test_a_benchmark_project_refuses_a_verified_export_and_serves(tmp_path, bench):
    from _cli import invoke_main

    refused = invoke_main(["review", "export", str(bench), "--out", str(tmp_path / "v.jsonl")])
    assert refused.exit_code != 0 and "--as-run" in refused.output and not (tmp_path / "v.jsonl").exists()
    from rescue.human.app import create_app
    from rescue.review.app import create_app as create_review_app

    app = create_app(bench, f"sqlite:///{tmp_path / 'x.db'}")
    assert isinstance(app.state.project, type(load_benchmark(bench)))
    app.state.engine.dispose()
    with pytest.raises(ReviewError, match="benchmark project"):  # the verification tool serves none
        create_review_app(bench, f"sqlite:///{tmp_path / 'y.db'}")
