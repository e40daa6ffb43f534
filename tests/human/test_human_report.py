"""People reported as the best benchmarks report them (issue #43 items 2 and 3): grouped people on a stratified
subset, exported as a run and reported beside a model run on all instances; the model is restricted to the people's
subset, people's rows are marked and never ranked, each group has a panel and an average-person row, people.md gives
people, items per person, coverage, time per item and agreement, and the disputed items are exported."""

from __future__ import annotations

import json
import random
import re

import pytest
from _cli import invoke_main
from bench_helpers import ScanningClient, answer_queue, bench_app, make_bench

from rescue.data.reading import demo_path
from rescue.human.store import set_group
from rescue.tasks import TASKS

GROUPS = {"ann": "clinicians", "bob": "clinicians", "cat": "students"}


def _row(board: str, system: str) -> str:
    return next(line for line in board.splitlines() if line.startswith(f"| {system} | all |"))


@pytest.mark.slow
def test_grouped_people_on_a_subset_beside_a_model_on_every_instance(tmp_path):
    bench = make_bench(tmp_path / "bench", sample=4)
    app = bench_app(bench, bench / "review.db", list(GROUPS), 2)
    with app.state.sessions() as db:
        for name, group in GROUPS.items():
            set_group(db, "test", name, group)
    queues = {}
    for seed, name in enumerate(GROUPS):
        person = ScanningClient(app, name)
        queues[name] = len(person.get("/api/bench/queue").json())
        answer_queue(person, random.Random(seed), limit=None if name != "cat" else queues[name] // 2)
    app.state.engine.dispose()
    out = tmp_path / "people"
    made = invoke_main(["review", "export", str(bench), "--as-run", str(out), "--no-bertscore"])
    assert made.exit_code == 0, made.output
    models = tmp_path / "majority"
    ran = invoke_main(["run", "--model", "baseline/majority", "--data", str(demo_path()), "--tasks", ",".join(TASKS),
                       "--no-bertscore", "--out", str(models), "-q"])
    assert ran.exit_code == 0, ran.output
    report = tmp_path / "report"
    made = invoke_main(["report", str(out), str(models), "--out", str(report), "--no-figures"])
    assert made.exit_code == 0, made.output  # no --allow-mixed needed: the model is restricted to the subset
    printed = " ".join(made.output.split())
    assert "human/cat (person)" in printed and "human/clinicians/panel (panel)" in printed  # marked on the terminal
    assert "People (marked in the leaderboard, never ranked)" in (report / "report.html").read_text(encoding="utf-8")
    board = (report / "leaderboard.md").read_text(encoding="utf-8")

    # The model on the people's subset: 4 instances of each task, not the task's every instance.
    model = _row(board, "baseline/majority")
    for task in TASKS:
        assert f"{task.upper()} 4/" in model, (task, model)
    assert "every model's row is restricted to the 24 instances people were given" in " ".join(board.split())
    # People's rows: marked, never bold; a person on the instances they answered (cat: half their queue).
    for system in ("human/ann (person)", "human/cat (person)", "human/clinicians/panel (panel)",
                   "human/students/panel (panel)", "human/pooled (panel)", "human/clinicians/average (average person)",
                   "human/students/average (average person)", "human/all/average (average person)"):
        assert "**" not in _row(board, system), system
    answered_by_cat = sum(int(n) for n in re.findall(r"[A-Z]+ (\d+)/", _row(board, "human/cat (person)").split("|")[-2]))
    assert answered_by_cat == queues["cat"] // 2
    assert "never ranked" in board
    # people.md: each group's figures, each person's coverage; the disputed items beside the run.
    people = (report / "people.md").read_text(encoding="utf-8")
    for group in ("clinicians", "students", "all"):
        assert f"| {group} |" in people
    assert f"| human/cat | {queues['cat'] // 2} of {queues['cat']} |" in people
    assert "disputed.jsonl" in people and "no look-ahead" in people
    human = json.loads((out / "human.json").read_text(encoding="utf-8"))["people"]
    assert human["groups"]["clinicians"]["people"] == 2 and human["groups"]["students"]["members"] == ["cat"]
    assert human["panels"]["human/clinicians/panel"] == ["ann", "bob"]
    disputed = [json.loads(line) for line in (out / "disputed.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(len(d["answers"]) >= 2 and set(d["groups"]) == set(d["answers"]) for d in disputed) and disputed


def test_a_person_is_added_to_a_group_and_names_that_are_systems_are_refused(tmp_path):
    folder = str(make_bench(tmp_path / "bench", tasks=["itp"], sample=2))
    password = b"a-long-password\n"
    added = invoke_main(["review", "user", "add", folder, "ann", "--group", "clinicians", "--password-stdin"], input=password)
    assert added.exit_code == 0 and "group clinicians" in added.output, added.output
    for name in ("pooled", "Average"):  # human/pooled and human/average are the people's own systems
        refused = invoke_main(["review", "user", "add", folder, name, "--password-stdin"], input=password)
        assert refused.exit_code == 2 and "choose another name" in " ".join(refused.output.split()), refused.output
    for group in ("a/b", "pooled", "", "x" * 41):
        refused = invoke_main(["review", "user", "add", folder, "bob", "--group", group, "--password-stdin"], input=password)
        assert refused.exit_code == 2 and "--group" in refused.output, (group, refused.output)
    listed = invoke_main(["review", "user", "list", folder])
    assert "bob" not in listed.output  # nothing made when the group is refused
