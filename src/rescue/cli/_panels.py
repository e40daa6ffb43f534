"""A command's ``--help`` in option panels, drawn with plain text: the panels typer's rich help draws (one per
``rich_help_panel``, framed in box-drawing characters), without importing typer's rich help (rich.markdown,
markdown-it) or laying the page out with rich, which together were two thirds of `rescue run --help`'s CPU."""

from __future__ import annotations

import shutil
import textwrap
import types
from typing import Any

DEFAULT_PANEL = "Options"
ARGUMENTS_PANEL = "Arguments"
# The option column at most this share of the panel; a longer option gets a line of its own.
_OPTION_SHARE = 0.3


def use_panels(command: Any) -> None:
    """``command`` (a click command typer built) prints its help with panels drawn as plain text."""
    command.rich_markup_mode = None  # typer's plain path: click's usage and text, then format_options below
    command.format_options = types.MethodType(_format_options, command)
    command.format_epilog = types.MethodType(_format_epilog, command)


def _format_epilog(self: Any, ctx: Any, formatter: Any) -> None:
    # Line by line as written (click would re-wrap it into one paragraph): the examples are commands to copy.
    if self.epilog:
        formatter.write("\n" + self.epilog.rstrip() + "\n")


def _format_options(self: Any, ctx: Any, formatter: Any) -> None:
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
