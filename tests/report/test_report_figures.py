"""The report's figures: PNG, SVG and PDF of each, and what they show (read from the SVG's text)."""

from __future__ import annotations

import pytest

import pandas as pd
from extras import needs_extra

from rescue.report.html import Rendered



@pytest.fixture(scope="module")
def figures():  # imported by the tests that run, not at collection: matplotlib costs a second of CPU to import
    needs_extra("plot")
    from rescue.report import figures

    return figures


def _svg(rendered: Rendered) -> str:
    assert rendered.png[:8] == b"\x89PNG\r\n\x1a\n" and rendered.pdf[:4] == b"%PDF"
    return rendered.svg.decode("utf-8")


@pytest.mark.slow
def test_position_curve_labels_its_axis_counts_bins_and_lists_only_systems_with_predictions(figures):
    rows = []
    for system, n in (("m", 10), ("no_rpp", 0), ("all systems", 10)):
        for b in range(2):
            rows.append([system, b, f"{b * 10}-{b * 10 + 10}%", n, n // 2, 0.5 if n else None, 0.1 if n else None])
    frame = pd.DataFrame(rows, columns=["system", "bin", "position", "instances", "correct", "accuracy", "se"])
    svg = _svg(figures.position_curve(frame))
    assert "position in the session" in svg and "n=10" in svg
    assert "no_rpp" not in svg and "all systems" in svg


@pytest.mark.slow
def test_heatmap_colour_bar_in_percent_like_its_cells(figures):
    matrix = pd.DataFrame([[0.0, 0.25], [0.75, 0.0]], index=["a", "b"], columns=["a", "b"])
    svg = _svg(figures.heatmap(matrix, "transitions", percent=True))
    assert "% of the row" in svg and ">75<" in svg and ">100<" in svg  # cells and the bar's top tick


@pytest.mark.slow
def test_preference_bars_omit_a_fit_that_did_not_converge(figures):
    frame = pd.DataFrame([("kept", "couple", "x", 2.0, 0.5, 0.1, True), ("kept", "couple", "y", 0.5, 0.5, 0.1, True),
                          ("wild", "couple", "x", 9.0, 1.0, 1.0, False), ("wild", "couple", "y", 0.0, 1.0, 1.0, False)],
                         columns=["system", "scenario", "label", "strength", "bias", "log_spread", "converged"])
    svg = _svg(figures.preference_bars(frame, "SSP preference"))
    assert "wild: did not converge, omitted" in svg and "kept" in svg


@pytest.mark.slow
def test_a_heatmap_says_in_the_figure_why_its_diagonal_is_zero(figures):
    from rescue.report.build import TRANSITION_NOTE

    matrix = pd.DataFrame([[0.0, 1.0], [1.0, 0.0]], index=["a", "b"], columns=["a", "b"])
    svg = _svg(figures.heatmap(matrix, "transitions", percent=True, footnote=TRANSITION_NOTE))
    assert "The diagonal is 0 by construction" in svg


@pytest.mark.slow
def test_preference_bars_of_a_baseline_carry_the_caveat_in_the_figure(figures):
    frame = pd.DataFrame([("baseline/uniform", "couple", "x", 3.0, 0.5, 0.1, True),
                          ("baseline/uniform", "couple", "y", 0.4, 0.5, 0.1, True)],
                         columns=["system", "scenario", "label", "strength", "bias", "log_spread", "converged"])
    svg = _svg(figures.preference_bars(frame, "SSP preference"))
    assert "not a preference" in svg and "uniform draws at random" in svg
    model = frame.assign(system="some/model")
    assert "not a preference" not in _svg(figures.preference_bars(model, "SSP preference"))


@pytest.mark.slow
def test_score_panels_list_only_systems_with_a_value(figures):
    from rescue.report.columns import COLUMNS
    from rescue.report.leaderboard import Cell, Leaderboard, LeaderRow

    itp, stp = next(c for c in COLUMNS if c.task == "itp"), next(c for c in COLUMNS if c.task == "stp")
    rows = [LeaderRow("has-both", "all", cells={itp.id: Cell(0.5), stp.id: Cell(0.4)}),
            LeaderRow("itp-only", "all", cells={itp.id: Cell(0.3)})]
    board = Leaderboard([itp, stp], rows, "has-both", 0.95, 0.05, 100, "group", "", False, "")
    svg = _svg(figures.metric_bars(board, [itp.id, stp.id]))
    assert svg.count(">itp-only<") == 1  # in the ITP panel, not as an empty row of the STP panel
    assert svg.count(">has-both<") == 2


def test_figure_labels_escape_what_no_font_draws_and_shorten_long_ids(figures):
    from matplotlib import font_manager

    drawable = figures._drawable()
    assert figures.label("\ue000x") == "\\ue000x"  # private use: no font has it
    assert figures.label("a\nb\x00") == "a\\nb\\x00"  # control characters never reach the text engine
    cjk = figures.label("模型")
    assert cjk == ("模型" if {ord("模"), ord("型")} <= drawable else "\\u6a21\\u578b")
    long = figures.label("org/" + "m" * 200 + "-v2")
    assert len(long) == figures.LABEL_CHARS and long.startswith("org/m") and long.endswith("m-v2") and "…" in long
    assert figures.label("_x") == "\u200b_x"  # a legend would drop a label starting with "_"
    assert figures._families()[0] == "DejaVu Sans"
    installed = {entry.name for entry in font_manager.fontManager.ttflist}
    assert set(figures._families()) <= installed | {"DejaVu Sans"}  # only installed fallbacks: no lookup warning


@pytest.mark.slow
def test_hostile_labels_draw_without_warnings_and_the_axes_keep_their_size(figures):
    import warnings

    systems = ["模型/日本語-モデル", "\ue000" + "x" * 300, "$\\alpha$", "ok"]
    rows = [[s, b, f"{b * 10}-{b * 10 + 10}%", 10, 5, 0.5, 0.1] for s in systems for b in range(2)]
    frame = pd.DataFrame(rows, columns=["system", "bin", "position", "instances", "correct", "accuracy", "se"])
    matrix = pd.DataFrame([[0.5, 0.5], [0.5, 0.5]], index=systems[:2], columns=systems[:2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph or a collapsed layout fails here
        curve = figures.position_curve(frame)
        square = figures.heatmap(matrix, "t", percent=True)
        # Blank, empty, invisible, control and huge labels, and cells without a value ("nan"), draw too.
        odd = [" ", "", "_lead", "a\tb\nc", "\u200b", "y" * 5000]
        values = [[float("nan") if (i + j) % 4 == 0 else (i * 6 + j) / 35 for j in range(6)] for i in range(6)]
        blanks = figures.heatmap(pd.DataFrame(values, index=odd, columns=odd), " ", percent=True, formats=("png",))
    for rendered in (curve, square, blanks):
        width, height = int.from_bytes(rendered.png[16:20], "big"), int.from_bytes(rendered.png[20:24], "big")
        assert width < 16 * figures.DPI and height < 10 * figures.DPI  # long ids are shortened, not drawn whole
    assert "$\\alpha$" in curve.svg.decode("utf-8")


def _edges_blank(png: bytes) -> bool:
    import io

    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("L"))
    edges = np.concatenate([pixels[:2].ravel(), pixels[-2:].ravel(), pixels[:, :2].ravel(), pixels[:, -2:].ravel()])
    return bool((edges == 255).all())


@pytest.mark.slow
def test_nothing_is_cut_at_a_figures_edge(figures):
    """The figure is sized from what its labels take (each axes' tight bounding box): no tick label, legend,
    title or footnote reaches the image's edge, with long ids, rotated labels, multi-line ticks and a colour bar."""
    from rescue.report.build import TRANSITION_NOTE

    names = ["a-rather-long/model-id-of-forty-characters", "b", "ccccccccccccccccccccccccccccccccccccccccccccc"]
    matrix = pd.DataFrame([[0.2, 0.8, 0.0], [0.5, 0.0, 0.5], [1.0, 0.0, 0.0]], index=names, columns=names)
    rows = [[s, b, f"{b * 10}-{b * 10 + 10}%", 10, 5, 0.5, 0.1] for s in names for b in range(10)]
    curve = pd.DataFrame(rows, columns=["system", "bin", "position", "instances", "correct", "accuracy", "se"])
    shares = pd.DataFrame([(b, f"{b * 10}%", name, 1 / 3) for b in range(10) for name in names],
                          columns=["bin", "position", "label", "share"])
    preference = pd.DataFrame([(s, "couple", name, 2.0, 0.5, 0.1, True) for s in names for name in names],
                              columns=["system", "scenario", "label", "strength", "bias", "log_spread", "converged"])
    drawn = [figures.heatmap(matrix, "t", percent=True, footnote=TRANSITION_NOTE, formats=("png",)),
             figures.position_curve(curve, formats=("png",)), figures.stacked_shares(shares, "s", formats=("png",)),
             figures.preference_bars(preference, "p", formats=("png",))]
    assert all(_edges_blank(rendered.png) for rendered in drawn)


@pytest.mark.slow
def test_preference_bars_without_a_finite_strength_or_a_converged_fit_draw_without_warnings(figures):
    import warnings

    columns = ["system", "scenario", "label", "strength", "bias", "log_spread", "converged"]
    frames = [pd.DataFrame([("m", "couple", "x", float("nan"), 0.0, 0.0, True),
                            ("m", "couple", "y", float("nan"), 0.0, 0.0, True)], columns=columns),
              pd.DataFrame([("wild", "couple", "x", 9.0, 1.0, 1.0, False)], columns=columns)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for frame in frames:
            assert figures.preference_bars(frame, "SSP preference", formats=("png",)).png[:4] == b"\x89PNG"
