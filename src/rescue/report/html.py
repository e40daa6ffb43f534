"""The self-contained HTML report: tables, inline PNG figures, and a filterable drill-down to every instance.

Everything is inline (figures as base64 PNG, data as JSON, vanilla JS): the file opens offline and
can be mailed or archived as is.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from rescue.data.models import Sample
from rescue.report.comparisons import Comparison
from rescue.report.leaderboard import MARKER, Leaderboard, _cell_text, _counts_text
from rescue.report.outcomes import outcome
from rescue.report.runs import System
from rescue.tasks.base import TASK_NAMES


@dataclass
class Figure:
    key: str  # file stem under figures/
    title: str
    png: bytes
    caption: str = ""

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


@dataclass
class HtmlTable:
    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""


def leaderboard_tables(board: Leaderboard) -> list[HtmlTable]:
    tasks = sorted({c.task for c in board.columns})
    tables = []
    for scope in dict.fromkeys(r.scope for r in board.rows):
        rows = [
            [r.system, *(_cell_text(r.cells.get(c.id), c) for c in board.columns), _counts_text(r, tasks)]
            for r in board.scope_rows(scope)
        ]
        title = "Pooled (both scenarios)" if scope == "all" else f"Scenario: {scope}"
        tables.append(HtmlTable(title, ["System", *(c.header for c in board.columns), "Instances/failures"], rows))
    return tables


def comparison_table(comparisons: Sequence[Comparison], alpha: float) -> HtmlTable:
    def p(value: float | None, prefix: str = "") -> str:
        if value is None:
            return ""
        text = f"{prefix}< 0.001" if value < 0.001 else f"{prefix}= {value:.3f}" if prefix else f"{value:.3f}"
        return text + (MARKER if value < alpha else "")

    rows = []
    for c in comparisons:
        diff = f"{c.column.format(c.diff)} [{c.column.format(c.low)}, {c.column.format(c.high)}]"
        mcnemar = "" if c.p_mcnemar is None else f"{c.mcnemar_only_a}/{c.mcnemar_only_b}, {p(c.p_mcnemar, 'p ')}"
        rows.append([c.a, c.b, c.scope, c.metric, str(c.instances), c.column.format(c.value_a),
                     c.column.format(c.value_b), diff, p(c.p_bootstrap), mcnemar])
    headers = ["A", "B", "Scope", "Metric", "Shared instances", "A", "B", "A−B [CI]", "p (paired bootstrap)",
               "McNemar A-only/B-only"]
    return HtmlTable("Paired comparisons", headers, rows, f"{MARKER}: p < {alpha}.")


def _transcripts(samples: Sequence[Sample], wanted: set[str]) -> dict[str, list[dict[str, Any]]]:
    return {
        s.sample_id: [
            {"i": r.row_index, "s": r.speaker, "t": list(r.target), "d": r.dialogue_cleaned, "at": round(r.start_time, 1)}
            for r in s.rows
        ]
        for s in samples
        if s.sample_id in wanted
    }


def _instances(systems: Sequence[System]) -> list[dict[str, Any]]:
    rows = []
    for system in systems:
        for r in system.records:
            rows.append({
                "system": system.label, "task": r.task, "scenario": r.scenario, "sample": r.sample_id,
                "row": r.row_index, "id": r.instance_id, "gold": r.gold, "pred": r.prediction, "raw": r.raw,
                "status": r.status, "error": r.error, "outcome": outcome(r), "scores": r.scores, "judge": r.judge,
            })
    return rows


def _inline_json(value: Any) -> str:
    # "</" would close the <script> element early; "<!--" could open a comment in it.
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/").replace("<!--", "<\\!--")


def render_html(
    *,
    title: str,
    systems: Sequence[System],
    samples: Sequence[Sample],
    leaderboard: Sequence[HtmlTable],
    comparisons: Sequence[HtmlTable],
    analyses: Sequence[HtmlTable],
    figures: Sequence[Figure],
    notes: Sequence[str],
    context_rows: int = 8,
) -> str:
    environment = Environment(loader=PackageLoader("rescue.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    instances = _instances(systems)
    payload = {
        "instances": instances,
        "transcripts": _transcripts(samples, {i["sample"] for i in instances}),
        "contextRows": context_rows,
    }
    template = environment.get_template("report.html.j2")
    return template.render(
        title=title,
        systems=systems,
        leaderboard=leaderboard,
        comparisons=comparisons,
        analyses=analyses,
        figures=figures,
        notes=notes,
        payload=_inline_json(payload),
        tasks=[t for t in TASK_NAMES if any(i["task"] == t for i in instances)],
        scenarios=sorted({i["scenario"] for i in instances}),
    )
