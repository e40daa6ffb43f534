"""``rescue report``: a thin wrapper over :func:`rescue.report.build.build_report`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rescue.cli.app import app, console


@app.command("report")
def report(
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR",help="Run directories written by `rescue run --out`.", show_default=False)],
    out: Annotated[Path, typer.Option("--out", help="Folder for the tables, analyses, figures and report.html.")],
    data: Annotated[
        Path | None,
        typer.Option("--data", help="The data the runs evaluated (for positions and transcripts). Default: the "
                     "data named in the first run's results.json (the bundled demo data when none)."),
    ] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", min=0, help="Bootstrap resamples (0: no CIs).")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap draws.")] = 0,
    level: Annotated[float, typer.Option("--level", min=0.5, max=0.999, help="Confidence level of the intervals.")] = 0.95,
    alpha: Annotated[float, typer.Option("--alpha", min=0.0, max=0.5, help="Significance level of the markers.")] = 0.05,
    context_rows: Annotated[int, typer.Option("--context-rows", min=0, help="Rows before an instance shown in the HTML drill-down.")] = 8,
    html: Annotated[bool, typer.Option("--html/--no-html", help="Write report.html.")] = True,
) -> None:
    """Leaderboards (Markdown, LaTeX, CSV) with bootstrap CIs, paired comparisons, the paper's analyses,
    figures and a self-contained HTML report, from one or more run directories."""
    from rescue.report.build import ReportOptions, build_report

    options = ReportOptions(n_resamples=bootstrap, seed=seed, level=level, alpha=alpha, context_rows=context_rows, html=html)
    result = build_report(run_dirs, out, data=data, options=options)
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
    console.print(f"Wrote {len(result.files)} files to {result.out}"
                  + (f"; open {result.out / 'report.html'}" if html else ""), highlight=False)
