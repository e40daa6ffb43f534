"""``rescue report``: a thin wrapper over :func:`rescue.report.build.build_report`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from rescue.cli._app import SplitOption, SplitsFileOption, app, console, err_console
from rescue.cli._startup import (
    files,
    report_build,
    report_failures,
    report_reference,
    report_runs,
    report_summary,
    rich_table,
    runs_failures,
)
from rescue.data.text import visible_text
from rescue.display import terminal_text
from rescue.engine.run_options import DEFAULT_SPLITS_FILE
from rescue.report.options import CLUSTERS, ReportOptions

_DEFAULTS = ReportOptions()  # every default of rescue report, as the library has it


@app.command("report")
def report(
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR",help="Run directories written by `rescue run --out`, or inspect_ai logs of `inspect eval rescue/<task>` (.eval files or folders of them; the inspect extra).", show_default=False)],
    out: Annotated[Path, typer.Option("--out", help="Folder for the tables, analyses, figures and report.html.")],
    data: Annotated[
        Path | None,
        typer.Option("--data", help="The data the runs evaluated (for positions and transcripts). Default: the "
                     "data named in the first run's results.json (the bundled demo data when none)."),
    ] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", min=0, help="Bootstrap resamples (0: no CIs).")] = _DEFAULTS.n_resamples,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap draws.")] = _DEFAULTS.seed,
    level: Annotated[float, typer.Option("--level", min=0.5, max=0.999, help="Confidence level of the intervals.")] = _DEFAULTS.level,
    alpha: Annotated[float, typer.Option("--alpha", min=0.0, max=0.5, help="Significance level of the markers.")] = _DEFAULTS.alpha,
    context_rows: Annotated[int, typer.Option("--context-rows", min=0, help="Rows before an instance shown in the HTML drill-down.")] = _DEFAULTS.context_rows,
    html: Annotated[bool, typer.Option("--html/--no-html", help="Write report.html.")] = _DEFAULTS.html,
    cluster: Annotated[str, typer.Option(
        "--cluster", help="The bootstrap's resampling unit: group (the session group: one couple, the sample id's "
        "folder, or one family, the clips whose casts share at least two people; clips of one group are not "
        "independent) or sample (each clip).")] = _DEFAULTS.cluster,
    groups: Annotated[Optional[Path], typer.Option(
        "--groups", metavar="FILE", help="Session groups as a CSV of sample_id,group lines (header optional) "
        "instead of inferring them from the data; every evaluated sample needs one. The report writes the "
        "grouping it used to groups.csv in the same format.")] = None,
    allow_mixed: Annotated[bool, typer.Option(
        "--allow-mixed", help="Show runs that differ in data, task options, judge, BERTScore backbone, gold or "
        "instance set side by side (cells with their instance counts, marked where the set differs) instead "
        "of refusing.")] = False,
    reference: Annotated[Optional[str], typer.Option(
        "--reference", help="paper: add the paper's published numbers (Table 5, Table 11, the ten-model average) "
        "as reference rows, compare each system with them (and say where a column is not comparable) and add a "
        "reproduction section to report.html. Never part of a significance test.")] = None,
    figures: Annotated[Optional[bool], typer.Option(
        "--figures/--no-figures", help="Draw the figures (in --figure-formats). They need matplotlib, the 'plot' extra; "
        "by default they are drawn when it is installed and a note says how to get it when not. --figures "
        "makes a missing extra an error.", show_default=False)] = None,
    figure_formats: Annotated[str, typer.Option(
        "--figure-formats", help="The figures' formats under figures/, comma-separated: png (always: the page "
        "inlines it), svg, pdf. Each format is another drawing of every figure.")] = ",".join(_DEFAULTS.figure_formats),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
    split: SplitOption = None,
    splits: SplitsFileOption = DEFAULT_SPLITS_FILE,
) -> None:
    """Leaderboards (Markdown, LaTeX, CSV) with bootstrap CIs, paired comparisons, the paper's analyses,
    figures and a self-contained HTML report, from one or more run directories."""
    files.check_out_folder(out)
    if cluster not in CLUSTERS:
        raise report_runs.ReportError(f"--cluster {cluster!r}: choose one of {', '.join(CLUSTERS)}")

    report_reference.check_reference(reference)
    formats = report_build.figure_format_list(figure_formats)

    def progress(message: str) -> None:
        err_console.print(f"[dim]{message}[/]", highlight=False)

    options = ReportOptions(n_resamples=bootstrap, seed=seed, level=level, alpha=alpha, context_rows=context_rows,
                            html=html, cluster=cluster, groups=groups, allow_mixed=allow_mixed, reference=reference,
                            figures=figures, figure_formats=formats, progress=None if quiet else progress,
                            split=split, splits=splits)
    result = report_build.build_report(run_dirs, out, data=data, options=options)
    report_summary.print_report_summary(console, result.systems, result.out)  # the leaderboard, as rescue run prints it
    if result.reference:
        _print_reference(result.reference)
    if result.failures:
        _print_failures(result.failures)

    for note in result.notes:  # a note may quote ids and pip lines ("rescue-bench[plot]"): never markup
        console.print(f"[yellow]note:[/] {terminal_text(note)}", highlight=False, soft_wrap=True)
    console.print(f"Wrote {len(result.files)} files to {terminal_text(str(result.out))}"
                  + (f"; open {terminal_text(str(result.out / 'report.html'))}" if html else ""), highlight=False)


def _print_failures(rows: list[Any]) -> None:
    """Why answers failed, as ``rescue run`` prints it: per system and task its failures, then one line per
    reason (count, reason, example instance); the same table is in failures.md and report.html."""
    console.print(f"[bold]{report_failures.TITLE}[/] (failures.md):", highlight=False)
    for row in rows:
        # Reasons quote the model's text and ids come from users: never markup.
        console.print(f"  {visible_text(row.system)} · {row.task}: {row.failures} of {row.instances} failed", markup=False,
                      highlight=False, soft_wrap=True)
        for line in runs_failures.reason_lines(row.reasons, row.failures):
            console.print(f"    {visible_text(line)}", markup=False, highlight=False, soft_wrap=True)


def _print_reference(items: list[Any]) -> None:
    """Per system and metric (pooled): ours, the paper's, the difference, or a numbered reason why there is none."""
    pooled = [c for c in items if c.scope == "all"]
    reasons: list[str] = []
    caveats: set[str] = set()
    for system in dict.fromkeys(c.system for c in pooled):
        mine = [c for c in pooled if c.system == system]
        console.print(f"[bold]{terminal_text(system)}[/] against the paper's {terminal_text(str(mine[0].paper_model))} "
                      "(pooled)", highlight=False)
        table = rich_table.Table()
        for header in ("metric", "ours", "paper", "ours − paper"):
            table.add_column(header, justify="left" if header == "metric" else "right", no_wrap=True)
        for item, row in zip(mine, report_reference.rows_text(mine)):
            difference = row[7]
            if item.reason:
                if item.reason not in reasons:
                    reasons.append(item.reason)
                difference = f"not comparable [{reasons.index(item.reason) + 1}]"
            elif item.caveat:
                caveats.update(part for part in item.caveat.split("; ") if part.startswith("lenient differs"))
                if "includes sampling" in item.caveat:
                    caveats.add("sampling")
            table.add_row(*(terminal_text(str(cell)) for cell in (row[3], row[4], row[6], difference)))
        console.print(table)
    for number, reason in enumerate(reasons, start=1):
        console.print(f"\\[{number}] {terminal_text(reason)}.", highlight=False)
    if "sampling" in caveats:
        console.print("Comparable columns of a run smaller than the paper's differ by sampling too: see the "
                      "intervals in reference.md and report.html.", highlight=False)
    for caveat in sorted(caveats - {"sampling"}):
        console.print(f"ITP: {terminal_text(caveat)}.", highlight=False, soft_wrap=True)
