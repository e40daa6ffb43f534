"""``rescue validate``, ``rescue stats`` and ``rescue data fetch``: checking, describing and getting the data."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from rescue.cli._app import (
    DataOption,
    SplitOption,
    SplitsFileOption,
    app,
    console,
    data_app,
    err_console,
    load_data,
)
from rescue.cli._startup import data_encoding, data_stats, data_validation, rich_progress, rich_table
from rescue.data import fetch as release  # light: it imports httpx and the validation only to download
from rescue.display import terminal_json, terminal_text
from rescue.engine.run_options import DEFAULT_SPLITS_FILE
from rescue.errors import EXIT_ERROR


@app.command("validate")
def validate_command(
    data: DataOption = None,
    fix: Annotated[
        bool,
        typer.Option("--fix", help="Write a copy with mis-encoded text repaired (ftfy); the input is never changed."),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Where --fix writes (default: next to the input, NAME.fixed.jsonl or DIR.fixed)."),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Hold the data to every rule of the rulebook at its own severity (self-targets, "
                     "self-viewpoints, strategies on client rows, blank entries... are errors); see docs/data.md."),
    ] = False,
) -> None:
    """Check every sample and report each problem as FILE:LINE: SAMPLE row N: FIELD: PROBLEM.

    Errors exit with status 2; warnings (such as mis-encoded text) are printed and do not fail.
    """
    report = data_validation.validate_path(data, strict)
    for issue in report.issues:
        target = err_console if issue.severity == "error" else console
        target.print(terminal_text(str(issue)), highlight=False, soft_wrap=True)
    source = terminal_text(str(data)) if data else "the demo dataset"
    console.print(
        f"{source}: {report.records} sample(s) read, {len(report.samples)} valid, "
        f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)",
        highlight=False,
        soft_wrap=True,
    )
    if report.mis_encoded and not fix:
        console.print(f"{report.mis_encoded} mis-encoded text(s): `rescue validate --data {source} --fix` writes a "
                      "repaired copy", highlight=False, soft_wrap=True)
    if fix:
        if data is None:
            raise typer.BadParameter("--fix needs --data PATH (the demo dataset is already clean)")
        dest, changed = data_encoding.fix_path(data, out)
        console.print(f"wrote {terminal_text(str(dest))} ({changed} record(s) repaired)", highlight=False, soft_wrap=True)
    if report.errors:
        raise typer.Exit(EXIT_ERROR)


class StatsFormat(str, Enum):
    """The output formats of ``rescue stats``."""

    table = "table"
    json = "json"
    markdown = "markdown"
    latex = "latex"


@app.command("stats")
def stats_command(
    data: DataOption = None,
    output_format: Annotated[
        StatsFormat, typer.Option("--format", help="table for people; json, markdown or latex for papers and scripts.")
    ] = StatsFormat.table,
    split: SplitOption = None,
    splits: SplitsFileOption = DEFAULT_SPLITS_FILE,
) -> None:
    """Dataset statistics as in the paper's Table 3 (per scenario and overall), then label distributions."""

    stats = data_stats.compute(load_data(data, split, splits))
    if output_format is StatsFormat.json:
        typer.echo(terminal_json(data_stats.render_json(stats)), nl=False)
    elif output_format is StatsFormat.markdown:
        typer.echo(data_stats.render_markdown(stats), nl=False)
    elif output_format is StatsFormat.latex:
        typer.echo(data_stats.render_latex(stats), nl=False)
    else:
        print_stats_tables(stats)


def print_stats_tables(stats: data_stats.DatasetStats, title: str = "Dataset statistics (paper Table 3)") -> None:
    """Table 3 and the label distributions on the terminal."""

    # Transposed (one row per statistic, one column per scope): the paper's seven headers do not fit 80 columns.
    rows = data_stats.table3_cells(stats)
    table = rich_table.Table(title=title, title_justify="left")
    table.add_column("Statistic", no_wrap=True)
    for cells in rows:
        table.add_column(terminal_text(cells[0]), justify="right", no_wrap=True)
    for k, (_, title, _) in enumerate(data_stats.TABLE3_COLUMNS, start=1):
        table.add_row(title, *(terminal_text(cells[k]) for cells in rows))
    console.print(table)
    for scenario, dists in stats.distributions.items():
        for name, counts in dists.items():
            if not counts:
                continue
            dist = rich_table.Table(title=terminal_text(f"{scenario}: {name.replace('_', ' ')}"), title_justify="left")
            dist.add_column("Label")
            dist.add_column("Count", justify="right")
            total = sum(counts.values()) or 1
            dist.add_column("Share", justify="right")
            for label, count in counts.items():
                dist.add_row(terminal_text(label), str(count), f"{count / total:.1%}")
            console.print(dist)
    groups = rich_table.Table(title="Session groups (the bootstrap's resampling unit)", title_justify="left",
                              caption=f"Groups {stats.grouping}.", caption_justify="left")
    groups.add_column("Scenario")
    groups.add_column("Group", no_wrap=True)
    groups.add_column("Clips", justify="right")
    groups.add_column("Sample ids (after the shared folder)", overflow="fold")
    for scenario, members in stats.groups.items():
        for group, sample_ids in members.items():
            # The ids of a group mostly share a folder: shown once, in the heading's sense, to fit 80 columns.
            shared = os.path.commonprefix(sample_ids).rpartition("/")[0] if len(sample_ids) > 1 else ""
            short = [i[len(shared) + 1:] if shared else i for i in sample_ids]
            groups.add_row(terminal_text(scenario), terminal_text(group), str(len(sample_ids)),
                           terminal_text(", ".join(short)))
    console.print(groups)


@data_app.command("fetch")
def fetch_command(
    dest: Annotated[Path, typer.Option("--dest", help="Folder to download into.")] = release.DEFAULT_DEST,
    url: Annotated[
        str, typer.Option("--url", help="Download from here instead (a mirror or a local copy served over HTTP).")
    ] = release.RELEASE_URL,
    sha256: Annotated[
        str | None, typer.Option("--sha256", help="Fail unless the download has this SHA-256.")
    ] = None,
) -> None:
    """Download the official release (benchmark_191.jsonl) from the authors' GitHub repository, pinned to a commit."""
    official = url == release.RELEASE_URL
    # The bar appears with the first bytes: a download that never starts (no network) draws no "0/?" bar.
    bars = rich_progress
    progress = bars.Progress(bars.TextColumn("[bold]downloading[/]"), bars.BarColumn(), bars.DownloadColumn(),
                             bars.TransferSpeedColumn(), console=err_console)
    bar: list[object] = []

    def advance(done: int, total: int | None) -> None:
        if not bar:
            progress.start()
            bar.append(progress.add_task("download", total=total))
        progress.update(bar[0], completed=done, total=total)  # type: ignore[arg-type]

    try:
        result = release.fetch_release(
            dest,
            url=url,
            expected_sha256=sha256,
            expected_samples=release.RELEASE_SAMPLES if official else None,
            progress=advance,
        )
    finally:
        progress.stop()
    console.print(f"saved {terminal_text(str(result.path))} ({result.size:,} bytes)", highlight=False, soft_wrap=True)
    console.print(f"sha256 {result.sha256}", highlight=False, soft_wrap=True)
    console.print(
        f"{len(result.report.samples)} samples valid, {len(result.report.warnings)} warning(s) "
        f"(see `rescue validate --data {terminal_text(str(result.path))}`)",
        highlight=False,
        soft_wrap=True,
    )

