"""matplotlib figures of the report: one idea per figure, sized to be read at page width.

matplotlib is the ``plot`` extra; :func:`rescue.report.build.plotting` imports this module only when figures
are drawn, so the report's tables and page work without it.

Each function returns :class:`Rendered` — PNG (150 dpi, inlined in the HTML) and, when asked, SVG and PDF (for
papers), written beside each other under ``figures/``. A report draws the PNG only unless ``--figure-formats``
asks for more: each format is a full drawing of the figure (SVG and PDF cost more than the PNG).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from rescue.report.html import FIGURE_FORMATS as FORMATS
from rescue.report.html import Rendered
from rescue.report.leaderboard import Leaderboard

DPI = 150
matplotlib.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 9,
                     "xtick.labelsize": 9, "ytick.labelsize": 9, "svg.hashsalt": "rescue", "pdf.compression": 6,
                     "svg.fonttype": "none",  # real text in the SVG: editable in a paper, searchable
                     # Model ids and labels are text, never markup: "$\\textbf{x}$" must not reach mathtext.
                     "text.parse_math": False, "text.usetex": False})


def _subplots(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float], squeeze: bool = True,
              layout: Literal["constrained"] = "constrained") -> tuple[Figure, Any]:
    """A figure and its axes, made without pyplot: no backend, no window, no figure registry to close it from,
    and pyplot's import (about a third of a second) is not paid."""
    figure = Figure(figsize=figsize, layout=layout)
    return figure, figure.subplots(nrows, ncols, squeeze=squeeze)


def _legend_label(name: object) -> str:
    # matplotlib leaves a label starting with "_" out of the legend; a model id may well start with one.
    text = str(name)
    return "\u200b" + text if text.startswith("_") else text


def _render(figure: Figure, formats: Sequence[str] = FORMATS) -> Rendered:
    """The figure as PNG and each other of ``formats`` (SVG, PDF); made without pyplot, it is freed with its
    last reference."""
    # Figures are made with the constrained layout: "tight" bounding boxes would draw each one twice per format.
    out = {}
    for fmt in dict.fromkeys(["png", *formats]):
        buffer = io.BytesIO()
        # Fixed metadata: the same report twice gives the same files.
        metadata = {"Date": None} if fmt in ("svg", "pdf") else {}
        if fmt == "pdf":
            metadata = {"CreationDate": None, "ModDate": None}
        figure.savefig(buffer, format=fmt, dpi=DPI, metadata=metadata or None)
        out[fmt] = buffer.getvalue()
    return Rendered(out["png"], out.get("svg"), out.get("pdf"))


def heatmap(matrix: pd.DataFrame, title: str, *, percent: bool = False, footnote: str = "",
            formats: Sequence[str] = FORMATS) -> Rendered:
    """A labelled heatmap; cell text is the count, or the percentage for row-normalised matrices, and the
    colour bar is in the same unit as the cells. ``footnote`` is printed under it, inside the image (a figure
    copied into a paper or a slide keeps what it needs to be read)."""
    values = matrix.to_numpy(dtype=float) * (100.0 if percent else 1.0)
    rows, cols = values.shape
    figure, axes = _subplots(figsize=(max(6.0, 1.6 + 0.9 * cols), max(3.5, 1.4 + 0.6 * rows)), layout="constrained")
    top = 100.0 if percent else max(values.max() if values.size else 0.0, 1e-9)
    image = axes.imshow(values, cmap="Blues", vmin=0, vmax=top, aspect="auto")
    axes.set_xticks(range(cols), [str(c) for c in matrix.columns], rotation=35, ha="right")
    axes.set_yticks(range(rows), [str(i) for i in matrix.index])
    axes.set_xlabel(str(matrix.columns.name or "next"))
    axes.set_ylabel(str(matrix.index.name or "current"))
    threshold = top / 2
    for i in range(rows):
        for j in range(cols):
            value = values[i, j]
            axes.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=9,
                      color="white" if value > threshold else "black")
    axes.set_title(title)
    bar = figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
    bar.set_label("% of the row" if percent else "instances")
    if footnote:
        figure.text(0.01, 0.0, footnote, ha="left", va="top", fontsize=8, color="#444444", wrap=True)
    return _render(figure, formats)


def position_curve(frame: pd.DataFrame, title: str = "Accuracy by dialogue position", *,
                   formats: Sequence[str] = FORMATS) -> Rendered:
    """Accuracy per position bin with a ±1 standard-error band, one line per system that has predictions for the task;
    each tick says how many instances fall in its bin."""
    frame = frame[frame.groupby("system")["instances"].transform("sum") > 0]
    figure, axes = _subplots(figsize=(9.0, 4.2), layout="constrained")
    for system, part in frame.groupby("system", sort=False):
        part = part.sort_values("bin")
        accuracy = part["accuracy"].astype(float).to_numpy() * 100
        se = part["se"].astype(float).to_numpy() * 100
        style = {"linewidth": 2.5, "color": "black"} if system == "all systems" else {"linewidth": 1.4}
        line = axes.plot(part["bin"], accuracy, marker="o", label=_legend_label(system), **style)[0]
        axes.fill_between(part["bin"], accuracy - se, accuracy + se, alpha=0.15, color=line.get_color())
    per_bin = frame.drop_duplicates("bin").sort_values("bin")
    # Instances per bin: every system is scored on the same instances, so one system's count is the bin's.
    counts = frame[frame["system"] != "all systems"].groupby("bin")["instances"].max()
    labels = [f"{p}\nn={int(counts.get(b, 0))}" for b, p in zip(per_bin["bin"], per_bin["position"])]
    axes.set_xticks(list(per_bin["bin"]), labels, fontsize=8)
    axes.set_xlabel("position in the session (row index, normalised; n = instances per bin)")
    axes.set_ylabel("accuracy (%)")
    axes.set_ylim(0, 100)
    axes.set_title(title)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    axes.grid(alpha=0.3)
    return _render(figure, formats)


def stacked_shares(frame: pd.DataFrame, title: str, *, formats: Sequence[str] = FORMATS) -> Rendered:
    """Stacked bars of label shares per position bin (one scenario)."""
    table = frame.pivot_table(index="bin", columns="label", values="share", fill_value=0.0).sort_index()
    positions = frame.drop_duplicates("bin").set_index("bin")["position"].reindex(table.index)
    figure, axes = _subplots(figsize=(9.0, 4.2), layout="constrained")
    bottom = np.zeros(len(table))
    colours = matplotlib.colormaps["tab10"]
    for k, label in enumerate(table.columns):
        values = table[label].to_numpy() * 100
        axes.bar(range(len(table)), values, bottom=bottom, label=_legend_label(label), color=colours(k % 10))
        bottom += values
    axes.set_xticks(range(len(table)), list(positions), rotation=30)
    axes.set_xlabel("position in the session (row index, normalised)")
    axes.set_ylabel("share of gold labels (%)")
    axes.set_title(title)
    axes.legend(bbox_to_anchor=(1.01, 1), loc="upper left")
    return _render(figure, formats)


def metric_bars(board: Leaderboard, headers: Sequence[str], scope: str = "all", title: str = "", *,
                formats: Sequence[str] = FORMATS) -> Rendered:
    """One panel per metric (two per row): a horizontal bar per system with its bootstrap CI (published
    reference rows are left to the report's reproduction section)."""
    columns = [c for c in board.columns if c.id in headers]
    rows = [r for r in board.scope_rows(scope) if not r.published]
    count = max(len(columns), 1)
    ncols = 2 if count > 1 else 1
    nrows = (count + ncols - 1) // ncols
    height = max(2.2, 0.8 + 0.32 * len(rows))
    figure, axes_grid = _subplots(nrows, ncols, figsize=(10.0, height * nrows), squeeze=False, layout="constrained")
    for k, axes in enumerate(axes_grid.flat):
        if k >= len(columns):
            axes.set_visible(False)
            continue
        column = columns[k]
        # Only the systems with a value here: a baseline without this task (persist has no STP) gets no empty row.
        shown = [r for r in rows if (c := r.cells.get(column.id)) is not None and c.value is not None
                 and not c.all_failed]
        for y, row in enumerate(shown):
            cell = row.cells[column.id]
            value = cell.value * column.scale  # type: ignore[operator]
            error = None
            if cell.low is not None and cell.high is not None:
                error = [[value - cell.low * column.scale], [cell.high * column.scale - value]]
            axes.barh(y, value, xerr=error, capsize=3, color="#4C72B0")
        axes.set_yticks(range(len(shown)), [r.system for r in shown])
        axes.invert_yaxis()
        axes.set_title(column.header + (" (%)" if column.scale == 100 else ""))
        axes.grid(axis="x", alpha=0.3)
        if column.scale == 100:
            axes.set_xlim(0, 100)
    figure.suptitle(title or f"Scores with {round(board.level * 100)}% bootstrap CIs ({scope})")
    return _render(figure, formats)


BASELINE_CAVEAT = ("baseline/*: not models. Their bars show the baseline's rule (uniform draws at random, majority "
                   "always answers one label) and sampling noise on few instances, not a preference.")


def preference_bars(frame: pd.DataFrame, title: str, *, formats: Sequence[str] = FORMATS) -> Rendered:
    """Bradley-Terry strategy strengths per system (one scenario); 1.0 is no preference. A fit that did not
    converge is no estimate: it is left out and named in the legend."""
    converged = frame.groupby("system", sort=False)["converged"].all()
    kept = frame[frame["system"].map(converged)]
    table = kept.pivot_table(index="label", columns="system", values="strength", sort=False)
    figure, axes = _subplots(figsize=(9.0, 4.2), layout="constrained")
    width = 0.8 / max(len(table.columns), 1)
    for k, system in enumerate(table.columns):
        axes.bar(np.arange(len(table)) + k * width, table[system].fillna(0).to_numpy(), width, label=_legend_label(system))
    axes.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    handles, labels = axes.get_legend_handles_labels()
    for system in converged[~converged].index:
        handles.append(Patch(facecolor="white", edgecolor="grey", hatch="//"))
        labels.append(f"{system}: did not converge, omitted")
    axes.set_xticks(np.arange(len(table)) + width * (len(table.columns) - 1) / 2, list(table.index), rotation=30,
                    ha="right")
    axes.set_xlabel("predicted strategy (top-1) when the gold was another one")
    axes.set_ylabel("Bradley–Terry strength (1 = none)")
    axes.set_title(title)
    axes.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1))
    if any(str(system).startswith("baseline/") for system in table.columns):
        figure.text(0.01, 0.0, BASELINE_CAVEAT, ha="left", va="top", fontsize=8, color="#444444", wrap=True)
    return _render(figure, formats)


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
