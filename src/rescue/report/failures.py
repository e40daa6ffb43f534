"""The report's "Why answers failed": per system and task its commonest failure reasons, counted, each with an
example instance, computed from the records (:mod:`rescue.runs.failures`), so older runs and inspect logs show
them too. Written to ``failures.md``, shown on the terminal and in report.html."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rescue.display import markdown_table
from rescue.report.html import HtmlTable
from rescue.report.runs import System
from rescue.runs.failures import FailureReason, failure_reasons

HEADERS = ["System", "Task", "Failed", "Count", "Reason", "Example"]
TITLE = "Why answers failed"
NOTE = ("The commonest reasons per system and task (what differs between instances, such as their ids and the "
        "candidate labels, is left out of a reason); every failed answer, with its error, is in the run's "
        "predictions.jsonl and in the instance browser below.")


@dataclass
class FailureRow:
    """One system on one task: how many of its instances failed, and why (commonest reasons first)."""

    system: str
    task: str
    failures: int
    instances: int
    reasons: list[FailureReason]

    def cells(self) -> list[list[str]]:
        """One table row per reason, then one for the failures the reasons shown do not cover."""
        failed = f"{self.failures} of {self.instances}"
        rows = [[self.system, self.task.upper(), failed, str(r.count), r.shown(), r.example] for r in self.reasons]
        rest = self.failures - sum(r.count for r in self.reasons)
        if rest > 0:
            rows.append([self.system, self.task.upper(), failed, str(rest), "other reasons", ""])
        return rows


def failure_rows(systems: Sequence[System]) -> list[FailureRow]:
    """Per system and task with at least one failed instance, its reasons; empty when every answer was read."""
    rows = []
    for system in systems:
        for task in system.tasks:
            records = system.task_records(task)
            reasons = failure_reasons(records)
            if reasons:
                failures = sum(1 for r in records if r.status != "ok")
                rows.append(FailureRow(system.label, task, failures, len(records), reasons))
    return rows


def failures_markdown(rows: Sequence[FailureRow]) -> str:
    """failures.md: the title, the note and one table line per reason."""
    table = markdown_table(HEADERS, [cells for row in rows for cells in row.cells()])
    return f"# {TITLE}\n\n{NOTE}\n\n{table}"


def failures_table(rows: Sequence[FailureRow]) -> HtmlTable:
    """The same table for report.html (long reasons wrap)."""
    return HtmlTable(TITLE, list(HEADERS), [cells for row in rows for cells in row.cells()], NOTE, css="wraps")
