"""The public leaderboard's table: every system of every entry a row per scope, the paper's Table 5 columns with
their 95% intervals (the bundle's own, which its verification re-derived), and a rank per column that is a **tie
group**: entries the report's paired test does not separate share a rank.

Tie groups, per column and scope, among the ranked rows (models and baselines; people and the paper's published
rows are reference rows, never ranked): the rows sorted by value, best first; the first row leads group 1; each
next row joins the current group when the paired bootstrap against the group's leader (on the instances both
answered, the report's own test, :func:`rescue.report.bootstrap.paired_bootstrap`) gives p >= alpha, and otherwise
leads a new group. A group's rank is one more than the number of rows above it, so ``1, 1, 3`` reads "the first
two are not separated; the third is worse than the first". A row without a value for the column has no rank.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rescue.leaderboard.entries import Entry
from rescue.report.bootstrap import paired_bootstrap
from rescue.report.columns import COLUMNS, Column
from rescue.report.options import ALPHA, LEVEL, N_RESAMPLES
from rescue.report.recompute import best_statistic, in_scope, registry_aggregates
from rescue.report.reference import AVERAGE, load_paper, published
from rescue.report.runs import System, run_systems
from rescue.submissions.bundle import INTERVALS, bundle_records, bundle_results, parse_json, system_kind
from rescue.tasks import TASK_NAMES

Kind = Literal["model", "baseline", "human", "published"]
SCOPES = ("all", "couple", "family")
RPP_HIT = "recall_at_1"  # an RPP answer is right when its first pattern is the gold one


@dataclass
class Cell:
    """One value with its interval (None where there is none), and its tie-group rank (None: unranked)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    rank: int | None = None
    group: int | None = None


@dataclass
class Row:
    """One system in one scope."""

    system: str
    entry: str  # the entry id; "" for the paper's published rows
    kind: Kind
    scope: str
    level: str  # the entry's verification level; "published" for the paper's rows
    cells: dict[str, Cell] = field(default_factory=dict)
    instances: dict[str, int] = field(default_factory=dict)  # task -> instances
    failures: dict[str, int] = field(default_factory=dict)
    cost: float | None = None
    tokens: int = 0

    @property
    def ranked(self) -> bool:
        """Models and baselines are ranked; people and the paper's rows are references."""
        return self.kind in ("model", "baseline")


@dataclass
class Board:
    """The whole table: rows, columns, per-pattern RPP accuracy, and how the ranks were made."""

    columns: list[Column]
    rows: list[Row]
    patterns: dict[str, dict[str, tuple[float, int]]]  # system -> gold pattern -> (accuracy, instances)
    alpha: float = ALPHA
    level: float = LEVEL
    n_resamples: int = N_RESAMPLES
    systems: dict[str, System] = field(default_factory=dict, repr=False)

    def scope_rows(self, scope: str) -> list[Row]:
        """The rows of ``scope``."""
        return [r for r in self.rows if r.scope == scope]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) else None


def _system_label(name: str, entry: Entry, taken: set[str]) -> str:
    return name if name not in taken else f"{name} ({entry.id})"


def _entry_rows(entry: Entry, taken: set[str], systems: dict[str, System]) -> list[Row]:
    results = bundle_results(entry.bundle)
    records = bundle_records(entry.bundle)
    intervals = parse_json(entry.bundle.text(INTERVALS), f"{entry.path}:{INTERVALS}") \
        if INTERVALS in entry.bundle.members else []
    cells = {(c["system"], c["scope"], c["column"]): c for c in intervals if isinstance(c, dict)}
    rows = []
    run = run_systems(results, records, entry.path)
    names = [s.model for s in run]
    # Rows of the bundle's intervals that are no system of the run: each group's "average person" (the report's).
    names += [n for n in dict.fromkeys(c["system"] for c in intervals if isinstance(c, dict))
              if isinstance(n, str) and n not in names and system_kind(n) == "human"]
    by_name = {s.model: s for s in run}
    for name in names:
        label = _system_label(name, entry, taken)
        taken.add(label)
        system = by_name.get(name)
        if system is not None:
            system.label = label
            systems[label] = system
        facts = entry.manifest.systems.get(name)
        for scope in SCOPES:
            row = Row(label, entry.id, system_kind(name), scope, entry.verdict.level,
                      cost=facts.cost if facts else None,
                      tokens=(facts.input_tokens + facts.output_tokens) if facts else 0)
            for column in COLUMNS:
                cell = cells.get((name, scope, column.id))
                if cell is not None:
                    row.cells[column.id] = Cell(_number(cell.get("value")), _number(cell.get("low")),
                                                _number(cell.get("high")))
                    row.instances[column.task] = int(cell.get("instances") or 0)
                    row.failures[column.task] = int(cell.get("failures") or 0)
            if row.cells:
                rows.append(row)
    return rows


def _published_rows() -> list[Row]:
    rows = []
    for model in [*load_paper()["models"], AVERAGE]:
        for scope in SCOPES:
            values = published(model, scope)
            if values:
                rows.append(Row(f"paper: {model}", "", "published", scope, "published",
                                {c.id: Cell(values[c.id] / c.scale) for c in COLUMNS if c.id in values}))
    return rows


def _patterns(systems: dict[str, System]) -> dict[str, dict[str, tuple[float, int]]]:
    by_system: dict[str, dict[str, tuple[float, int]]] = {}
    for label, system in systems.items():
        counts: dict[str, list[float]] = {}
        for record in system.task_records("rpp"):
            counts.setdefault(str(record.gold), []).append(float(record.scores.get(RPP_HIT) or 0.0))
        if counts:
            by_system[label] = {pattern: (sum(v) / len(v), len(v)) for pattern, v in sorted(counts.items())}
    return by_system


def separated(leader: System, other: System, column: Column, scope: str, alpha: float, n_resamples: int) -> bool:
    """Whether the report's paired bootstrap separates two systems on one column and scope (p < alpha)."""
    aggregate = registry_aggregates([column.task]).get(column.task)
    left, right = in_scope(leader.task_records(column.task), scope), in_scope(other.task_records(column.task), scope)
    if aggregate is None or not left or not right:
        return False
    paired = paired_bootstrap(left, right, best_statistic(column.task, aggregate, [column], left, right), [column.id],
                              n_resamples=n_resamples)[column.id]
    return paired.p_value is not None and paired.p_value < alpha


def tie_groups(rows: Sequence[Row], column: Column, systems: dict[str, System], *, alpha: float = ALPHA,
               n_resamples: int = N_RESAMPLES) -> None:
    """Fill each ranked row's rank and group for ``column`` (rows of one scope), as the module says."""
    ranked = [r for r in rows if r.ranked and r.cells.get(column.id) and r.cells[column.id].value is not None]
    ranked.sort(key=lambda r: (-(r.cells[column.id].value or 0.0), r.system))
    leader: Row | None = None
    group = rank = 0
    for position, row in enumerate(ranked, 1):
        if leader is None or (row.system in systems and leader.system in systems and separated(
                systems[leader.system], systems[row.system], column, row.scope, alpha, n_resamples)):
            leader, group, rank = row, group + 1, position
        row.cells[column.id].rank, row.cells[column.id].group = rank, group


def build_board(entries: Sequence[Entry], *, published_rows: bool = True, alpha: float = ALPHA,
                n_resamples: int = N_RESAMPLES) -> Board:
    """The table of ``entries``: their rows, the paper's published rows, tie groups for every column and scope."""
    taken: set[str] = set()
    systems: dict[str, System] = {}
    rows = [row for entry in entries for row in _entry_rows(entry, taken, systems)]
    present = {c for r in rows for c in r.cells}
    columns = [c for c in COLUMNS if c.id in present]
    if published_rows:
        rows += [r for r in _published_rows() if any(c.id in r.cells for c in columns)]
    board = Board(columns, rows, _patterns(systems), alpha=alpha, n_resamples=n_resamples, systems=systems)
    for scope in SCOPES:
        scoped = board.scope_rows(scope)
        for column in columns:
            tie_groups(scoped, column, systems, alpha=alpha, n_resamples=n_resamples)
    order = {name: i for i, name in enumerate(TASK_NAMES)}
    board.columns.sort(key=lambda c: order.get(c.task, 99))
    return board


__all__ = ["Board", "Cell", "Row", "SCOPES", "build_board", "tie_groups"]
