"""``rescue leaderboard add|build|rank``: thin wrappers over :mod:`rescue.leaderboard`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rescue.cli._app import RescueTyper, app, console
from rescue import display
from rescue.cli._startup import leaderboard_entries, leaderboard_rank, leaderboard_site, rich_table

leaderboard_app = RescueTyper(help="The public leaderboard: a static site built from verified bundles.",
                              no_args_is_help=True)
app.add_typer(leaderboard_app, name="leaderboard")

BundlesFolder = Annotated[Path, typer.Argument(metavar="BUNDLES", help="The folder of entries (rescue leaderboard add).")]


@leaderboard_app.command("add")
def add_command(
    bundle: Annotated[Path, typer.Argument(help="The bundle to add (rescue submit --out).")],
    to: Annotated[Path, typer.Option("--to", help="The folder of entries the site is built from.")],
    data: Annotated[Optional[Path], typer.Option(
        "--data", help="The release, to verify the bundle against (default: the path its run recorded).")] = None,
) -> None:
    """Verify a bundle and add it to the folder of entries; refused when it does not verify, is a duplicate, or
    was made on another release or rendering than the site's."""
    entry, event = leaderboard_entries.add_entry(bundle, to, data=data)
    console.print(f"added {display.terminal_text(entry.id)} ({event.level}) to {display.terminal_text(str(to))}: "
                  f"{display.terminal_text(', '.join(entry.manifest.systems))}", highlight=False, soft_wrap=True)


@leaderboard_app.command("build")
def build_command(
    bundles: BundlesFolder,
    out: Annotated[Path, typer.Option("--out", help="The site folder to write (replaced whole).")],
    reverify: Annotated[bool, typer.Option(
        "--reverify", help="Verify every entry again with this rescue first; the changelog says so.")] = False,
    data: Annotated[Optional[Path], typer.Option("--data", help="With --reverify: the release.")] = None,
    no_published: Annotated[bool, typer.Option(
        "--no-published", help="Leave out the paper's published rows.")] = False,
) -> None:
    """Build the static site: the table with tie groups, each entry's page and downloads, the changelog, the
    cost-versus-score figure, leaderboard.json and leaderboard.csv. It works from a folder or any static host."""
    if reverify:
        events = leaderboard_entries.reverify(bundles, data=data)
        console.print(f"re-verified {len(events)} entries", highlight=False)
    site = leaderboard_site.build_site(bundles, out, published_rows=not no_published)
    console.print(f"wrote {display.terminal_text(str(site.path))}: {site.entries} entries, {site.rows} rows, "
                  f"index.html {site.index_bytes / 1024:.0f} KiB; "
                  f"open {display.terminal_text(str(site.path / 'index.html'))}", highlight=False, soft_wrap=True)


@leaderboard_app.command("rank")
def rank_command(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN", help="A run directory (rescue run --out).")],
    against: Annotated[Path, typer.Option(
        "--against", help="A site folder (the paired test) or its leaderboard.json (intervals only).")],
) -> None:
    """Where a local run would stand on a site: per system and column, its value, 95% interval and the rank of
    the tie group it would join."""
    found = leaderboard_rank.standings(run_dir, against)
    table = rich_table.Table("system", "column", "value [95% CI]", "rank", title=f"{run_dir} against {against}")
    for item in found:
        value = item.column.scale * (item.value or 0.0)
        interval = "" if item.low is None or item.high is None else \
            f" [{item.column.scale * item.low:.{item.column.digits}f}, {item.column.scale * item.high:.{item.column.digits}f}]"
        table.add_row(display.terminal_text(item.system), item.column.header,
                      f"{value:.{item.column.digits}f}{interval}", f"{item.rank} of {item.ranked + 1}")
    console.print(table)
    if found and not found[0].tested:
        console.print("tie groups from overlapping intervals: leaderboard.json holds no answers; give the site "
                      "folder for the paired test", highlight=False)
