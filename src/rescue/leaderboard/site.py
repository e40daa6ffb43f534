"""``rescue leaderboard build BUNDLES --out SITE``: a static site from a folder of verified bundles.

The site works from a folder, any static host or a Hugging Face static Space: plain HTML, one stylesheet, one
script, an SVG figure, and files to download; no server, no font, no request to anywhere else. It is written to a
temporary folder beside ``SITE`` and moved into place whole, so a reader never sees half a site.

    SITE/index.html           the table (views by task, scenario and relation pattern; sortable; tie groups)
    SITE/entries/ID/          an entry's page and its downloads (bundle, answers, predictions, results, verdict)
    SITE/changelog.html       what was added or re-verified when
    SITE/cost_score.svg       cost against score, every entry
    SITE/leaderboard.json     the table as data (schema below, versioned), and leaderboard.csv
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from rescue._version import __version__
from rescue.atomic import check_target
from rescue.errors import LeaderboardError
from rescue.leaderboard.entries import ChangeEvent, Entry, read_changelog, read_entries, read_release
from rescue.leaderboard.table import SCOPES, Board, Row, build_board
from rescue.report.columns import Column
from rescue.submissions.bundle import ANSWERS, MANIFEST, now_iso
from rescue.runs.results import PREDICTIONS, RESULTS
from rescue.tasks import TASK_NAMES

SCHEMA = 1  # leaderboard.json's schema: a reader refuses a newer one
# The closed tasks' headline columns, in %: their mean is the score of the cost-versus-score figure.
SCORE_COLUMNS = ("itp.f1", "rpp.accuracy", "stp.recall_at_1", "ssp.recall_at_1")
STATIC = ("site.css", "site.js")


@dataclass
class Site:
    """What was built: where, how many entries and rows, and the index page's size in bytes."""

    path: Path
    entries: int
    rows: int
    index_bytes: int


def _shown(column: Column, value: float | None) -> str:
    return "—" if value is None else f"{value * column.scale:.{column.digits}f}"


def score(row: Row) -> float | None:
    """The mean of the closed tasks' headline columns (%), None when the row has none of them."""
    values = [row.cells[c].value for c in SCORE_COLUMNS if c in row.cells and row.cells[c].value is not None]
    return 100 * sum(values) / len(values) if values else None  # type: ignore[arg-type]


def leaderboard_json(board: Board, entries: Sequence[Entry], release: dict[str, Any] | None) -> dict[str, Any]:
    """``leaderboard.json`` (schema 1): the release, the columns, every entry and every row with its cells."""
    return {
        "schema": SCHEMA,
        "generated": now_iso(),
        "rescue_version": __version__,
        "release": release,
        "ranking": {"method": "tie groups by the report's paired bootstrap against each group's leader",
                    "alpha": board.alpha, "level": board.level, "resamples": board.n_resamples},
        "columns": [{"id": c.id, "task": c.task, "header": c.header, "scale": c.scale, "digits": c.digits}
                    for c in board.columns],
        "entries": [{"id": e.id, "bundle": f"entries/{e.id}/{e.path.name}", "sha256": e.sha256,
                     "level": e.verdict.level, "systems": list(e.manifest.systems),
                     "declarations": e.manifest.declarations.model_dump(), "state": e.manifest.state.model_dump()}
                    for e in entries],
        "rows": [{"system": r.system, "entry": r.entry or None, "kind": r.kind, "ranked": r.ranked, "scope": r.scope,
                  "level": r.level, "cost": r.cost, "tokens": r.tokens, "score": score(r),
                  "cells": {cid: {"value": c.value, "low": c.low, "high": c.high, "rank": c.rank, "group": c.group}
                            for cid, c in r.cells.items()},
                  "instances": r.instances, "failures": r.failures} for r in board.rows],
        "patterns": {system: {p: {"accuracy": a, "instances": n} for p, (a, n) in by.items()}
                     for system, by in board.patterns.items()},
    }


def leaderboard_csv(board: Board) -> str:
    """One line per row and column: every value with its interval and tie-group rank."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["system", "entry", "kind", "scope", "level", "column", "value", "low", "high", "rank", "cost_usd"])
    for row in board.rows:
        for column in board.columns:
            cell = row.cells.get(column.id)
            if cell is not None:
                writer.writerow([row.system, row.entry, row.kind, row.scope, row.level, column.id,
                                 *("" if v is None else v for v in (cell.value, cell.low, cell.high, cell.rank)),
                                 "" if row.cost is None else row.cost])
    return out.getvalue()


def _figure(board: Board) -> str | None:
    """The cost-versus-score figure as SVG text (matplotlib, the plot extra); None without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure
    except ImportError:
        return None
    points = [(r.cost or 0.0, s, r) for r in board.scope_rows("all") if r.kind in ("model", "baseline", "human")
              and (s := score(r)) is not None]
    figure = Figure(figsize=(7, 4.2))
    axes = figure.subplots()
    markers = {"model": ("o", "#1f4e9c"), "baseline": ("s", "#6b6b6b"), "human": ("^", "#a4301b")}
    for kind, (marker, colour) in markers.items():
        chosen = [(x, y) for x, y, r in points if r.kind == kind]
        if chosen:
            axes.scatter([x for x, _ in chosen], [y for _, y in chosen], marker=marker, color=colour, label=kind)
    for x, y, row in points:
        axes.annotate(row.system[:40], (x, y), fontsize=7, xytext=(4, 3), textcoords="offset points")
    axes.set_xlabel("cost of the run (USD, as its bundle records; people and baselines 0)")
    axes.set_ylabel("mean of ITP F1, RPP Acc, STP R@1, SSP R@1 (%)")
    axes.grid(alpha=0.3)
    if points:
        axes.legend(loc="lower right", fontsize=8)
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buffer.getvalue()


def _cells_json(row: Row) -> str:
    """What the page's script sorts and ranks by: column -> [value, rank], and the cost."""
    cells: dict[str, list[float | int | None]] = {cid: [c.value, c.rank] for cid, c in row.cells.items()}
    cells["cost"] = [row.cost, None]
    return json.dumps(cells, allow_nan=False)


def _environment(board: Board) -> Environment:
    env = Environment(loader=PackageLoader("rescue.leaderboard", "templates"),
                      autoescape=select_autoescape(["html", "j2"]))
    env.filters["shown"] = _shown
    env.globals["score"] = score
    env.globals["cells_json"] = _cells_json
    first = default_column(board)
    env.globals["default_column"] = first
    env.globals["first_rank"] = lambda row: (row.cells[first].rank if first in row.cells and row.cells[first].rank
                                             else "—")

    def sorted_rows(scope: str) -> list[Row]:  # as the script sorts them: by the default column, best first
        rows = board.scope_rows(scope)
        return sorted(rows, key=lambda r: (r.cells[first].value is None if first in r.cells else True,
                                           -(r.cells[first].value or 0.0) if first in r.cells else 0.0))

    env.globals["sorted_rows"] = sorted_rows
    return env


def default_column(board: Board) -> str:
    """The column the table is sorted by at first: the first headline column (ITP F1 when ITP is there)."""
    headline = [c for c in board.columns if c.headline]
    return (headline or board.columns)[0].id if board.columns else ""


def _entry_files(entry: Entry, folder: Path) -> list[str]:
    """The entry's downloads, written into ``folder``; their names."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(entry.path, folder / entry.path.name)
    names = [entry.path.name]
    for member in (MANIFEST, RESULTS, PREDICTIONS, ANSWERS):
        if member in entry.bundle.members or member == MANIFEST:
            data = entry.bundle.members.get(member)
            if member == MANIFEST:
                data = (json.dumps(entry.manifest.model_dump(mode="json"), indent=2) + "\n").encode("utf-8")
            (folder / member).write_bytes(data or b"")
            names.append(member)
    verdict = entry.path.with_name(entry.path.name.replace(".rescue.zip", ".rescue.verdict.json"))
    for path in (verdict, verdict.with_suffix(".md")):
        if path.is_file():
            shutil.copyfile(path, folder / f"verdict{path.suffix}")
            names.append(f"verdict{path.suffix}")
    return names


def _failure_reasons(entry: Entry) -> dict[str, dict[str, list[tuple[str, int]]]]:
    from rescue.submissions.bundle import bundle_results

    results = bundle_results(entry.bundle)
    reasons: dict[str, dict[str, list[tuple[str, int]]]] = {}
    for name, model in results.models.items():
        for task, items in model.failure_reasons.items():
            reasons.setdefault(name, {})[task] = [(item.reason, item.count) for item in items]
    return reasons


def _write(stage: Path, board: Board, entries: Sequence[Entry], events: list[ChangeEvent],
           release: dict[str, Any] | None) -> int:
    env = _environment(board)
    context = {"board": board, "entries": entries, "release": release, "events": events, "version": __version__,
               "scopes": SCOPES, "tasks": [t for t in TASK_NAMES if any(c.task == t for c in board.columns)],
               "generated": now_iso(),
               "patterns": sorted({p for by in board.patterns.values() for p in by})}
    figure = _figure(board)
    if figure is not None:
        (stage / "cost_score.svg").write_text(figure, encoding="utf-8")
    index = env.get_template("index.html.j2").render(**context, figure=figure is not None)
    (stage / "index.html").write_text(index, encoding="utf-8")
    (stage / "changelog.html").write_text(env.get_template("changelog.html.j2").render(**context), encoding="utf-8")
    (stage / "leaderboard.json").write_text(json.dumps(leaderboard_json(board, entries, release), indent=1,
                                                       allow_nan=False) + "\n", encoding="utf-8")
    (stage / "leaderboard.csv").write_text(leaderboard_csv(board), encoding="utf-8")
    static = stage / "static"
    static.mkdir()
    from importlib import resources

    for name in STATIC:
        (static / name).write_text(resources.files("rescue.leaderboard").joinpath("static", name).read_text("utf-8"),
                                   encoding="utf-8")
    for entry in entries:
        folder = stage / "entries" / entry.id
        downloads = _entry_files(entry, folder)
        page = env.get_template("entry.html.j2").render(**context, entry=entry, downloads=downloads,
                                                        rows=[r for r in board.rows if r.entry == entry.id],
                                                        reasons=_failure_reasons(entry))
        (folder / "index.html").write_text(page, encoding="utf-8")
    return len(index.encode("utf-8"))


def build_site(bundles: str | Path, out: str | Path, *, published_rows: bool = True,
               n_resamples: int | None = None) -> Site:
    """Build the site of the bundles in ``bundles`` into ``out`` (replaced whole: a folder that holds a site
    this command wrote, or absent; anything else is refused)."""
    folder, target = Path(bundles), Path(out)
    entries = read_entries(folder)
    if not entries:
        raise LeaderboardError(f"{folder}: no bundles (add them with `rescue leaderboard add FILE --to {folder}`)")
    if target.exists() and not (target / "leaderboard.json").is_file():
        raise LeaderboardError(f"--out {target}: exists and is not a site this command built; give a new folder")
    check_target(target / "leaderboard.json")
    release = read_release(folder)
    options = {} if n_resamples is None else {"n_resamples": n_resamples}
    board = build_board(entries, published_rows=published_rows, **options)
    target.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        size = _write(stage, board, entries, read_changelog(folder), release.model_dump() if release else None)
        old = target.with_name(f".{target.name}.old")
        if target.exists():
            target.rename(old)
        stage.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return Site(target, len(entries), len(board.rows), size)
