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
