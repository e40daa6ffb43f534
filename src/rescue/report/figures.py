"""matplotlib figures of the report, returned as PNG bytes (written to disk and inlined in the HTML)."""

from __future__ import annotations

import io
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")  # reports are built headless; never open a window

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rescue.report.leaderboard import Leaderboard

DPI = 110


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def heatmap(matrix: pd.DataFrame, title: str, *, percent: bool = False) -> bytes:
    """A labelled heatmap; cell text is the count, or the percentage for row-normalised matrices."""
    values = matrix.to_numpy(dtype=float)
    rows, cols = values.shape
    figure, axes = plt.subplots(figsize=(1.0 + 0.75 * cols, 1.0 + 0.55 * rows))
    image = axes.imshow(values, cmap="Blues", vmin=0, vmax=max(values.max(), 1e-9), aspect="auto")
    axes.set_xticks(range(cols), [str(c) for c in matrix.columns], rotation=45, ha="right", fontsize=8)
    axes.set_yticks(range(rows), [str(i) for i in matrix.index], fontsize=8)
    axes.set_xlabel(str(matrix.columns.name or "next"))
    axes.set_ylabel(str(matrix.index.name or "current"))
    threshold = values.max() / 2 if values.size else 0
    for i in range(rows):
        for j in range(cols):
            value = values[i, j]
            text = f"{value * 100:.0f}" if percent else f"{value:.0f}"
            axes.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if value > threshold else "black")
    axes.set_title(title, fontsize=10)
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
    return _png(figure)


def position_curve(frame: pd.DataFrame, title: str = "Accuracy by dialogue position") -> bytes:
    """Accuracy per position bin with a ±1 standard-error band, one line per system."""
    figure, axes = plt.subplots(figsize=(7.5, 3.8))
    for system, part in frame.groupby("system", sort=False):
        part = part.sort_values("bin")
        accuracy = part["accuracy"].astype(float).to_numpy() * 100
        se = part["se"].astype(float).to_numpy() * 100
        style = {"linewidth": 2.5, "color": "black"} if system == "all systems" else {"linewidth": 1.3}
        line = axes.plot(part["bin"], accuracy, marker="o", label=str(system), **style)[0]
        axes.fill_between(part["bin"], accuracy - se, accuracy + se, alpha=0.15, color=line.get_color())
    bins = sorted(frame["bin"].unique())
    axes.set_xticks(bins, list(frame.drop_duplicates("bin").sort_values("bin")["position"]), rotation=30, fontsize=8)
    axes.set_ylabel("accuracy (%)")
    axes.set_ylim(0, 100)
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=7, loc="best")
    axes.grid(alpha=0.3)
    return _png(figure)


def stacked_shares(frame: pd.DataFrame, title: str) -> bytes:
    """Stacked bars of label shares per position bin (one scenario)."""
    table = frame.pivot_table(index="bin", columns="label", values="share", fill_value=0.0).sort_index()
    positions = frame.drop_duplicates("bin").set_index("bin")["position"].reindex(table.index)
    figure, axes = plt.subplots(figsize=(7.5, 3.8))
    bottom = np.zeros(len(table))
    colours = plt.get_cmap("tab10")
    for k, label in enumerate(table.columns):
        values = table[label].to_numpy() * 100
        axes.bar(range(len(table)), values, bottom=bottom, label=str(label), color=colours(k % 10))
        bottom += values
    axes.set_xticks(range(len(table)), list(positions), rotation=30, fontsize=8)
    axes.set_ylabel("share of gold labels (%)")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    return _png(figure)


def metric_bars(board: Leaderboard, headers: Sequence[str], scope: str = "all") -> bytes:
    """One panel per metric: a bar per system with its bootstrap CI as error bars."""
    columns = [c for c in board.columns if c.id in headers]
    rows = board.scope_rows(scope)
    count = max(len(columns), 1)
    figure, axes_list = plt.subplots(1, count, figsize=(2.6 * count, 3.2), squeeze=False)
    for axes, column in zip(axes_list[0], columns):
        names, values, lows, highs = [], [], [], []
        for row in rows:
            cell = row.cells.get(column.id)
            if cell is None or cell.value is None:
                continue
            value = cell.value * column.scale
            names.append(row.system)
            values.append(value)
            lows.append(value - cell.low * column.scale if cell.low is not None else 0.0)
            highs.append(cell.high * column.scale - value if cell.high is not None else 0.0)
        axes.bar(range(len(values)), values, yerr=[lows, highs], capsize=3, color="#4C72B0")
        axes.set_xticks(range(len(values)), names, rotation=40, ha="right", fontsize=7)
        axes.set_title(column.header, fontsize=9)
        axes.grid(axis="y", alpha=0.3)
    figure.suptitle(f"Pooled scores with {round(board.level * 100)}% bootstrap CIs ({scope})", fontsize=10)
    figure.tight_layout()
    return _png(figure)


def preference_bars(frame: pd.DataFrame, title: str) -> bytes:
    """Bradley-Terry strategy strengths per system (one scenario); 1.0 is no preference."""
    table = frame.pivot_table(index="label", columns="system", values="strength", sort=False)
    figure, axes = plt.subplots(figsize=(7.5, 3.6))
    width = 0.8 / max(len(table.columns), 1)
    for k, system in enumerate(table.columns):
        axes.bar(np.arange(len(table)) + k * width, table[system].fillna(0).to_numpy(), width, label=str(system))
    axes.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    axes.set_xticks(np.arange(len(table)) + width * (len(table.columns) - 1) / 2, list(table.index), rotation=30, fontsize=8)
    axes.set_ylabel("strength (sum = K)")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=7)
    return _png(figure)
