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
