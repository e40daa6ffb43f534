"""What ``rescue run`` prints at its end: the short pooled leaderboard of one run, from its results.

Kept apart from :mod:`rescue.report.leaderboard` so that a finished run prints it without importing the
report's statistics (numpy and the bootstrap), which it does not use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.table import Table

from rescue.data.text import visible_text
from rescue.runs.failures import reason_lines
from rescue.runs.results import ModelResults, RunResults
from rescue.display import terminal_text
from rescue.report.columns import HEADLINE, Column
from rescue.tasks import TASK_NAMES


def _present(column: Column, models: Mapping[str, ModelResults]) -> bool:
    return any(column.pick(m.scope(column.task)) is not None for m in models.values())


def terminal_units(results: RunResults | Mapping[str, ModelResults]) -> str:
    """The units of the columns :func:`terminal_leaderboard` shows, and only of those."""
    columns = _terminal_columns(results.models if isinstance(results, RunResults) else results)
    headers = [c.header for c in columns]
    units = []
    if any(c.scale == 100.0 for c in columns):  # percentages (the right/wrong tasks' metrics)
        units.append("%")
    if any(h.endswith("judge") for h in headers):
        units.append(f"{'/'.join(h.split()[0] for h in headers if h.endswith('judge'))} judge 1-5")
    if any(h.endswith("BERTScore") for h in headers):
        units.append("BERTScore F1 0-1")
    return "; ".join(units)


def print_run_summary(console: Any, results: RunResults, out: Any) -> None:
    """What ``rescue run`` prints at its end: a one-line title, the table, and the next command on its own line
    (soft-wrapped: a terminal may fold it, but no line break is ever inserted into it)."""
    mode = results.config.mode
    units = terminal_units(results)
    console.print(f"[bold]RESCUE-Bench[/], {mode} mode, pooled" + (f" ({units})" if units else "") + f": {terminal_text(str(out))}",
                  highlight=False, soft_wrap=True)
    console.print(terminal_leaderboard(results))
    spent = budget_exhausted(results)
    if spent:
        console.print(f"[yellow]{spent} answer(s) ran out of budget before answering[/] (budget_exhausted: "
                      "finish_reason=length, most often spent thinking; counted as failures). Fix: rerun the same "
                      "command with --budget-retry 2 (asks those once more with twice the budget), or give a "
                      "larger --max-tokens, or --thinking low/off.", highlight=False, soft_wrap=True)
    console.print("Full tables, confidence intervals and the HTML report:", highlight=False)
    shown = terminal_text(str(out))
    console.print(f"  rescue report {shown} --out {shown}/report", highlight=False, soft_wrap=True)


def failure_summary(results: RunResults) -> list[str]:
    """Per model and task that has failures, a heading line and its commonest reasons (indented), as the run prints
    them at its end; plain text (never markup); empty when every answer was read."""
    lines: list[str] = []
    for name, entry in results.models.items():
        for task in TASK_NAMES:
            reasons = entry.failure_reasons.get(task)
            pooled = entry.scope(task)
            if not reasons or pooled is None:
                continue
            lines.append(f"  {visible_text(name, max_length=60)} · {task}: {pooled.failures} of {pooled.instances} "
                         "failed")
            lines += [f"    {line}" for line in reason_lines(reasons, pooled.failures)]
    return lines


def print_failure_summary(console: Any, results: RunResults, out: Any) -> None:
    """Why the run's answers failed (nothing when none did): every run prints it, ``--quiet`` or not."""
    lines = failure_summary(results)
    if not lines:
        return
    console.print("[yellow]Why answers failed[/] (commonest reasons; each answer is in "
                  f"{terminal_text(str(out))}/predictions.jsonl):", highlight=False, soft_wrap=True)
    for line in lines:
        console.print(line, highlight=False, soft_wrap=True, markup=False)


def budget_exhausted(results: RunResults) -> int:
    """How many of the run's pooled instances ran out of answer budget (0 for runs written before it was counted)."""
    return sum(int(s.value("budget_exhausted") or 0) for m in results.models.values()
               for t in TASK_NAMES if (s := m.scope(t)) is not None)


def _terminal_columns(models: Mapping[str, ModelResults]) -> list[Column]:
    columns: list[Column] = []
    for task in TASK_NAMES:  # per task its first headline metric that has a value (ER/VP: judge, else BERTScore)
        present = [c for c in HEADLINE if c.task == task and _present(c, models)]
        columns += present[:1]
    return columns


def print_report_summary(console: Any, systems: Mapping[str, ModelResults], out: Any) -> None:
    """What ``rescue report`` prints on the terminal: the leaderboard ``rescue run`` prints (one headline number per
    task, pooled) of every system of the report, under a one-line title, before the report's own files."""
    units = terminal_units(systems)
    console.print(f"[bold]RESCUE-Bench[/], {len(systems)} system(s), pooled" + (f" ({units})" if units else "")
                  + f"; intervals, comparisons and analyses in {terminal_text(str(out))}:", highlight=False,
                  soft_wrap=True)
    console.print(terminal_leaderboard(systems))


def terminal_leaderboard(results: RunResults | Mapping[str, ModelResults], *, title: str | None = None) -> Table:
    """The short pooled leaderboard ``rescue run`` prints at its end, from a run's results (or the report's systems:
    label -> their results).

    One headline number per task, so it fits an 80-column terminal: ITP F1, RPP accuracy, STP and SSP R@1,
    and for ER / VP the judge score when a judge ran, else BERTScore. ``rescue report`` has everything else.
    """
    models = results.models if isinstance(results, RunResults) else results
    columns = _terminal_columns(models)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("model", no_wrap=True)
    for column in columns:
        header = column.header.replace(" ", "\n", 1).replace("BERTScore", "BERT")
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("fail", justify="right", no_wrap=True)
    costs = {name: entry.cost.total for name, entry in models.items()}
    show_cost = any(cost for cost in costs.values())  # offline baselines cost nothing: no column for them
    if show_cost:
        table.add_column("cost $", justify="right", no_wrap=True)
    for name, entry in models.items():
        pooled = [s for t in TASK_NAMES if (s := entry.scope(t)) is not None]
        failures = sum(s.failures for s in pooled)
        instances = sum(s.instances for s in pooled)
        cells = [c.format(c.pick(entry.scope(c.task))) for c in columns]
        spent = sum(int(s.value("budget_exhausted") or 0) for s in pooled)
        cells.append(f"{failures}/{instances}" + (f" ({spent} budget)" if spent else ""))
        if show_cost:
            cells.append("—" if costs[name] is None else f"{costs[name]:.2f}")
        table.add_row(terminal_text(name, max_length=60), *cells)  # an id is shown, never styled or sent raw
    return table
