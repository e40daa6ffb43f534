"""The typer application and the options every command shares."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

app = typer.Typer(
    name="rescue",
    help="RESCUE-Bench end to end: validate data, build tasks, run models, score and report.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
data_app = typer.Typer(help="The benchmark data: fetch the official release.", no_args_is_help=True)
app.add_typer(data_app, name="data")

console = Console()
err_console = Console(stderr=True)


def _version(value: bool) -> None:
    if value:
        from rescue import __version__

        console.print(f"rescue {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """RESCUE-Bench end to end: validate data, build tasks, run models, score and report."""

DATA_HELP = ("A .jsonl file (release format), a folder of .jsonl files, or a folder of per-sample .json "
             "files (<group>/<sample>.json). Default: the bundled demo dataset.")
DataOption = Annotated[Optional[Path], typer.Option("--data", help=DATA_HELP)]


# Choices the task registry defines, written out so that `rescue --help` need not import the registry (pydantic,
# every task); tests/test_cli_help.py holds them equal to the registry's.
class RppGoldChoice(str, Enum):
    auto = "auto"
    relation_pattern = "relation_pattern"
    relation_cycle_state = "relation_cycle_state"


class JudgedTask(str, Enum):
    er = "er"
    vp = "vp"


SplitOption = Annotated[
    Optional[str],
    typer.Option("--split", help="Only the samples of this split (train, dev, test, fold1, ...) of the --splits file "
                 "that `rescue splits` wrote."),
]
SplitsFileOption = Annotated[
    Path, typer.Option("--splits", help="The splits file --split reads (written by `rescue splits`).")
]
DEFAULT_SPLITS_FILE = Path("splits.json")


def load_data(data: Optional[Path], split: Optional[str] = None, splits: Path = DEFAULT_SPLITS_FILE) -> list:  # type: ignore[type-arg]
    """The validated samples of ``data``, restricted to ``split`` of the ``splits`` file when one is named."""
    from rescue.data.loading import load_samples

    samples = load_samples(data)
    if split is None:
        return samples
    from rescue.data.splits import select_split

    return select_split(samples, splits, split)
