"""The leaderboard (paper Table 5 pooled, Table 11 per scenario) with bootstrap CIs and significance markers.

Point values are the run's own numbers from ``results.json``; where a scope is missing there they are
recomputed with the task's ``aggregate``. Intervals come from :mod:`rescue.report.bootstrap`.
A marker (``†``) flags a value that differs from the reference system (the first one) by a paired
bootstrap at level ``alpha``; with ``--allow-mixed`` a cell computed on another instance set than the
other systems' carries its count and ``‡``. The best value per column and scope is bold.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rescue.data.text import latex_text
from rescue.display import markdown_table, markdown_text
from rescue.data.groups import GROUP_WORDS, SessionGroups
from rescue.report.bootstrap import DEFAULT_CLUSTER, MIN_SAMPLES, Interval, bootstrap_ci
from rescue.report.options import ALPHA, LEVEL, N_RESAMPLES
from rescue.report.columns import COLUMNS, Column, columns_for
from rescue.report.comparability import MIXED_MARK, Comparability, bertscore_text, judge_text
from rescue.report.runs import System
from rescue.report.recompute import Aggregates, best_statistic, in_scope
from rescue.tasks import graded_tasks
from rescue.tasks import TASK_NAMES

MARKER = "†"
SCENARIO_ORDER = ("all", "couple", "family")


@dataclass
class Cell:
    """One leaderboard cell: the value, its interval, and whether it differs from the reference system."""

    value: float | None
    low: float | None = None
    high: float | None = None
    significant: bool = False  # differs from the reference system (paired bootstrap)
    p_value: float | None = None
    instances: int = 0
    mixed: bool = False  # computed on another instance set than the other systems' (--allow-mixed)
    best: bool = False  # the best value of its column and scope
    paired_on: int | None = None  # shared instances of the paired test behind the marker
    failures: int = 0
    no_ci: bool = False  # measured on records, but the bootstrap had too few clusters for an interval

    @property
    def all_failed(self) -> bool:
        """Every instance failed (no answer at all): the value is the failure floor, not a measurement."""
        return self.instances > 0 and self.failures >= self.instances


@dataclass
class LeaderRow:
    """One system in one scope: its cells, instance and failure counts per task."""

    system: str
    scope: str
    cells: dict[str, Cell] = field(default_factory=dict)
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)  # task -> (instances, failures)
    budget: dict[str, int] = field(default_factory=dict)  # task -> failures that ran out of answer budget
    published: bool = False  # a reference row from the paper: no interval, never tested
    people: str = ""  # people's row ("person", "panel", "average"): marked, never ranked (rescue.report.people)


@dataclass
class Leaderboard:
    """Every system's row per scope, the columns, and how the intervals and tests were made."""

    columns: list[Column]
    rows: list[LeaderRow]
    reference: str
    level: float
    alpha: float
    n_resamples: int
    cluster: str = DEFAULT_CLUSTER
    scorers: str = ""  # the judge and BERTScore backbone, in words
    mixed: bool = False
    people_note: str = ""  # with people: that models are on the people's subset (said under the table)
    grouping: str = ""  # the session groups of this report, in words: how many, and how they were made

    def scope_rows(self, scope: str) -> list[LeaderRow]:
        """The rows of ``scope``."""
        return [r for r in self.rows if r.scope == scope]


def scopes_of(systems: Sequence[System]) -> list[str]:
    """The scopes the systems' records cover: all, then the scenarios."""
    seen = {r.scenario for s in systems for r in s.records}
    return ["all"] + [s for s in SCENARIO_ORDER[1:] if s in seen] + sorted(seen - set(SCENARIO_ORDER))


def _point(system: System, column: Column, scope: str, aggregates: Aggregates) -> float | None:
    stored = system.results.scope(column.task, scope)
    if stored is not None:
        value = column.pick(stored)
        if value is not None:
            return value
    records = in_scope(system.task_records(column.task), scope)
    aggregate = aggregates.get(column.task)
    if records and aggregate is not None:
        return column.pick(aggregate(records))
    return None


def _counts(system: System, task: str, scope: str) -> tuple[int, int]:
    records = in_scope(system.task_records(task), scope)
    if records:
        return len(records), sum(1 for r in records if not r.ok)
    stored = system.results.scope(task, scope)
    return (0, 0) if stored is None else (stored.instances, stored.failures)


def build_leaderboard(
    systems: Sequence[System],
    aggregates: Aggregates,
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
    alpha: float = ALPHA,
    cluster: str = DEFAULT_CLUSTER,
    comparability: Comparability | None = None,
    groups: SessionGroups | None = None,
) -> Leaderboard:
    """Every system in every scope, with cluster bootstrap intervals where the task's aggregate is known."""
    tasks = [t for t in TASK_NAMES if any(t in s.tasks for s in systems)]
    columns = [c for c in COLUMNS if c.task in tasks]
    rows: list[LeaderRow] = []
    for scope in scopes_of(systems):
        for system in systems:
            row = LeaderRow(system.label, scope, people=system.people)
            for task in tasks:
                row.counts[task] = _counts(system, task, scope)
                if row.counts[task][1]:
                    row.budget[task] = _budget_count(system, task, scope)
                task_columns = columns_for(task, tuple(columns))
                intervals: dict[str, Interval] = {}
                records = in_scope(system.task_records(task), scope)
                aggregate = aggregates.get(task)
                if records and aggregate is not None:
                    intervals = bootstrap_ci(
                        records,
                        best_statistic(task, aggregate, task_columns, records),
                        [c.id for c in task_columns],
                        n_resamples=n_resamples,
                        seed=seed,
                        level=level,
                        cluster=cluster,
                        groups=groups,
                    )
                mixed = comparability.mixed(task, scope, system.label) if comparability else False
                for column in task_columns:
                    interval = intervals.get(column.id)
                    row.cells[column.id] = Cell(
                        _point(system, column, scope, aggregates),
                        interval.low if interval else None,
                        interval.high if interval else None,
                        instances=row.counts[task][0],
                        mixed=mixed,
                        failures=row.counts[task][1],
                        no_ci=bool(records) and aggregate is not None and n_resamples > 0
                        and (interval is None or interval.low is None),
                    )
            rows.append(row)
    reference = systems[0].label if systems else ""
    board = Leaderboard(columns, rows, reference, level, alpha, n_resamples, cluster, scorers_text(systems),
                        bool(comparability and not comparability.ok), grouping_text(groups))
    mark_best(board)
    return board


def scorers_text(systems: Sequence[System]) -> str:
    """Which judge and BERTScore backbone produced the ER/VP columns (per system where they differ)."""
    generative = [s for s in systems if any(t in s.tasks for t in graded_tasks())]
    if not generative:
        return ""
    judges = {s.label: judge_text(s) for s in generative}
    berts = {s.label: bertscore_text(s) or "off" for s in generative}

    def phrase(values: dict[str, str]) -> str:
        if len(set(values.values())) == 1:
            return next(iter(values.values()))
        return "; ".join(f"{k}: {v}" for k, v in values.items())

    return f"ER/VP judge: {phrase(judges)}. BERTScore backbone: {phrase(berts)}."


def mark_best(board: Leaderboard) -> None:
    """Bold the best (highest) measured value per column and scope; published rows and people's rows do not
    compete (people are read beside the models, never ranked among them)."""
    for scope in dict.fromkeys(r.scope for r in board.rows):
        rows = [r for r in board.scope_rows(scope) if not r.published and not r.people]
        for column in board.columns:
            cells = [c for r in rows
                     if (c := r.cells.get(column.id)) is not None and c.value is not None and not c.all_failed]
            if len(cells) < 2:
                continue
            top = max(round(c.value * column.scale, column.digits) for c in cells)  # type: ignore[operator]
            for cell in cells:
                cell.best = round(cell.value * column.scale, column.digits) == top  # type: ignore[operator]


def mark_significance(board: Leaderboard, comparisons: Sequence[Any]) -> None:
    """Set the marker on cells whose paired comparison with the reference has p < alpha."""
    index = {(r.system, r.scope): r for r in board.rows}
    for comparison in comparisons:
        if comparison.a != board.reference or comparison.p_bootstrap is None:
            continue
        row = index.get((comparison.b, comparison.scope))
        cell = row.cells.get(comparison.column.id) if row else None
        if cell is not None:
            cell.p_value = comparison.p_bootstrap
            cell.significant = comparison.p_bootstrap < board.alpha
            cell.paired_on = comparison.instances


def cell_parts(cell: Cell | None, column: Column) -> tuple[str, str, str]:
    """(value with its marks, interval, instance count where mixed) as plain text; empty parts are ''."""
    if cell is None or cell.value is None:
        return "—", "", ""
    if cell.all_failed:
        return "—", "", f"all {cell.failures} failed"
    value = column.format(cell.value) + (MARKER if cell.significant else "") + (MIXED_MARK if cell.mixed else "")
    interval = ""
    if cell.low is not None and cell.high is not None:
        interval = f"[{column.format(cell.low)}, {column.format(cell.high)}]"
    elif cell.no_ci:
        interval = NO_CI
    count = f"n={cell.instances}" if cell.mixed else ""
    if cell.significant and cell.paired_on is not None and cell.paired_on != cell.instances:
        count = ", ".join(p for p in (count, f"{MARKER} on {cell.paired_on} shared") if p)
    return value, interval, count


def _cell_text(cell: Cell | None, column: Column, *, bold: str = "") -> str:
    value, interval, count = cell_parts(cell, column)
    if bold and cell is not None and cell.best:
        value = f"{bold}{value}{bold}"
    return " ".join(p for p in (value, interval, count and f"({count})") if p)


def _counts_text(row: LeaderRow, tasks: Sequence[str]) -> str:
    return " ".join(f"{t.upper()} {n}/{f}" + (f" ({row.budget[t]} budget)" if row.budget.get(t) else "")
                    for t, (n, f) in row.counts.items() if t in tasks and n)


def _budget_count(system: System, task: str, scope: str) -> int:
    """Failures of ``task`` in ``scope`` whose answer budget ran out (status budget_exhausted)."""
    records = in_scope(system.task_records(task), scope)
    if records:
        return sum(1 for r in records if r.status == "budget_exhausted")
    stored = system.results.scope(task, scope)
    return 0 if stored is None else int(stored.value("budget_exhausted") or 0)


def _markdown(headers: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    # Model ids come from users and suite files: one line per row, no raw HTML, whatever they hold.
    return markdown_table(headers, body)


CLUSTER_WORDS = {"group": GROUP_WORDS, "sample": "samples (clips)"}
NO_CI = "[no CI]"


def no_ci_text(board: Leaderboard) -> str:
    """Why some cells have no interval, and what gives them one ("" when every measured cell has one)."""
    if not any(c.no_ci and not c.all_failed for r in board.rows for c in r.cells.values()):
        return ""
    unit = "session groups" if board.cluster == "group" else "samples"
    fix = ("rerun with more samples (--limit-samples N takes them stratified across scenarios and session "
           "groups), or report with --cluster sample (clips resampled as if independent)"
           if board.cluster == "group" else "rerun with more samples")
    return (f"{NO_CI}: no interval and no significance test: the bootstrap resamples {unit} within each "
            f"scenario and this scope has fewer than {MIN_SAMPLES} of them; {fix}.")


def grouping_text(groups: SessionGroups | None) -> str:
    """How many session groups per scenario, and how they were made (inferred from the data or given)."""
    if groups is None:
        return ""
    counts = ", ".join(f"{len(members)} {scenario}" for scenario, members in groups.members().items())
    return f"Session groups here: {counts} ({groups.method}; groups.csv lists them)"


def legend(board: Leaderboard) -> str:
    """How to read the leaderboard: units, intervals, markers."""
    level = round(board.level * 100)
    text = (
        f"Values: ITP/RPP/STP/SSP in %, ER/VP judge on the judge's scale, BERTScore F1. Bold: best per column. "
        f"[low, high]: {level}% bootstrap CI resampling {CLUSTER_WORDS.get(board.cluster, board.cluster)} "
        f"within scenarios ({board.n_resamples} resamples). "
        + (f"{board.grouping}. " if board.cluster == "group" and board.grouping else "")
        + f"{MARKER}: differs from {board.reference} (paired bootstrap on the shared instances, p < {board.alpha}; "
        f"n per test in the comparisons). Counts: instances/failures per task (failures score as wrong)."
    )
    missing = no_ci_text(board)
    if missing:
        text += " " + missing
    if any(r.cells.get(c.id) is not None and r.cells[c.id].all_failed for r in board.rows for c in board.columns):
        text += " — (all N failed): every instance of the task failed (no answer), so there is no score to show."
    if any(any(r.budget.values()) for r in board.rows):
        text += (" (N budget): failures whose answer budget ran out before any answer (thinking models; "
                 "rerun with --budget-retry 2 or a larger --max-tokens).")
    if board.scorers:
        text += " " + board.scorers
    if board.mixed:
        text += (f" {MIXED_MARK} (n=…): computed on another instance set than the other systems' "
                 "(--allow-mixed); compare such cells with care.")
    if any(r.published for r in board.rows):
        text += " Rows marked (published) are the paper's numbers: no interval, never in a significance test."
    if any(r.people for r in board.rows):
        text += (" Rows marked (person), (panel: the group's majority, Borda or median answer) or (average person: "
                 "the mean of the group's people, cell by cell) are people: never ranked, never bold.")
    if board.people_note:
        text += " " + board.people_note
    return text


def shown_name(row: LeaderRow) -> str:
    """The row's system as a table shows it: people's rows carry their mark."""
    return f"{row.system} ({PEOPLE_MARKS[row.people]})" if row.people else row.system


PEOPLE_MARKS = {"person": "person", "panel": "panel", "average": "average person"}


def add_average_rows(board: Leaderboard, groups: dict[str, list[str]]) -> None:
    """Per group of people, an "average person" row per scope: each cell the mean of its people's measured values
    (no interval: the people are the unit), placed after the group's last row."""
    for group, labels in groups.items():
        for scope in dict.fromkeys(r.scope for r in board.rows):
            members = [r for r in board.scope_rows(scope) if r.system in labels]
            if not members:
                continue
            row = LeaderRow(f"human/{group}/average", scope, people="average")
            for column in board.columns:
                values = [c.value for r in members if (c := r.cells.get(column.id)) is not None
                          and c.value is not None and not c.all_failed]
                if values:
                    row.cells[column.id] = Cell(sum(values) / len(values), instances=sum(
                        r.counts.get(column.task, (0, 0))[0] for r in members))
            for task in dict.fromkeys(c.task for c in board.columns):
                counts = [r.counts.get(task, (0, 0)) for r in members]
                row.counts[task] = (sum(n for n, _ in counts), sum(f for _, f in counts))
            board.rows.insert(board.rows.index(members[-1]) + 1, row)


def to_markdown(board: Leaderboard) -> str:
    """The leaderboard as a Markdown table."""
    tasks = sorted({c.task for c in board.columns}, key=TASK_NAMES.index)
    headers = ["System", "Scenario", *(c.header for c in board.columns), "Instances/failures"]
    body = [
        [shown_name(r), r.scope, *(_cell_text(r.cells.get(c.id), c, bold="**") for c in board.columns),
         _counts_text(r, tasks)]
        for r in board.rows
    ]
    return _markdown(headers, body) + "\n" + markdown_text(legend(board)) + "\n"  # the legend names a model


def latex_escape(text: str) -> str:
    """``text`` safe in LaTeX."""
    return latex_text(text)


def to_latex(board: Leaderboard) -> str:
    """A booktabs table, one block of rows per scenario (Table 11 layout); CIs on a second line per row."""
    columns = board.columns
    lines = [
        r"\begin{table*}[t]",
        r"\centering\small",
        # As wide as the text at most, whatever the number of columns (needs \usepackage{graphicx}).
        r"\resizebox{\textwidth}{!}{%",
        r"\begin{tabular}{ll" + "r" * len(columns) + "}",
        r"\toprule",
        "Model & Scen. & " + " & ".join(latex_escape(c.header) for c in columns) + r" \\",
        r"\midrule",
    ]
    scopes = list(dict.fromkeys(r.scope for r in board.rows))
    for number, scope in enumerate(scopes):
        if number:
            lines.append(r"\midrule")
        for row in board.scope_rows(scope):
            values, intervals = [], []
            for column in columns:
                cell = row.cells.get(column.id)
                if cell is None or cell.value is None or cell.all_failed:
                    values.append("--")
                    intervals.append("")
                    continue
                mark = (r"$^\dagger$" if cell.significant else "") + (r"$^\ddagger$" if cell.mixed else "")
                shown = column.format(cell.value)
                values.append((rf"\textbf{{{shown}}}" if cell.best else shown) + mark)
                has_ci = cell.low is not None and cell.high is not None
                intervals.append(f"{{\\scriptsize [{column.format(cell.low)}, {column.format(cell.high)}]}}" if has_ci else "")
            lines.append(f"{latex_escape(shown_name(row))} & {latex_escape(scope)} & " + " & ".join(values) + r" \\")
            if any(intervals):
                lines.append(" & & " + " & ".join(intervals) + r" \\")
    level = round(board.level * 100)
    caption = (
        f"\\caption{{Bold: best per column. Brackets: {level}\\% bootstrap CI resampling "
        f"{latex_escape(CLUSTER_WORDS.get(board.cluster, board.cluster))}. $^\\dagger$: differs from "
        f"{latex_escape(board.reference)} (paired bootstrap, $p<{board.alpha}$).}}"
    )
    lines += [r"\bottomrule", r"\end{tabular}}", caption, r"\end{table*}"]
    return "\n".join(lines) + "\n"


def to_csv(board: Leaderboard) -> str:
    """Long format: one line per system, scope and metric, with raw (unscaled) values."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["system", "scope", "task", "metric", "value", "ci_low", "ci_high", "p_vs_reference",
                     "significant", "instances", "failures"])
    for row in board.rows:
        for column in board.columns:
            cell = row.cells.get(column.id) or Cell(None)
            instances, failures = row.counts.get(column.task, (0, 0))
            writer.writerow([row.system, row.scope, column.task, column.header, cell.value, cell.low, cell.high,
                             cell.p_value, cell.significant, instances, failures])
    return out.getvalue()
