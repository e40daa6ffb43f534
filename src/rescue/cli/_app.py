"""The typer application and the options every command shares."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from typer.core import TyperCommand
from typer.models import CommandFunctionType

if TYPE_CHECKING:
    from rich.console import Console

from rescue import __version__
from rescue.display import terminal_console
from rescue.cli._panels import PanelCommand
from rescue.cli._startup import data_loading, data_splits
from rescue.engine.run_options import (
    DEFAULT_SPLITS_FILE,
    SPLIT_HELP,
    SPLITS_HELP,
    TASK_OPTION_HELP,
    option,
)



class RescueTyper(typer.Typer):
    """A typer application whose commands are :class:`~rescue.cli._panels.PanelCommand` (their help in option
    panels drawn as plain text) unless one names another class."""

    def command(self, name: str | None = None, *, cls: type[TyperCommand] | None = None,
                **settings: Any) -> Callable[[CommandFunctionType], CommandFunctionType]:
        """typer's ``command`` decorator, with :class:`PanelCommand` as the command's class by default."""
        return super().command(name, cls=cls or PanelCommand, **settings)


# Plain help (rich_markup_mode=None): typer's rich help imports rich.markdown and markdown-it, which the help
# does not need; the commands draw their option panels themselves (PanelCommand).
app = RescueTyper(
    name="rescue",
    help="RESCUE-Bench end to end: validate data, build tasks, run models, score and report.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
    add_help_option=False,  # the callback's own --help below
)
data_app = RescueTyper(help="The benchmark data: fetch the official release.", no_args_is_help=True)
app.add_typer(data_app, name="data")



class _Console:
    """``rescue.display.terminal_console(**settings)``, made when first used: a command that prints imports rich,
    `rescue --help` does not."""

    def __init__(self, **settings: Any) -> None:
        self._settings = settings
        self._made: Any = None

    def made(self) -> Any:
        """The console itself (made now if not yet): what rich's own classes are handed."""
        if self._made is None:
            self._made = terminal_console(**self._settings)
        return self._made

    def __getattr__(self, name: str) -> Any:
        return getattr(self.made(), name)

    def __enter__(self) -> Any:  # rich's Live holds its console as a context (special names skip __getattr__)
        return self.made().__enter__()

    def __exit__(self, *exc: object) -> None:
        self.made().__exit__(*exc)


# Every text a command prints goes through these consoles, which escape what could act on a terminal
# (rescue.display.terminal_console): ids, labels and model names come from data and users.
if TYPE_CHECKING:
    console = Console()
    err_console = Console(stderr=True)
else:
    console = _Console()
    err_console = _Console(stderr=True)


def _version(value: bool) -> None:
    if value:
        console.print(f"rescue {__version__}", highlight=False)
        raise typer.Exit()


def _help(ctx: typer.Context, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        typer.echo(ctx.get_help(), color=ctx.color)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    # The top level's help flag, declared here with a bool default: typer's own has none, and its absent value
    # (None) goes through typer's value conversion, which imports pydantic (benchmarks/README.md).
    help: Annotated[bool, typer.Option("--help", callback=_help, is_eager=True, expose_value=False,
                                       help="Show this message and exit.")] = False,
) -> None:
    """RESCUE-Bench end to end: validate data, build tasks, run models, score and report."""


def run_option(name: str, help: str | None = None) -> Any:
    """``rescue run``'s option ``name`` (its flags and help, or ``help``), for another command that takes the
    same option: one declaration (:mod:`rescue.engine.run_options`) for every command."""
    opt = option(name).opt
    return typer.Option(*opt.flags, help=opt.help if help is None else help)


DataOption = Annotated[Optional[Path], run_option("data")]
SplitOption = Annotated[Optional[str], run_option("split", f"{SPLIT_HELP}.")]
SplitsFileOption = Annotated[Path, run_option("splits", f"{SPLITS_HELP} (written by `rescue splits`).")]
TaskOptionOption = Annotated[Optional[list[str]], run_option("task_options", f"{TASK_OPTION_HELP}; see docs/tasks.md.")]


# judge-agreement's --task choices, written out so that `rescue --help` need not import the registry (pydantic,
# every task); tests/cli/test_cli_help.py holds them equal to the registry's.
class JudgedTask(str, Enum):
    """The tasks ``rescue judge-agreement --task`` accepts (the judged ones)."""

    er = "er"
    vp = "vp"


def load_data(data: Optional[Path], split: Optional[str] = None, splits: Path = DEFAULT_SPLITS_FILE) -> list:  # type: ignore[type-arg]
    """The validated samples of ``data``, restricted to ``split`` of the ``splits`` file when one is named."""
    samples = data_loading.load_samples(data)
    if split is None:
        return samples

    return data_splits.select_split(samples, splits, split)
