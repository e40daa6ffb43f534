"""The human reference's answers hold exactly their TypedDicts' keys (rescue.human.shapes), as the review tool's do
(tests/review/test_review_shapes.py, whose checks this reuses)."""

from __future__ import annotations

from pathlib import Path
from typing import get_type_hints

from review_helpers import Client
from review_helpers import check_each as _each
from review_helpers import check_keys as _check

from rescue.human import shapes as human_shapes


def test_a_benchmark_projects_answers_hold_exactly_their_types_keys(tmp_path: Path) -> None:
    import random

    from bench_helpers import bench_app, make_bench, scripted_answer

    from rescue.human.export import human_summary
    from rescue.human.store import all_answers

    app = bench_app(make_bench(tmp_path / "bench", tasks=["stp", "er"]), tmp_path / "review.db")
    try:
        ann = Client(app, "ann")
        queue = ann.get("/api/bench/queue").json()
        _each(queue, human_shapes.BenchQueueEntry)
        rng = random.Random(7)
        for entry in {e["task"]: e for e in queue}.values():
            url = f"/api/bench/items/{entry['task']}/{entry['number']}"
            item = ann.get(url).json()
            page = {k: v for k, v in item.items() if k in get_type_hints(human_shapes.BenchPage)}
            _check(page, human_shapes.BenchPage)
            _check({k: item[k] for k in ("value", "version", "locked", "shown")}, human_shapes.BenchShown)
            assert set(item) == set(page) | {"value", "version", "locked", "shown", "queue"}
            _check(item["queue"], human_shapes.QueuePosition)
            _each(item["labels"], human_shapes.LabelDefinition)
            answer = {"value": scripted_answer(item, rng), "version": item["version"]}
            assert ann.write("PUT", url + "/answer", answer).status_code == 200
        with app.state.sessions() as db:
            answers = all_answers(db)
        _each(answers, human_shapes.GivenAnswer)
        summary = human_summary(app.state.project, answers)
        _check(summary, human_shapes.HumanSummary)
        _each(summary["agreement"].values(), human_shapes.TaskAgreement)
        for tasks in summary["time"].values():
            _each(tasks.values(), human_shapes.TimeStats)
    finally:
        app.state.engine.dispose()
