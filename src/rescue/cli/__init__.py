"""The ``rescue`` command. Commands are thin: each lives in its own module and calls the library."""

from __future__ import annotations

import importlib
import sys

from rich.markup import escape

from rescue.cli.app import app, err_console
from rescue.data.errors import RescueError
from rescue.io import visible_text

# Each module registers its commands on `app` when imported.
_COMMAND_MODULES = ("data_cmds", "tasks_cmds", "run_cmds", "judge_cmds", "report_cmds", "review_cmds", "build_cmds")
for _name in _COMMAND_MODULES:
    importlib.import_module(f"rescue.cli.{_name}")


def main() -> None:
    try:
        app()
    except RescueError as exc:
        err_console.print(f"[bold red]error:[/] {escape(visible_lines(str(exc)))}", highlight=False, soft_wrap=True)
        sys.exit(getattr(exc, "exit_code", 2))
    except KeyboardInterrupt:
        err_console.print("interrupted.", highlight=False)
        sys.exit(130)


def visible_lines(text: str) -> str:
    """An error message with control characters escaped, its line breaks kept."""
    return "\n".join(visible_text(line) for line in text.split("\n"))
