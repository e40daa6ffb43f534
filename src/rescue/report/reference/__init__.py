"""The paper's published numbers as a reference for ``rescue report --reference paper``.

``paper.json`` holds Table 5 (pooled), Table 11 (per scenario), the ten-model averages and the judge
validation (Table 12), with a note of where each comes from. A report adds them as *published* rows
(no interval, never in a significance test) and compares each of its systems with the paper: the paper
model it is (matched by model id), else the ten-model average. A difference is shown only where it
means something; a column is *not comparable* when the paper measured it another way:

- RPP accuracy: the paper scored about 2,605 instances, not the 2,133 of its Table 6 that rescue builds;
- BERTScore: the paper does not name its backbone (``rescue.scoring.bertscore.PAPER_BACKBONE``);
- ER/VP judge: only GPT-5.4 on the 1-5 scale is the paper's judge;
- the right/wrong tasks under strict parsing, where strict parsing failed answers the authors' lenient
  parser would have read.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from rescue.display import markdown_table
from rescue.report.columns import Column
from rescue.report.comparability import bertscore_text
from rescue.scoring.bertscore import PAPER_BACKBONE
from rescue.report.leaderboard import Cell, Leaderboard, LeaderRow
from rescue.report.runs import ReportError, System
from rescue.tasks import TASKS, right_wrong_tasks

REFERENCES = ("paper",)
AVERAGE = "ten-model average"
PUBLISHED_PREFIX = "paper: "


@cache
def load_paper() -> dict[str, Any]:
    """The paper's published values (paper.json)."""
    text = resources.files(__name__).joinpath("paper.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def check_reference(name: str | None) -> None:
    """ReportError unless ``name`` is a known reference (or None)."""
    if name is not None and name not in REFERENCES:
        raise ReportError(f"--reference {name!r}: choose one of {', '.join(REFERENCES)}")


def published(model: str, scope: str) -> dict[str, float]:
    """The paper's printed values of ``model`` (or AVERAGE) in ``scope``, keyed by column id."""
    paper = load_paper()
    if model == AVERAGE:
        return dict(paper["average"].get(scope, {}))
    if scope == "all":
        return dict(paper["table5"].get(model, {}))
    return dict(paper["table11"].get(model, {}).get(scope, {}))


def paper_model(system: System) -> str | None:
    """The paper model a system is, from its model id (``dashscope/qwen3-max`` is Qwen3-Max)."""
    model_id = system.model.rsplit("/", 1)[-1].strip().lower()
    for name, aliases in load_paper()["aliases"].items():
        if model_id in aliases:
            return str(name)
    return None


def reference_rows(board: Leaderboard) -> list[LeaderRow]:
    """The paper's ten models and their average as published rows for every scope of the board."""
    paper = load_paper()
    rows = []
    for scope in dict.fromkeys(r.scope for r in board.rows):
        for model in [*paper["models"], AVERAGE]:
            values = published(model, scope)
            if not values:
                continue
            cells = {c.id: Cell(values[c.id] / c.scale if c.id in values else None) for c in board.columns}
            rows.append(LeaderRow(PUBLISHED_PREFIX + model, scope, cells, published=True))
    return rows


@dataclass(frozen=True)
class ReferenceComparison:
    """One of our values beside the paper's published one, with our interval and why it is not comparable."""

    system: str
    paper_model: str  # a paper model, or AVERAGE
    scope: str
    column: Column
    ours: float | None
    low: float | None
    high: float | None
    paper: float | None  # as a fraction, like ours
    reason: str  # why the column is not comparable; "" when it is
    caveat: str = ""  # comparable, with a caution (another instance set)

    @property
    def comparable(self) -> bool:
        """Whether both values exist and nothing makes them incomparable."""
        return not self.reason and self.ours is not None and self.paper is not None

    @property
    def diff(self) -> float | None:
        """Ours minus the paper's, None when not comparable."""
        return None if not self.comparable else self.ours - self.paper  # type: ignore[operator]

    @property
    def inside(self) -> bool | None:
        """Whether the published value falls inside our confidence interval (None: no interval, or not comparable)."""
        if not self.comparable or self.low is None or self.high is None:
            return None
        return self.low <= self.paper <= self.high  # type: ignore[operator]


def _parse_failures(system: System, task: str) -> int:
    return sum(1 for r in system.task_records(task) if r.status == "parse_error")


def _reason(system: System, column: Column, instances: int, scope: str) -> tuple[str, str]:
    """(why the column is not comparable with the paper, or ""; a caveat when it is comparable)."""
    setup = load_paper()["setup"]
    if column.key == "bertscore_f1":
        return f"{PAPER_BACKBONE} Ours: {bertscore_text(system) or 'off'}", ""
    if column.key in ("s_er", "judge"):
        judges = system.config.judges
        scale = system.config.judge_scale
        if not judges:
            return "judge model: no judge ran; the paper's is GPT-5.4 (1-5)", ""
        if not any(j.rsplit("/", 1)[-1].lower() == "gpt-5.4" for j in judges) or scale != setup["judge_scale"]:
            return f"judge model: ours is {', '.join(judges)} ({scale}), the paper's GPT-5.4 (1-5 Likert)", ""
    expected = setup["instances"].get(column.task, {}).get(scope)
    if column.task == "rpp" and instances != expected:
        return (f"RPP evaluation set: the paper scored about {expected} instances here, not the "
                f"{setup['table6_rpp'].get(scope)} of its Table 6 that rescue builds; ours has {instances}", "")
    policy = system.config.used.parse or system.config.parse
    failed = _parse_failures(system, column.task)
    if column.task in right_wrong_tasks() and policy != setup["parse"] and failed:
        return (f"parse policy: ours is {policy} and {failed} answer(s) failed to parse that the authors' lenient "
                "parser may have read (rescore with --parse lenient)", "")
    caveats = []
    if policy == "lenient":
        caveats.extend(_lenient_differences(system, column.task))
    if expected is not None and instances != expected:
        caveats.append(f"on {instances} of the paper's {expected} instances: the difference includes sampling")
    return "", "; ".join(caveats)


def _lenient_differences(system: System, task: str) -> list[str]:
    """Where rescue's lenient reading may differ from the authors' scripts on this run's answers of the task
    (a task that knows declares ``lenient_differences``; docs/tasks.md, "Lenient is not exactly the authors'
    reading")."""
    differences = getattr(TASKS.get(task), "lenient_differences", None)
    return list(differences(system.task_records(task))) if differences else []


def compare_with_paper(systems: Sequence[System], board: Leaderboard) -> list[ReferenceComparison]:
    """Every system against its paper model (else the ten-model average), per scope and leaderboard column."""
    index = {(r.system, r.scope): r for r in board.rows if not r.published}
    out: list[ReferenceComparison] = []
    for system in systems:
        model = paper_model(system) or AVERAGE
        for scope in dict.fromkeys(r.scope for r in board.rows):
            row = index.get((system.label, scope))
            values = published(model, scope)
            if row is None or not values:
                continue
            for column in board.columns:
                cell = row.cells.get(column.id) or Cell(None)
                if cell.value is None:
                    continue
                instances = row.counts.get(column.task, (0, 0))[0]
                reason, caveat = _reason(system, column, instances, scope)
                paper_value = values.get(column.id)
                out.append(ReferenceComparison(system.label, model, scope, column, cell.value, cell.low, cell.high,
                                               None if paper_value is None else paper_value / column.scale,
                                               reason, caveat))
    return out


def _signed(column: Column, value: float | None) -> str:
    if value is None:
        return "—"
    text = column.format(value)
    return text if text.startswith("-") else "+" + text


def rows_text(items: Sequence[ReferenceComparison]) -> list[list[str]]:
    """The comparisons as table rows of text."""
    rows = []
    for c in items:
        ci = "" if c.low is None or c.high is None else f"[{c.column.format(c.low)}, {c.column.format(c.high)}]"
        inside = {True: "inside", False: "outside", None: ""}[c.inside]
        status = c.reason or c.caveat
        rows.append([c.system, c.paper_model, c.scope, c.column.header, c.column.format(c.ours), ci,
                     c.column.format(c.paper), _signed(c.column, c.diff) if c.comparable else "not comparable",
                     inside, status])
    return rows


HEADERS = ["System", "Paper model", "Scope", "Metric", "Ours", "Our CI", "Paper", "Ours − paper", "Paper in our CI",
           "Why not comparable / caveat"]


def reference_markdown(items: Sequence[ReferenceComparison]) -> str:
    """The comparisons with the paper as a Markdown table and its note."""
    return markdown_table(HEADERS, rows_text(items)) + "\n" + reference_note() + "\n"


def reference_csv(items: Sequence[ReferenceComparison]) -> str:
    """The comparisons with the paper as CSV."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["system", "paper_model", "scope", "task", "metric", "ours", "ci_low", "ci_high", "paper", "diff",
                     "comparable", "paper_inside_ci", "reason", "caveat"])
    for c in items:
        writer.writerow([c.system, c.paper_model, c.scope, c.column.task, c.column.header, c.ours, c.low, c.high,
                         c.paper, c.diff, c.comparable, c.inside, c.reason, c.caveat])
    return out.getvalue()


def reference_note() -> str:
    """Where the published values come from and how they are compared."""
    paper = load_paper()
    return (f"Published values: {paper['source']} Systems that are not one of the paper's ten models are compared "
            f"with the {AVERAGE}. Published rows carry no interval and are never part of a significance test.")
