"""A report that fits (issue #28 item 3): the leaderboard and reproduction tables of report.html fit the page's
~1,400 px column at 1,440 px, measured in Debian's Chromium; the Markdown has no HTML escapes; p-values at the
bootstrap's floor say so; leaderboard.tex compiles within a page with a LaTeX engine from Debian."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue.cli import app

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
SYSTEMS = ("baseline/majority", "baseline/uniform", "baseline/nearest")


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory) -> Path:
    """Three baselines on all six tasks, BERTScore included: every leaderboard column but the judge's."""
    root = tmp_path_factory.mktemp("fit")
    runs = []
    for model in SYSTEMS:
        out = root / model.replace("/", "_")
        result = CliRunner().invoke(app, ["run", "--out", str(out), "--model", model, "--quiet"])
        assert result.exit_code == 0, result.output
        runs.append(str(out))
    report = root / "report"
    result = CliRunner().invoke(app, ["report", *runs, "--out", str(report), "--bootstrap", "200",
                                      "--reference", "paper"])  # the reproduction table, caveat column and all
    assert result.exit_code == 0, result.output
    return report


def _widths(report: Path, viewport: int) -> list[dict]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not installed (scripts/test.sh installs Debian's chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": viewport, "height": 1000})
            page.goto((report / "report.html").as_uri())
            return page.evaluate("""() => [...document.querySelectorAll('table.board, table.wraps')].map(t => ({
                css: t.className, table: Math.ceil(t.getBoundingClientRect().width),
                column: t.parentElement.clientWidth}))""")
        finally:
            browser.close()


@pytest.mark.slow
@pytest.mark.browser
def test_the_leaderboard_fits_a_1440_px_window(report_dir):
    widths = _widths(report_dir, 1440)
    boards = [w for w in widths if w["css"] == "board"]
    assert boards and any(w["css"] == "wraps" for w in widths), widths
    for width in widths:
        assert width["table"] <= width["column"] <= 1400, width  # no horizontal scroll
    print("leaderboard widths at 1440 px:", [w["table"] for w in boards], "column", boards[0]["column"])
    page = (report_dir / "report.html").read_text(encoding="utf-8")
    if 'href="figures/' in page:  # the SVG/PDF links need the folder: the page says so
        assert "share the whole report folder" in page


@pytest.mark.slow
def test_markdown_has_no_html_escapes_and_tex_compiles_within_a_page(report_dir, tmp_path):
    markdown = (report_dir / "leaderboard.md").read_text(encoding="utf-8")
    assert "&lt;" not in markdown and "&gt;" not in markdown and "&amp;" not in markdown
    assert "p < 0.05" in markdown
    engine = shutil.which("pdflatex")
    if engine is None:
        pytest.skip("pdflatex not installed (scripts/test.sh installs Debian's texlive-latex-base)")
    table = (report_dir / "leaderboard.tex").read_text(encoding="utf-8")
    document = tmp_path / "board.tex"
    # A two-column paper page (the ACL/IEEE shape): table* spans both columns, and must fit the text width.
    document.write_text("\\documentclass[twocolumn]{article}\n\\usepackage[utf8]{inputenc}\n\\usepackage{booktabs}\n"
                        "\\usepackage{graphicx}\n\\usepackage{amssymb}\n\\begin{document}\n" + table +
                        "\\end{document}\n", encoding="utf-8")
    done = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", document.name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    log = (tmp_path / "board.log").read_text(encoding="utf-8", errors="replace")
    assert "Overfull \\hbox" not in log, log[-3000:]
    assert (tmp_path / "board.pdf").is_file()
