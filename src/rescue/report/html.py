"""The self-contained HTML report: tables, inline PNG figures, and a filterable drill-down to every instance.

Everything is inline (figures as base64 PNG, instances as gzip-compressed JSON, vanilla JS): the file
opens offline and can be mailed or archived as is. The instances are inflated by the browser after the
page has rendered and shown a page at a time, so the report stays light however many there are.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from rescue.archives import gunzip_limited
from rescue.data.models import Sample
from rescue.report.comparisons import Comparison, comparisons_note, informative, p_bootstrap_text, p_text
from rescue.report.leaderboard import MARKER, PEOPLE_MARKS, Cell, Leaderboard, LeaderRow, cell_parts, legend
from rescue.report.outcomes import outcome
from rescue.report.runs import System
from rescue.tasks import TASK_NAMES


# A figure's formats: PNG always (the page inlines it), SVG and PDF when a report asks (--figure-formats).
FIGURE_FORMATS = ("png", "svg", "pdf")


@dataclass(frozen=True)
class Rendered:
    """One figure as PNG (inlined in the page) and, when the report asked for them, SVG and PDF (written beside
    it, for papers)."""

    png: bytes
    svg: bytes | None = None
    pdf: bytes | None = None

    def files(self) -> dict[str, bytes]:
        """The figure's bytes by format (png, then svg and pdf when drawn)."""
        drawn = {"png": self.png, "svg": self.svg, "pdf": self.pdf}
        return {fmt: content for fmt, content in drawn.items() if content is not None}


@dataclass
class Figure:
    """A figure of the report: its file stem, title, images and caption."""

    key: str  # file stem under figures/
    title: str
    image: Rendered  # PNG (inlined here), SVG and PDF when asked (written beside it)
    caption: str = ""

    @property
    def data_uri(self) -> str:
        """The PNG as a ``data:`` URL, inlined in report.html."""
        return "data:image/png;base64," + base64.b64encode(self.image.png).decode("ascii")


@dataclass
class HtmlTable:
    """A table of report.html: title, headers, rows, note, and how it is laid out."""

    title: str
    headers: list[str]
    rows: list[list[Any]]  # str, or Markup for cells with their own markup
    note: str = ""
    collapsed: bool = False  # inside a closed <details>
    css: str = ""  # the table's class: "board" (leaderboard layout), "wraps" (long text wraps), "pairs" (paired comparisons)
    groups: list[tuple[str, int]] = field(default_factory=list)  # a header row above: (label, columns spanned)


def html_cell(cell: Cell | None, column: Any) -> Markup:
    """Value (bold when best) with the interval beside it in small type, and the count where mixed."""
    value, interval, count = cell_parts(cell, column)
    shown = Markup("<strong>{}</strong>").format(value) if cell is not None and cell.best else escape(value)
    extra = " ".join(p for p in (interval, count) if p)
    # The interval on a line of its own: a column is as wide as its value, not value and interval side by side.
    return shown + (Markup('<br><small class="ci">{}</small>').format(extra) if extra else Markup(""))


def name_cell(name: str) -> Markup:
    """A system's name on one line however long: cut with an ellipsis where it would widen the table, whole on
    hover and in the list of systems above the leaderboard."""
    return Markup('<span class="name" title="{0}">{0}</span>').format(name)


def _system_cell(row: LeaderRow) -> Markup:
    published = Markup(' <small class="published">(published)</small>') if row.published else Markup("")
    people = Markup(' <small class="people">({})</small>').format(PEOPLE_MARKS[row.people]) if row.people else Markup("")
    return name_cell(row.system) + published + people


def _failures_total(row: LeaderRow, tasks: Sequence[str]) -> str:
    """The row's failures of all its tasks, out of its instances (the per-task counts are in their own table)."""
    counts = [(n, f) for t, (n, f) in row.counts.items() if t in tasks and n]
    if not counts:
        return ""
    return f"{sum(f for _, f in counts)} of {sum(n for n, _ in counts)}"


def _counts_table(board: Leaderboard, scope: str, tasks: Sequence[str]) -> HtmlTable:
    """Instances and failures per task of each system in ``scope``: what the leaderboard's Failures column sums."""
    shown = [t for t in tasks if any(r.counts.get(t, (0, 0))[0] for r in board.scope_rows(scope))]
    rows = []
    for r in board.scope_rows(scope):
        if r.published:
            continue
        cells = []
        for task in shown:
            n, f = r.counts.get(task, (0, 0))
            budget = r.budget.get(task)
            cells.append(f"{n}/{f}" + (f" ({budget} budget)" if budget else "") if n else "—")
        rows.append([_system_cell(r), *cells])
    title = "Instances/failures per task" + ("" if scope == "all" else f", {scope}")
    return HtmlTable(title, ["System", *(t.upper() for t in shown)], rows,
                     "Instances of the task / those that failed (a failure counts as wrong); budget: failures whose "
                     "answer budget ran out (budget_exhausted).", collapsed=scope != "all", css="board counts")


def leaderboard_tables(board: Leaderboard) -> list[HtmlTable]:
    """The leaderboard as HTML tables, one per scope, each followed by its instance and failure counts per task.

    Every row is one line high: the system name is never wrapped (an ellipsis cuts what would widen the table),
    and the counts, which took three or four lines per row, are a table of their own under the scores."""
    tasks = sorted({c.task for c in board.columns}, key=TASK_NAMES.index)  # the registry's order, as every table
    tables: list[HtmlTable] = []
    scores: list[HtmlTable] = []
    for scope in dict.fromkeys(r.scope for r in board.rows):
        rows = []
        for r in board.scope_rows(scope):
            rows.append([_system_cell(r), *(html_cell(r.cells.get(c.id), c) for c in board.columns),
                         "" if r.published else _failures_total(r, tasks)])
        title = "Pooled (both scenarios)" if scope == "all" else f"Scenario: {scope}"
        # Grouped headers: the task once above its metrics ("ITP" over "F1 | P | R"), not "ITP F1 | ITP P ...".
        groups = [("", 1)] + [(task.upper(), sum(1 for c in board.columns if c.task == task))
                              for task in dict.fromkeys(c.task for c in board.columns)] + [("", 1)]
        headers = ["System", *(_metric_label(c) for c in board.columns), "Failures"]
        scores.append(HtmlTable(title, headers, rows, css="board", groups=groups))
        tables += [scores[-1], _counts_table(board, scope, tasks)]
    if scores:
        scores[-1].note = legend(board)
    return tables


def _metric_label(column: Any) -> str:
    prefix = column.task.upper() + " "
    header: str = column.header
    return header[len(prefix):] if header.startswith(prefix) else header


def _p_text(value: float | None, alpha: float) -> str:
    if value is None:
        return ""
    return p_text(value) + (MARKER if value < alpha else "")


def comparison_tables(comparisons: Sequence[Comparison], alpha: float, cluster: str) -> list[HtmlTable]:
    """The headline metrics first; every other informative row in a second, collapsed table."""
    headers = ["A", "B", "Scope", "Metric", "n shared", "A", "B", "A−B [CI]", "p (paired bootstrap)",
               "McNemar A-only/B-only, p exact", "p clustered"]

    def rows(items: Sequence[Comparison]) -> list[list[Any]]:
        out = []
        for c in items:
            diff = escape(c.column.format(c.diff)) + Markup(' <small class="ci">[{}, {}]</small>').format(
                c.column.format(c.low), c.column.format(c.high))
            mcnemar = "" if c.p_mcnemar is None else f"{c.mcnemar_only_a}/{c.mcnemar_only_b}, {_p_text(c.p_mcnemar, alpha)}"
            out.append([name_cell(c.a), name_cell(c.b), c.scope, c.metric, str(c.instances), c.column.format(c.value_a),
                        c.column.format(c.value_b), diff,
                        "" if c.p_bootstrap is None else p_bootstrap_text(c) + (MARKER if c.p_bootstrap < alpha else ""),
                        mcnemar,
                        _p_text(c.p_mcnemar_cluster, alpha)])
        return out

    headline = informative(comparisons, headline_only=True)
    rest = [c for c in informative(comparisons) if c not in headline]
    tables = [HtmlTable("Headline metrics", headers, rows(headline), comparisons_note(alpha, cluster), css="pairs")]
    if rest:
        tables.append(HtmlTable(f"Other metrics ({len(rest)} rows)", headers, rows(rest), collapsed=True,
                                css="pairs"))
    return tables


def shaded_table(title: str, matrix: Any, note: str = "", *, percent: bool = False) -> HtmlTable:
    """A matrix (pandas DataFrame) as a folded table whose cells are shaded by value: lighter than a figure."""
    values = matrix.to_numpy(dtype=float) * (100.0 if percent else 1.0)
    top = 100.0 if percent else max(float(values.max()) if values.size else 0.0, 1.0)
    rows: list[list[Any]] = []
    for label, line in zip(matrix.index, values):
        cells: list[Any] = [Markup("<strong>{}</strong>").format(label)]
        for value in line:
            alpha = 0.08 + 0.8 * value / top if value else 0.0
            cells.append(Markup('<span style="display:block;text-align:right;background:rgba(44,94,168,{:.2f});'
                                'color:{}">{:.0f}</span>').format(alpha, "#fff" if alpha > 0.5 else "#1d2330", value))
        rows.append(cells)
    corner = f"{matrix.index.name or 'gold'} \\ {matrix.columns.name or 'predicted'}"
    return HtmlTable(title, [corner, *(str(c) for c in matrix.columns)], rows, note, collapsed=True)


def reproduction_table(items: Sequence[Any], title: str = "Our scores against the paper's", *,
                       collapsed: bool = False) -> HtmlTable:
    """Ours with our interval against the paper's value: whether the published number falls inside it."""
    from rescue.report.reference import HEADERS, reference_note, rows_text

    rows: list[list[Any]] = []
    for item, text in zip(items, rows_text(items)):
        cells: list[Any] = list(text)
        cells[4] = escape(text[4]) + (Markup(' <small class="ci">{}</small>').format(text[5]) if text[5] else Markup(""))
        verdict = {True: ("inside", "correct"), False: ("outside", "wrong"), None: (text[8], "muted")}[item.inside]
        cells[8] = Markup('<span class="{}">{}</span>').format(verdict[1], verdict[0])
        cells[9] = Markup('<span class="note">{}</span>').format(text[9])
        del cells[5]
        rows.append(cells)
    headers = [h for k, h in enumerate(HEADERS) if k != 5]
    return HtmlTable(title, headers, rows, "" if collapsed else reference_note(), collapsed=collapsed, css="wraps")


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
            item = {
                "system": system.label, "task": r.task, "scenario": r.scenario, "sample": r.sample_id,
                "row": r.row_index, "id": r.instance_id, "gold": r.gold, "pred": r.prediction, "raw": r.raw,
                "status": r.status, "error": r.error, "outcome": outcome(r), "scores": r.scores, "judge": None if r.judge is None else r.judge.model_dump(mode="json"),
            }
            if r.reasoning:  # thinking models only: shown collapsed in the drill-down
                item["reasoning"] = r.reasoning
            rows.append(item)
    return rows


PAYLOAD_ENCODING = "gzip+base64"
PAYLOAD_LIMIT = 1 << 30  # a report's instances inflate to megabytes; a bomb stops here


def encode_payload(value: Any) -> str:
    """JSON, gzip-compressed, base64: far fewer bytes (benchmarks/README.md), and nothing in it can close the
    <script>."""
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def decode_payload(text: str) -> Any:
    """The inverse of :func:`encode_payload` (tests and scripts read the report's instances with it)."""
    raw = gunzip_limited(base64.b64decode(text), limit=PAYLOAD_LIMIT, what="the report's instance payload")
    return json.loads(raw.decode("utf-8"))


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
    reproduction: Sequence[HtmlTable] = (),
    failures: Sequence[HtmlTable] = (),
) -> str:
    """report.html: the leaderboard, comparisons, analyses, figures and every instance, in one file."""
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
        reproduction=reproduction,
        failures=failures,
        payload=encode_payload(payload),
        payload_encoding=PAYLOAD_ENCODING,
        tasks=[t for t in TASK_NAMES if any(i["task"] == t for i in instances)],
        scenarios=sorted({i["scenario"] for i in instances}),
    )
