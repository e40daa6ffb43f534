"""matplotlib figures of the report: one idea per figure, sized to be read at page width.

matplotlib is the ``plot`` extra; :func:`rescue.report.build.plotting` imports this module only when figures
are drawn, so the report's tables and page work without it.

Each function returns :class:`Rendered` — PNG (inlined in the HTML) and, when asked, SVG and PDF (for papers),
written beside each other under ``figures/``. A report draws the PNG only unless ``--figure-formats`` asks for
more: each format is a full drawing of the figure.

Figures are drawn by matplotlib's own Agg canvas through its public API. A figure is laid out once, by
:func:`_arrange`: every axes is a fixed size in inches and the figure grows around what its labels take (each
axes' tight bounding box), so a long model id widens the figure and never squeezes an axes to nothing. Text
from the data (model ids, labels, scenarios) is shortened and, where no installed font has a character,
escaped (:func:`label`).
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib import font_manager
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.legend import Legend
from matplotlib.patches import Patch
from matplotlib.text import Text
from PIL import Image

from rescue.report.html import FIGURE_FORMATS as FORMATS
from rescue.report.html import Rendered
from rescue.report.leaderboard import Leaderboard

# The page shows a figure at most 1,000 px wide (report.html's CSS): the figures, 8 to 10 inches wide, are that
# wide at 100 dpi (each pixel drawn and compressed is CPU). Papers take the SVG or PDF.
DPI = 100
# Families tried, in order, for characters DejaVu Sans lacks (CJK model ids, labels in other scripts); only the
# installed ones are used, so a machine without them gets no "font not found" warning, and escapes instead.
FALLBACK_FAMILIES = ("Noto Sans CJK JP", "Noto Sans CJK SC", "Source Han Sans", "WenQuanYi Zen Hei",
                     "WenQuanYi Micro Hei", "Droid Sans Fallback", "Hiragino Sans", "PingFang SC", "Microsoft YaHei",
                     "Yu Gothic", "Malgun Gothic", "Arial Unicode MS")
LABEL_CHARS = 40  # a model id or label longer than this is shown as its start, "…" and its end
PAD = 0.1  # inches around the figure's content
GAP = 0.35  # inches between two panels' decorations
NOTE_WIDTH = 6.5  # inches a footnote's line may take, widening a narrow figure

@lru_cache(maxsize=1)
def _families() -> tuple[str, ...]:
    installed = {entry.name for entry in font_manager.fontManager.ttflist}
    return ("DejaVu Sans", *(name for name in FALLBACK_FAMILIES if name in installed))


matplotlib.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 9,
                     "xtick.labelsize": 9, "ytick.labelsize": 9, "svg.hashsalt": "rescue", "pdf.compression": 6,
                     "svg.fonttype": "none",  # real text in the SVG: editable in a paper, searchable
                     # Model ids and labels are text, never markup: "$\\textbf{x}$" must not reach mathtext.
                     "text.parse_math": False, "text.usetex": False, "font.family": list(_families()),
                     # The title at a fixed height above its axes (what matplotlib picks when no x tick labels are
                     # on top, as here): placed automatically, every tick label of the axes is laid out again at
                     # each draw.
                     "axes.titley": 1.0})


@lru_cache(maxsize=1)
def _drawable() -> frozenset[int]:
    """Every character some font of :func:`_families` has (read once, on the first label that is not ASCII)."""
    chars: set[int] = set()
    for family in _families():
        path = font_manager.findfont(FontProperties(family=family), fallback_to_default=False)
        chars.update(font_manager.get_font(path).get_charmap())
    return frozenset(chars)


def _char(ch: str) -> str:
    if " " <= ch <= "~":
        return ch
    if ch.isprintable() and ord(ch) in _drawable():
        return ch
    return ch.encode("unicode_escape").decode("ascii")  # readable and distinct: "\u6a21", "\x00"


def label(value: object, limit: int = LABEL_CHARS) -> str:
    """Text from the data (a model id, a label, a scenario) as a figure shows it: each character no installed
    font can draw, or that is not printable, as its escape; past ``limit`` characters, the start and the end
    joined by "…" (the full text is in the report's tables and files.csv)."""
    text = "".join(_char(ch) for ch in str(value))
    if len(text) > limit:
        tail = limit // 3
        text = text[: limit - tail - 1] + "…" + text[-tail:]
    # matplotlib leaves a legend label starting with "_" out of the legend; a model id may well start with one.
    return "\u200b" + text if text.startswith("_") else text


@dataclass
class _Layout:
    """The panels of a figure on a grid: each axes a fixed size in inches, the figure grown around them."""

    figure: Figure
    canvas: FigureCanvasAgg
    widths: list[float]  # inches of each column's axes
    heights: list[float]  # inches of each row's axes
    cells: list[tuple[Axes, int, int]]  # each axes with its row and column
    gaps: list[float] | None = None  # inches before each column after the first (default GAP)

    def add(self, row: int, col: int) -> Axes:
        """A new axes in that cell."""
        axes = self.figure.add_axes((0.0, 0.0, 0.1, 0.1))
        self.cells.append((axes, row, col))
        return axes


def _layout(widths: Sequence[float], heights: Sequence[float], gaps: Sequence[float] | None = None) -> _Layout:
    figure = Figure(figsize=(sum(widths) + 3.0 * len(widths) + 2.0, sum(heights) + len(heights) + 2.0), dpi=DPI)
    return _Layout(figure, FigureCanvasAgg(figure), list(widths), list(heights), [], list(gaps) if gaps else None)


def _margins(layout: _Layout) -> tuple[list[float], list[float], list[float], list[float]]:
    """Inches each column needs left and right of its axes, and each row above and below (tick labels, axis
    labels, titles, outside legends): what reaches out of each axes' box in its tight bounding box, measured
    once with the axes at their final size."""
    figure = layout.figure
    width, height = figure.get_size_inches()
    for axes, row, col in layout.cells:  # provisional places, each axes at its final size
        x = PAD + sum(layout.widths[:col]) + 3.0 * col
        y = PAD + sum(layout.heights[: row + 1]) + 1.0 * row  # from the top to the axes' bottom
        axes.set_position((x / width, 1.0 - y / height, layout.widths[col] / width, layout.heights[row] / height))
    renderer = layout.canvas.get_renderer()  # type: ignore[no-untyped-call]  # backend_agg ships no annotations
    left, right = [0.0] * len(layout.widths), [0.0] * len(layout.widths)
    top, bottom = [0.0] * len(layout.heights), [0.0] * len(layout.heights)
    for axes, row, col in layout.cells:
        box, tight = axes.get_window_extent(renderer), axes.get_tightbbox(renderer)
        if tight is None:
            continue
        left[col] = max(left[col], (box.x0 - tight.x0) / renderer.dpi)
        right[col] = max(right[col], (tight.x1 - box.x1) / renderer.dpi)
        top[row] = max(top[row], (tight.y1 - box.y1) / renderer.dpi)
        bottom[row] = max(bottom[row], (box.y0 - tight.y0) / renderer.dpi)
    return left, right, top, bottom


def _text_size(text: Text | Legend, renderer: RendererAgg) -> tuple[float, float]:
    box = text.get_window_extent(renderer)
    return box.width / renderer.dpi, box.height / renderer.dpi


def _arrange(layout: _Layout, title: str = "", footnote: str = "") -> None:
    """Places every axes of ``layout`` and sizes the figure to hold them, their labels and legends, a title
    above all and a footnote below (wrapped to the figure's width): the axes keep their size whatever the labels
    measure, so no layout can collapse them."""
    figure = layout.figure
    left, right, top, bottom = _margins(layout)
    gaps = layout.gaps or [GAP] * len(layout.widths)
    xs, x = [], PAD
    for col, w in enumerate(layout.widths):
        x += (gaps[col - 1] if col else 0.0) + left[col]
        xs.append(x)
        x += w + right[col]
    width = x + PAD
    renderer = layout.canvas.get_renderer()  # type: ignore[no-untyped-call]  # backend_agg ships no annotations
    heading = figure.text(0.5, 1.0, title, ha="center", va="top", fontsize=12) if title else None
    title_w, title_h = _text_size(heading, renderer) if heading else (0.0, 0.0)
    width = max(width, title_w + 2 * PAD)
    note, note_h = None, 0.0
    if footnote:
        note = figure.text(0.0, 0.0, footnote, ha="left", va="bottom", fontsize=8, color="#444444")
        line_w, _ = _text_size(note, renderer)
        width = max(width, min(line_w, NOTE_WIDTH) + 2 * PAD)  # a narrow figure's note in a few long lines
        per_line = max(20, int(len(footnote) * (width - 2 * PAD) / max(line_w, 1e-6)))
        note.set_text(textwrap.fill(footnote, per_line))
        note_h = _text_size(note, renderer)[1] + 0.1
    ys, y = [], PAD + title_h + (0.08 if heading else 0.0)
    for row, h in enumerate(layout.heights):
        y += (GAP if row else 0.0) + top[row]
        ys.append(y)
        y += h + bottom[row]
    height = y + note_h + PAD
    figure.set_size_inches(width, height)
    for axes, row, col in layout.cells:
        axes.set_position((xs[col] / width, 1.0 - (ys[row] + layout.heights[row]) / height,
                           layout.widths[col] / width, layout.heights[row] / height))
    if heading is not None:
        heading.set_position((0.5, 1.0 - PAD / height))
    if note is not None:
        note.set_position((PAD / width, PAD / height))


def _render(layout: _Layout, formats: Sequence[str] = FORMATS) -> Rendered:
    """The figure as PNG and each other of ``formats`` (SVG, PDF), each drawn once."""
    out = {}
    layout.canvas.draw()  # type: ignore[no-untyped-call]
    # RGB (the figure is opaque: an alpha channel is a quarter more bytes to compress and store) at zlib level
    # 3 (benchmarks/README.md: the size of level 6 for less CPU).
    width, height = layout.canvas.get_width_height(physical=True)
    rgba = Image.frombuffer("RGBA", (int(width), int(height)), layout.canvas.buffer_rgba(),  # type: ignore[no-untyped-call]
                            "raw", "RGBA", 0, 1)
    png = io.BytesIO()
    rgba.convert("RGB").save(png, format="png", compress_level=3, dpi=(DPI, DPI))
    out["png"] = png.getvalue()
    for fmt in dict.fromkeys(formats):
        if fmt == "png":
            continue
        buffer = io.BytesIO()
        # Fixed metadata: the same report twice gives the same files.
        metadata = {"Date": None} if fmt == "svg" else {"CreationDate": None, "ModDate": None}
        layout.figure.savefig(buffer, format=fmt, metadata=metadata)
        out[fmt] = buffer.getvalue()
    return Rendered(out["png"], out.get("svg"), out.get("pdf"))


def heatmap(matrix: pd.DataFrame, title: str, *, percent: bool = False, footnote: str = "",
            formats: Sequence[str] = FORMATS) -> Rendered:
    """A labelled heatmap; cell text is the count, or the percentage for row-normalised matrices, and the
    colour bar is in the same unit as the cells. ``footnote`` is printed under it, inside the image (a figure
    copied into a paper or a slide keeps what it needs to be read)."""
    values = matrix.to_numpy(dtype=float) * (100.0 if percent else 1.0)
    rows, cols = values.shape
    layout = _layout([max(3.0, 0.7 * cols), 0.2], [max(2.0, 0.55 * rows)], gaps=[0.15])
    axes, bar_axes = layout.add(0, 0), layout.add(0, 1)
    top = 100.0 if percent else max(values.max() if values.size else 0.0, 1e-9)
    image = axes.imshow(values, cmap="Blues", vmin=0, vmax=top, aspect="auto")
    axes.set_xticks(range(cols), [label(c) for c in matrix.columns], rotation=35, ha="right")
    axes.set_yticks(range(rows), [label(i) for i in matrix.index])
    axes.set_xlabel(label(matrix.columns.name or "next"))
    axes.set_ylabel(label(matrix.index.name or "current"))
    threshold = top / 2
    for i in range(rows):
        for j in range(cols):
            axes.text(j, i, f"{values[i, j]:.0f}", ha="center", va="center", fontsize=9,
                      color="white" if values[i, j] > threshold else "black")
    axes.set_title(title)
    bar = layout.figure.colorbar(image, cax=bar_axes)
    bar.set_label("% of the row" if percent else "instances")
    _arrange(layout, footnote=footnote)
    return _render(layout, formats)


def position_curve(frame: pd.DataFrame, title: str = "Accuracy by dialogue position", *,
                   formats: Sequence[str] = FORMATS) -> Rendered:
    """Accuracy per position bin with a ±1 standard-error band, one line per system that has predictions for the task;
    each tick says how many instances fall in its bin."""
    frame = frame[frame.groupby("system")["instances"].transform("sum") > 0]
    layout = _layout([6.2], [3.0])
    axes = layout.add(0, 0)
    for system, part in frame.groupby("system", sort=False):
        part = part.sort_values("bin")
        accuracy = part["accuracy"].astype(float).to_numpy() * 100
        se = part["se"].astype(float).to_numpy() * 100
        style = {"linewidth": 2.5, "color": "black"} if system == "all systems" else {"linewidth": 1.4}
        line = axes.plot(part["bin"], accuracy, marker="o", label=label(system), **style)[0]
        axes.fill_between(part["bin"], accuracy - se, accuracy + se, alpha=0.15, color=line.get_color())
    per_bin = frame.drop_duplicates("bin").sort_values("bin")
    # Instances per bin: every system is scored on the same instances, so one system's count is the bin's.
    counts = frame[frame["system"] != "all systems"].groupby("bin")["instances"].max()
    labels = [f"{p}\nn={int(counts.get(b, 0))}" for b, p in zip(per_bin["bin"], per_bin["position"])]
    axes.set_xticks(list(per_bin["bin"]), labels, fontsize=8)
    axes.set_xlabel("position in the session (row index, normalised; n = instances per bin)")
    axes.set_ylabel("accuracy (%)")
    axes.set_ylim(0, 100)
    axes.set_title(label(title, 120))
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    axes.grid(alpha=0.3)
    _arrange(layout)
    return _render(layout, formats)


def _bars(axes: Axes, lefts: Any, width: float, bottoms: Any, heights: Any, colour: Any, name: str) -> None:
    """One series of bars as one collection of rectangles: what ``bar()`` draws, with one artist to make and
    draw instead of one per bar."""
    boxes = [[(x, y), (x + width, y), (x + width, y + h), (x, y + h)] for x, y, h in zip(lefts, bottoms, heights)]
    axes.add_collection(PolyCollection(boxes, facecolors=[colour], edgecolors="none", linewidths=0, label=name))


def _bar_limits(axes: Axes, lefts: Any, width: float, top: float) -> None:
    """The limits ``bar()`` would give: the bars' span with a 5% margin each side, and 0 to the top plus 5%."""
    low, high = float(np.min(lefts)) if len(lefts) else 0.0, float(np.max(lefts)) + width if len(lefts) else 1.0
    axes.set_xlim(low - 0.05 * (high - low), high + 0.05 * (high - low))
    axes.set_ylim(0, max(top, 1e-9) * 1.05)


def stacked_shares(frame: pd.DataFrame, title: str, *, formats: Sequence[str] = FORMATS) -> Rendered:
    """Stacked bars of label shares per position bin (one scenario)."""
    table = frame.pivot_table(index="bin", columns="label", values="share", fill_value=0.0).sort_index()
    positions = frame.drop_duplicates("bin").set_index("bin")["position"].reindex(table.index)
    layout = _layout([6.2], [3.0])
    axes = layout.add(0, 0)
    bottom = np.zeros(len(table))
    colours = matplotlib.colormaps["tab10"]
    lefts = np.arange(len(table), dtype=float) - 0.4
    for k, name in enumerate(table.columns):
        values = table[name].to_numpy() * 100
        _bars(axes, lefts, 0.8, bottom, values, colours(k % 10), label(name))
        bottom += values
    _bar_limits(axes, lefts, 0.8, float(bottom.max()) if len(bottom) else 0.0)
    axes.set_xticks(range(len(table)), [label(p) for p in positions], rotation=30)
    axes.set_xlabel("position in the session (row index, normalised)")
    axes.set_ylabel("share of gold labels (%)")
    axes.set_title(label(title, 120))
    axes.legend(bbox_to_anchor=(1.01, 1), loc="upper left")
    _arrange(layout)
    return _render(layout, formats)


def _score_panel(axes: Axes, board: Leaderboard, column: Any, rows: Sequence[Any]) -> None:
    # Only the systems with a value here: a baseline without this task (persist has no STP) gets no empty row.
    shown = [r for r in rows if (c := r.cells.get(column.id)) is not None and c.value is not None
             and not c.all_failed]
    cells = [row.cells[column.id] for row in shown]
    values = np.array([cell.value * column.scale for cell in cells], dtype=float)
    axes.barh(range(len(shown)), values, color="#4C72B0")
    with_ci = [k for k, cell in enumerate(cells) if cell.low is not None and cell.high is not None]
    if with_ci:
        low = np.array([cells[k].low for k in with_ci], dtype=float) * column.scale
        high = np.array([cells[k].high for k in with_ci], dtype=float) * column.scale
        axes.errorbar(values[with_ci], with_ci, xerr=[values[with_ci] - low, high - values[with_ci]], fmt="none",
                      ecolor="black", capsize=3)
    axes.set_yticks(range(len(shown)), [label(r.system) for r in shown])
    axes.invert_yaxis()
    axes.set_title(column.header + (" (%)" if column.scale == 100 else ""))
    axes.grid(axis="x", alpha=0.3)
    if column.scale == 100:
        axes.set_xlim(0, 100)


def metric_bars(board: Leaderboard, headers: Sequence[str], scope: str = "all", title: str = "", *,
                formats: Sequence[str] = FORMATS) -> Rendered:
    """One panel per metric (two per row): a horizontal bar per system with its bootstrap CI (published
    reference rows are left to the report's reproduction section)."""
    columns = [c for c in board.columns if c.id in headers]
    rows = [r for r in board.scope_rows(scope) if not r.published]
    ncols = 2 if len(columns) > 1 else 1
    nrows = max((len(columns) + ncols - 1) // ncols, 1)
    layout = _layout([3.4] * ncols, [max(1.0, 0.42 * len(rows))] * nrows)
    for k, column in enumerate(columns):
        _score_panel(layout.add(k // ncols, k % ncols), board, column, rows)
    _arrange(layout, title=title or f"Scores with {round(board.level * 100)}% bootstrap CIs ({label(scope)})")
    return _render(layout, formats)


BASELINE_CAVEAT = ("baseline/*: not models. Their bars show the baseline's rule (uniform draws at random, majority "
                   "always answers one label) and sampling noise on few instances, not a preference.")


def preference_bars(frame: pd.DataFrame, title: str, *, formats: Sequence[str] = FORMATS) -> Rendered:
    """Bradley-Terry strategy strengths per system (one scenario); 1.0 is no preference. A fit that did not
    converge is no estimate: it is left out and named in the legend."""
    converged = frame.groupby("system", sort=False)["converged"].all()
    kept = frame[frame["system"].map(converged)]
    table = kept.pivot_table(index="label", columns="system", values="strength", sort=False)
    layout = _layout([6.2], [3.0])
    axes = layout.add(0, 0)
    width = 0.8 / max(len(table.columns), 1)
    centres = np.arange(len(table), dtype=float)
    for k, system in enumerate(table.columns):
        _bars(axes, centres + (k - 0.5) * width, width, np.zeros(len(table)), table[system].fillna(0).to_numpy(),
              f"C{k % 10}", label(system))
    strengths = table.to_numpy(dtype=float)
    top = float(np.nanmax(strengths)) if np.isfinite(strengths).any() else 0.0
    _bar_limits(axes, centres - 0.5 * width, width * max(len(table.columns), 1), max(top, 1.0))
    axes.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    handles, labels = axes.get_legend_handles_labels()
    for system in converged[~converged].index:
        handles.append(Patch(facecolor="white", edgecolor="grey", hatch="//"))
        labels.append(f"{label(system)}: did not converge, omitted")
    axes.set_xticks(np.arange(len(table)) + width * (len(table.columns) - 1) / 2, [label(i) for i in table.index],
                    rotation=30, ha="right")
    axes.set_xlabel("predicted strategy (top-1) when the gold was another one")
    axes.set_ylabel("Bradley–Terry strength (1 = none)")
    axes.set_title(label(title, 120))
    axes.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1))
    baseline = any(str(system).startswith("baseline/") for system in table.columns)
    _arrange(layout, footnote=BASELINE_CAVEAT if baseline else "")
    return _render(layout, formats)


@dataclass(frozen=True)
class Plots:
    """The figures of one report, each drawn as PNG and the other ``formats`` the report asked for."""

    formats: tuple[str, ...] = ("png",)

    def heatmap(self, *args: Any, **kwargs: Any) -> Rendered:
        """:func:`heatmap` in this report's formats."""
        return heatmap(*args, formats=self.formats, **kwargs)

    def position_curve(self, *args: Any, **kwargs: Any) -> Rendered:
        """:func:`position_curve` in this report's formats."""
        return position_curve(*args, formats=self.formats, **kwargs)

    def stacked_shares(self, *args: Any, **kwargs: Any) -> Rendered:
        """:func:`stacked_shares` in this report's formats."""
        return stacked_shares(*args, formats=self.formats, **kwargs)

    def metric_bars(self, *args: Any, **kwargs: Any) -> Rendered:
        """:func:`metric_bars` in this report's formats."""
        return metric_bars(*args, formats=self.formats, **kwargs)

    def preference_bars(self, *args: Any, **kwargs: Any) -> Rendered:
        """:func:`preference_bars` in this report's formats."""
        return preference_bars(*args, formats=self.formats, **kwargs)
