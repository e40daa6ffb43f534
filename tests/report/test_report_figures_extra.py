"""The report without its ``plot`` extra: every table and the page, no figures, and a note naming the extra."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue.cli import app
from rescue.testing.without import run_without

from extras import needs_extra


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plot") / "run"
    done = CliRunner().invoke(app, ["run", "--out", str(out), "--model", "baseline/majority", "--tasks", "itp,rpp",
                                    "--no-bertscore", "--quiet"])
    assert done.exit_code == 0, done.output
    return out


@pytest.mark.slow
def test_without_matplotlib_the_report_has_everything_but_figures(run_dir: Path, tmp_path: Path):
    out = tmp_path / "report"
    done = run_without(("matplotlib",), "report", str(run_dir), "--out", str(out), "--bootstrap", "20", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "figures need the 'plot' extra (missing: matplotlib)" in done.stdout
    assert "pip install 'rescue-bench[plot]'" in done.stdout
    assert "hidden modules loaded: []" in done.stderr  # nothing reached for matplotlib and half-loaded it
    for name in ("leaderboard.md", "leaderboard.csv", "analyses/rpp_accuracy_by_position.csv", "report.html"):
        assert (out / name).is_file(), name
    assert not (out / "figures").exists()
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "No figures in this report" in page and "figures need the &#39;plot&#39; extra" in page


@pytest.mark.slow
def test_figures_required_without_matplotlib_fails_before_any_work(run_dir: Path, tmp_path: Path):
    out = tmp_path / "report"
    done = run_without(("matplotlib",), "report", str(run_dir), "--out", str(out), "--figures", "--quiet")
    assert done.returncode == 2, done.stderr
    assert "--figures: figures need the 'plot' extra" in done.stderr and "--no-figures" in done.stderr
    assert not out.exists()


@pytest.mark.slow
def test_no_figures_draws_none_and_says_nothing_of_the_extra(run_dir: Path, tmp_path: Path):
    out = tmp_path / "report"
    done = CliRunner().invoke(app, ["report", str(run_dir), "--out", str(out), "--bootstrap", "20", "--no-figures",
                                    "--quiet"])
    assert done.exit_code == 0, done.output
    assert not (out / "figures").exists() and (out / "leaderboard.md").is_file()
    assert "plot" not in done.output


@pytest.mark.slow
def test_with_matplotlib_the_figures_are_drawn(tmp_path: Path):
    needs_extra("plot")
    # One task, one figure (in its three formats): drawing is what costs here, and test_report_end_to_end
    # checks the analyses' figures of a full report.
    run = tmp_path / "run"
    done = CliRunner().invoke(app, ["run", "--out", str(run), "--tasks", "itp", "--no-bertscore", "--quiet"])
    assert done.exit_code == 0, done.output
    out = tmp_path / "report"
    done = CliRunner().invoke(app, ["report", str(run), "--out", str(out), "--bootstrap", "20", "--figures",
                                    "--quiet"])
    assert done.exit_code == 0, done.output
    drawn = {p.name for p in (out / "figures").iterdir()}
    assert drawn == {"scores.png"}  # the page's format only, unless more are asked for (issue 34 item 5)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in page and "scores.svg" not in page  # inlined; no link to a file not drawn
    both = tmp_path / "both"
    done = CliRunner().invoke(app, ["report", str(run), "--out", str(both), "--bootstrap", "20", "--figures",
                                    "--figure-formats", "pdf, SVG,pdf", "--quiet"])
    assert done.exit_code == 0, done.output
    assert {p.name for p in (both / "figures").iterdir()} == {"scores.png", "scores.svg", "scores.pdf"}
    assert 'href="figures/scores.svg"' in (both / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("formats", ["jpeg", "png,eps", "svg;pdf"])
def test_an_unknown_figure_format_is_refused_before_any_work(tmp_path: Path, formats: str):
    from _cli import invoke_main

    done = invoke_main(["report", str(tmp_path / "no-run"), "--out", str(tmp_path / "report"),
                        "--figure-formats", formats])
    assert done.exit_code == 2 and "--figure-formats" in done.output and not (tmp_path / "report").exists()


def test_the_report_imports_scipy_and_matplotlib_only_to_use_them():
    """Issue 34 item 5: building the report module loads neither; pyplot is never loaded (figures are drawn
    without it)."""
    import subprocess
    import sys

    code = ("import sys, rescue.report.build, rescue.report.significance; "
            "print(sorted(m for m in ('scipy', 'scipy.stats', 'matplotlib', 'matplotlib.pyplot') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    if importlib.util.find_spec("matplotlib") is not None:
        code = "import sys, rescue.report.figures; print('matplotlib.pyplot' in sys.modules)"
        assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
