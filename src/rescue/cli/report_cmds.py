"""``rescue report``: a thin wrapper over :func:`rescue.report.build.build_report`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rescue.cli.app import app, console, err_console


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
    cluster: Annotated[str, typer.Option(
        "--cluster", help="The bootstrap's resampling unit: group (the session group, the sample id's folder: "
        "one couple or family; clips of one group are not independent) or sample (each clip).")] = "group",
    allow_mixed: Annotated[bool, typer.Option(
        "--allow-mixed", help="Show runs that differ in data, task options, judge, BERTScore backbone, gold or "
        "instance set side by side (cells with their instance counts, marked where the set differs) instead "
        "of refusing.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Leaderboards (Markdown, LaTeX, CSV) with bootstrap CIs, paired comparisons, the paper's analyses,
    figures and a self-contained HTML report, from one or more run directories."""
    from rescue.report.bootstrap import CLUSTERS
    from rescue.report.build import ReportOptions, build_report
    from rescue.report.runs import ReportError

    if cluster not in CLUSTERS:
        raise ReportError(f"--cluster {cluster!r}: choose one of {', '.join(CLUSTERS)}")

    def progress(message: str) -> None:
        err_console.print(f"[dim]{message}[/]", highlight=False)

    options = ReportOptions(n_resamples=bootstrap, seed=seed, level=level, alpha=alpha, context_rows=context_rows,
                            html=html, cluster=cluster, allow_mixed=allow_mixed, progress=None if quiet else progress)
    result = build_report(run_dirs, out, data=data, options=options)
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
    console.print(f"Wrote {len(result.files)} files to {result.out}"
                  + (f"; open {result.out / 'report.html'}" if html else ""), highlight=False)
