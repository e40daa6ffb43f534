"""A command's ``--help`` in option panels, drawn with plain text: the panels typer's rich help draws (one per
``rich_help_panel``, framed in box-drawing characters), without importing typer's rich help (rich.markdown,
markdown-it) or laying the page out with rich, most of what `rescue run --help` cost with them.

:class:`PanelCommand` is the class of every ``rescue`` command (given as ``cls=``, typer's public way to choose
a command's class; ``rescue.cli._app.RescueTyper`` gives it to each): click's plain help page, whose option
list and epilog it draws itself."""

from __future__ import annotations

import shutil
import textwrap
from typing import Any

from typer.core import TyperCommand

DEFAULT_PANEL = "Options"
ARGUMENTS_PANEL = "Arguments"
# The option column at most this share of the panel; a longer option gets a line of its own.
_OPTION_SHARE = 0.3


class PanelCommand(TyperCommand):
    """A typer command whose help lists its options in plain-text panels and its epilog line by line."""

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        """The epilog (the help's examples) as written, line by line."""
        # Line by line as written (click would re-wrap it into one paragraph): the examples are commands to copy.
        if self.epilog:
            formatter.write("\n" + self.epilog.rstrip() + "\n")

    def format_options(self, ctx: Any, formatter: Any) -> None:
        """The arguments and options, one panel per ``rich_help_panel`` (the rest under "Options")."""
        panels: dict[str, list[tuple[str, str]]] = {ARGUMENTS_PANEL: [], DEFAULT_PANEL: []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            default = ARGUMENTS_PANEL if param.param_type_name == "argument" else DEFAULT_PANEL
            panels.setdefault(getattr(param, "rich_help_panel", None) or default, []).append(record)
        width = max(40, shutil.get_terminal_size().columns - 1)
        for title, records in panels.items():
            if records:
                formatter.write("\n" + panel(title, records, width))


def panel(title: str, records: list[tuple[str, str]], width: int) -> str:
    """One panel: ``records`` (option, help) in two columns inside a frame ``width`` characters wide."""
    inner = width - 4  # "│ " and " │"
    column = max([len(option) for option, _ in records if len(option) <= inner * _OPTION_SHARE] or [0])
    lines = [f"╭─ {title} " + "─" * max(0, width - len(title) - 5) + "╮"]
    for option, text in records:
        if len(option) > column:  # its own line (never cut: a choice list is read whole), the help below
            lines.extend(_framed(chunk, inner) for chunk in textwrap.wrap(option, inner, break_long_words=False))
            option = ""
        wrapped = textwrap.wrap(text, max(10, inner - column - 2)) or [""]
        for number, chunk in enumerate(wrapped):
            lines.append(_framed(f"{option if number == 0 else '':<{column}}  {chunk}", inner))
    lines.append("╰" + "─" * (width - 2) + "╯")
    return "\n".join(lines) + "\n"


def _framed(text: str, inner: int) -> str:
    return f"│ {text:<{inner}} │"
