"""A report that speaks (#46 item 5): ``rescue report`` prints the leaderboard ``rescue run`` prints, every table
of report.html orders tasks as the registry does, and the SSP preference summary says what an unconverged fit
means. Through the real CLI on a run of the offline baselines."""

from __future__ import annotations

import re

import pytest
from _cli import invoke_main

from rescue.tasks import TASK_NAMES


@pytest.fixture(scope="module")
def run_and_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("speaks")
    run = invoke_main(["run", "--model", "baseline/majority", "--model", "baseline/uniform", "--limit-samples", "2",
                       "--no-bertscore", "--out", str(root / "run")])
    assert run.exit_code == 0, run.output
    report = invoke_main(["report", str(root / "run"), "--out", str(root / "report"), "--bootstrap", "0",
                          "--no-figures", "--quiet"])
    assert report.exit_code == 0, report.output
    return run, report, (root / "report" / "report.html").read_text()


def _board(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith(("baseline/", "model", "F1"))]


def test_the_report_prints_the_leaderboard_the_run_printed(run_and_report):
    run, report, _ = run_and_report
    assert "RESCUE-Bench, 2 system(s), pooled (%)" in report.stdout
    rows = _board(report.stdout)
    assert rows and rows == _board(run.stdout)  # the same table, the same numbers
    assert [r.split()[0] for r in rows if r.startswith("baseline/")] == ["baseline/majority", "baseline/uniform"]
    assert report.stdout.index("baseline/majority") < report.stdout.index("Wrote ")


def test_every_table_of_the_page_orders_tasks_as_the_registry(run_and_report):
    *_, page = run_and_report
    for title in ("Instances/failures per task",):
        table = page[page.index(f"<h3>{title}</h3>"):]
        header = table[:table.index("</thead>")]
        tasks = [t.lower() for t in re.findall(r"<th>([A-Z]+)</th>", header)]
        assert tasks == [t for t in TASK_NAMES if t in tasks] and len(tasks) == len(TASK_NAMES), tasks


def test_an_unconverged_preference_fit_says_what_it_means(run_and_report):
    *_, page = run_and_report
    table = page[page.index("SSP preference bias (Bradley–Terry)"):]
    table = table[:table.index('<p class="note">') + 1200]
    assert "<th>fit converged</th>" in table and "False" not in table and "True" not in table
    assert "no: strengths not reliable" in table  # baseline/uniform predicts strategies that never lose
    assert "has no finite strength" in table
