"""People's answers as a run (issue #38): `rescue review export --as-run` scored by the runner and reported beside an
offline baseline, comparability checks passing; the time and agreement summary."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from _cli import invoke_main
from bench_helpers import ScanningClient, answer_queue, bench_app, make_bench

from rescue.data.reading import demo_path
from rescue.human.export import POOLED, human_summary, pooled_value
from rescue.human.store import all_answers
from rescue.runs.folder import read_predictions
from rescue.tasks import TASKS, get_task
from rescue.tasks.base import gold_value

pytestmark = pytest.mark.slow
TASK_LIST = ",".join(TASKS)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """Two demo samples in a file of their own (a subset keeps the run quick)."""
    path = tmp_path / "two.jsonl"
    path.write_text("".join(demo_path().read_text(encoding="utf-8").splitlines(keepends=True)[:2]), encoding="utf-8")
    return path


def test_people_are_reported_beside_a_baseline_on_the_same_instances(tmp_path, data):
    bench = make_bench(tmp_path / "bench", data)
    app = bench_app(bench, bench / "review.db")
    ann, bob = ScanningClient(app, "ann"), ScanningClient(app, "bob")
    answered = answer_queue(ann, random.Random(5)) + answer_queue(bob, random.Random(6), limit=20)
    project = app.state.project
    app.state.engine.dispose()

    out = tmp_path / "people"
    made = invoke_main(["review", "export", str(bench), "--as-run", str(out), "--no-bertscore"])
    assert made.exit_code == 0, made.output
    records = read_predictions(out / "predictions.jsonl")
    total = sum(len(v) for v in project.instances.values())
    by_model: dict[str, list] = {}
    for record in records:
        by_model.setdefault(record.model, []).append(record)
    assert sorted(by_model) == ["human/ann", "human/bob", f"human/{POOLED}"]
    assert all(len(rs) == total for rs in by_model.values())  # every system on every instance
    assert sum(r.status == "ok" for r in by_model["human/ann"]) == total
    assert sum(r.status == "ok" for r in by_model["human/bob"]) == 20 and answered == total + 20
    assert {r.status for r in by_model["human/bob"]} == {"ok", "missing"}  # unanswered: a failure, as for a model

    baseline = tmp_path / "majority"
    ran = invoke_main(["run", "--model", "baseline/majority", "--data", str(data), "--tasks", TASK_LIST,
                       "--no-bertscore", "--out", str(baseline), "-q"])
    assert ran.exit_code == 0, ran.output
    results = [json.loads((p / "results.json").read_text()) for p in (out, baseline)]
    assert results[0]["data"]["sha256"] == results[1]["data"]["sha256"]
    report = tmp_path / "report"
    made = invoke_main(["report", str(out), str(baseline), "--out", str(report)])
    assert made.exit_code == 0, made.output  # no --allow-mixed: the comparability checks pass
    board = (report / "leaderboard.md").read_text(encoding="utf-8")
    for system in ("human/ann (person)", "human/bob (person)", "human/pooled (panel)", "baseline/majority"):
        assert f"| {system} | all |" in board, system
    summary = (out / "human.md").read_text(encoding="utf-8")
    assert "Agreement between people" in summary and "uncertain" in summary


def test_a_person_who_answers_the_gold_scores_as_a_perfect_model(tmp_path, data):
    """The same parsing and metrics as any model: the gold as answers scores 1 on every right/wrong metric."""
    bench = make_bench(tmp_path / "bench", data, k=1)
    app = bench_app(bench, bench / "review.db", people=["ann"])
    ann = ScanningClient(app, "ann")
    project = app.state.project
    for entry in ann.get("/api/bench/queue").json():
        instance = project.instance(entry["task"], entry["number"])
        value = gold_value(get_task(entry["task"]), instance)
        if get_task(entry["task"]).declaration.answer == "ranking":
            value = (value + [label for label in instance.labels if label not in value])[:3]
        if get_task(entry["task"]).declaration.answer == "viewpoints":
            value = [{k: v[k] for k in ("source", "target", "viewpoint")} for v in value]
        url = f"/api/bench/items/{entry['task']}/{entry['number']}/answer"
        assert ann.write("PUT", url, {"value": value, "version": 0}).status_code == 200, (entry, value)
    app.state.engine.dispose()
    out = tmp_path / "run"
    made = invoke_main(["review", "export", str(bench), "--as-run", str(out), "--no-bertscore"])
    assert made.exit_code == 0, made.output
    results = json.loads((out / "results.json").read_text())
    for name, task in TASKS.items():
        metrics = results["models"]["human/ann"][name]["all"]
        assert metrics["failures"] == 0, name
        for metric in task.declaration.metrics:
            if metric.right_wrong:
                assert metrics[metric.key] == 1.0, (name, metric.key)


def test_export_refuses_a_folder_in_use_and_a_project_without_answers(tmp_path, data):
    bench = make_bench(tmp_path / "bench", data)
    bench_app(bench, bench / "review.db").state.engine.dispose()
    empty = invoke_main(["review", "export", str(bench), "--as-run", str(tmp_path / "x"), "--no-bertscore"])
    assert empty.exit_code != 0 and "nobody has answered" in empty.output
    used = tmp_path / "used"
    used.mkdir()
    (used / "keep.txt").write_text("mine")
    refused = invoke_main(["review", "export", str(bench), "--as-run", str(used)])
    assert refused.exit_code != 0 and "not an empty folder" in refused.output and (used / "keep.txt").exists()
    plain = invoke_main(["review", "export", str(tmp_path), "--as-run", str(tmp_path / "y")])
    assert plain.exit_code != 0 and "not a benchmark project" in plain.output


def test_agreement_time_and_the_pooled_answer(tmp_path, data):
    bench = make_bench(tmp_path / "bench", data)
    app = bench_app(bench, bench / "review.db")
    project = app.state.project
    for name in ("ann", "bob"):
        client = ScanningClient(app, name)
        for entry in client.get("/api/bench/queue").json():
            if entry["task"] != "itp":
                continue
            # both say yes on every instance but the first, where they differ
            value = "no" if name == "bob" and entry["number"] == 1 else "yes"
            client.get(f"/api/bench/items/itp/{entry['number']}")
            client.write("PUT", f"/api/bench/items/itp/{entry['number']}/answer", {"value": value, "version": 0})
    with app.state.sessions() as db:
        answers = all_answers(db)
    summary = human_summary(project, answers)
    itp = summary["agreement"]["itp"]
    units = len(project.instances["itp"])
    assert itp["units"] == units and itp["exact_agreement"] == pytest.approx((units - 1) / units)
    assert [d["number"] for d in itp["disagreements"]] == [1] and "note" in itp
    assert summary["time"]["ann"]["itp"]["answered"] == units and summary["agreement"]["rpp"]["units"] == 0
    instance = project.instance("rpp", 1)
    labels = instance.labels
    pooled = pooled_value(get_task("rpp"), instance, {"a": labels[:3], "b": [labels[1], labels[0], labels[3]]})
    assert pooled == [labels[0], labels[1], labels[2]]  # Borda 5 / 5 / 1 / 1: ties in the closed set's order
    assert pooled_value(get_task("er"), project.instance("er", 1), {"a": {"emotion": "calm", "intensity": 2},
                                                                    "b": {"emotion": "furious", "intensity": 9},
                                                                    "c": {"emotion": "upset", "intensity": 6}}) \
        == {"emotion": "upset", "intensity": 6}
    app.state.engine.dispose()


def test_er_and_vp_answers_go_to_the_same_judge_as_a_models(tmp_path, data):
    """The judge path of any run: the judge is asked about the person's phrase, and a baseline judged alike
    reports beside the people without --allow-mixed."""
    from rescue.testing.openai_server import Reply, serve

    bench = make_bench(tmp_path / "bench", data, tasks=["er"])
    app = bench_app(bench, bench / "review.db")
    answer_queue(ScanningClient(app, "ann"), random.Random(8))
    with app.state.sessions() as db:
        phrases = {a["value"]["emotion"] for a in all_answers(db)}
    app.state.engine.dispose()
    with serve(Reply.json({"emotion_score": 4, "notes": "close"})) as server:
        judge = ["--judge", "judge-model", "--judge-base-url", server.base_url, "--no-bertscore"]
        made = invoke_main(["review", "export", str(bench), "--as-run", str(tmp_path / "people"), *judge])
        assert made.exit_code == 0, made.output
        asked = [json.dumps(body, ensure_ascii=False) for body in server.bodies]
        ran = invoke_main(["run", "--model", "baseline/majority", "--data", str(data), "--tasks", "er",
                           "--out", str(tmp_path / "majority"), "-q", *judge])
        assert ran.exit_code == 0, ran.output
    assert len(phrases) > 1 and all(any(f'"{p}"' in body or f'\\"{p}\\"' in body for body in asked) for p in phrases)
    results = json.loads((tmp_path / "people" / "results.json").read_text())
    er = results["models"]["human/ann"]["er"]["all"]
    assert er["judged"] == er["instances"] > 0
    made = invoke_main(["report", str(tmp_path / "people"), str(tmp_path / "majority"), "--out", str(tmp_path / "r")])
    assert made.exit_code == 0, made.output


def test_the_summary_shows_peoples_text_as_text(tmp_path, data):
    from rescue.human.benchmark import load_benchmark
    from rescue.human.export import summary_markdown

    bench = load_benchmark(make_bench(tmp_path / "bench", data, tasks=["er"]))
    hostile = "<script>alert(1)</script> | `x`"
    answers = [{"task": "er", "number": 1, "user": u, "value": {"emotion": e, "intensity": i}, "seconds": 2.0}
               for u, e, i in (("ann", hostile, 2), ("bob", "calm", 9))]
    text = summary_markdown(human_summary(bench, answers))
    assert "<script>" not in text and "&lt;script>" in text and "\\|" in text
    assert "| ann | ER | 1 | 2.0 | 2.0 |" in text
