"""``rescue leaderboard rank RUN --against SITE_OR_FILE``: where a local run would stand on a published site.

For each of the run's systems and each column (pooled), its value and 95% interval (computed as the report and the
bundles compute them) and the tie group it would join: against a site folder, the same paired test the site's
ranks come from, asked of each group's leader in order (the run joins the first group whose leader it is not
separated from, else it starts a group below the last leader that beats it); against ``leaderboard.json`` alone,
which holds no answers, the intervals stand in for the test (the run joins the first group whose leader's interval
overlaps its own) and the table says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rescue.data import readback
from rescue.errors import LeaderboardError
from rescue.leaderboard.site import SCHEMA
from rescue.leaderboard.table import separated
from rescue.report.columns import COLUMNS, Column
from rescue.report.options import ALPHA
from rescue.report.runs import System, load_run
from rescue.runs.folder import read_predictions, read_results
from rescue.runs.results import RESULTS
from rescue.submissions.facts import interval_cells

ALL = "all"


@dataclass
class Standing:
    """A system of the run on one column: its value, interval, the rank it would have and how it was decided."""

    system: str
    column: Column
    value: float | None
    low: float | None
    high: float | None
    rank: int | None
    ranked: int  # ranked rows of the site with a value in this column
    tested: bool  # decided by the paired test (a site folder) rather than the intervals (a file)


def read_leaderboard(path: Path) -> tuple[dict[str, Any], Path | None]:
    """A site's ``leaderboard.json`` (from the site folder or the file itself) and the site folder, if given."""
    site = path if path.is_dir() else None
    file = path / "leaderboard.json" if site is not None else path
    value = readback.read_json_file(file, LeaderboardError)
    if not isinstance(value, dict) or not isinstance(value.get("rows"), list):
        raise LeaderboardError(f"{file}: not a leaderboard.json written by `rescue leaderboard build`")
    schema = value.get("schema")
    if not isinstance(schema, int) or schema > SCHEMA:
        raise LeaderboardError(f"{file}: field schema: {schema!r} is not one this rescue reads ({SCHEMA}); upgrade rescue")
    return value, site


def _site_system(site: Path, board: dict[str, Any], label: str, entry: str) -> System | None:
    """A ranked row's system with its records, read from the entry's downloads."""
    folder = site / "entries" / entry
    if not (folder / "predictions.jsonl").is_file():
        return None
    records = [r for r in read_predictions(folder / "predictions.jsonl")]
    name = label.removesuffix(f" ({entry})")
    results = read_results(folder / RESULTS)
    mine = [r for r in records if r.model == name]
    return System(label=label, model=name, mode=results.config.mode, run_dir=folder, config=results.config,
                  results=results.models.get(name) or results.models[next(iter(results.models))], records=mine)


def _leaders(rows: list[dict[str, Any]], column: str) -> list[tuple[int, dict[str, Any]]]:
    """Each tie group's leader (its best row) with the group's rank, best group first."""
    leaders: dict[int, tuple[int, dict[str, Any]]] = {}
    for row in rows:
        cell = row["cells"].get(column) or {}
        group, rank = cell.get("group"), cell.get("rank")
        if isinstance(group, int) and isinstance(rank, int) and group not in leaders:
            leaders[group] = (rank, row)
    return [leaders[g] for g in sorted(leaders)]


def standings(run: str | Path, against: str | Path) -> list[Standing]:
    """Where every system of ``run`` would stand on the site or leaderboard.json ``against``."""
    board, site = read_leaderboard(Path(against))
    systems = load_run(run)
    release = board.get("release") or {}
    data = read_results(Path(run) / RESULTS).data
    if release.get("data_sha256") and data is not None and data.sha256 != release["data_sha256"]:
        raise LeaderboardError(f"{run}: made on other data (SHA-256 {data.sha256[:12]}...) than the site's release "
                               f"({release['data_sha256'][:12]}...): its numbers cannot be placed there")
    cells = {(c["system"], c["column"]): c for c in interval_cells(systems) if c["scope"] == ALL}
    rows = [r for r in board["rows"] if r.get("scope") == ALL and r.get("ranked")]
    cache: dict[str, System | None] = {}
    found: list[Standing] = []
    for system in systems:
        for column in COLUMNS:
            mine = cells.get((system.label, column.id))
            if mine is None or mine["value"] is None:
                continue
            with_value = [r for r in rows if (r["cells"].get(column.id) or {}).get("value") is not None]
            rank: int | None = None
            tested = site is not None
            for group_rank, leader in _leaders(with_value, column.id):
                cell = leader["cells"][column.id]
                if site is not None:
                    key = f"{leader['entry']}\t{leader['system']}"
                    if key not in cache:
                        cache[key] = _site_system(site, board, leader["system"], leader["entry"] or "")
                    other = cache[key]
                    joined = other is not None and not separated(other, system, column, ALL, ALPHA,
                                                                  board.get("ranking", {}).get("resamples", 1000))
                else:
                    joined = (cell.get("low") is not None and mine["high"] is not None and mine["low"] is not None
                              and cell["low"] <= mine["high"] and mine["low"] <= cell["high"])
                if joined:
                    rank = group_rank
                    break
                if cell["value"] < mine["value"]:  # a leader below the run that separates: the run leads a group
                    rank = group_rank
                    break
            if rank is None:
                rank = len(with_value) + 1
            found.append(Standing(system.label, column, mine["value"], mine["low"], mine["high"], rank,
                                  len(with_value), tested))
    return found
