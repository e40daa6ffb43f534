"""The ``rescue`` command. Commands are thin: each lives in its own module and calls the library."""

from __future__ import annotations

import functools
import gc
import importlib
import os
import signal
import sys
import threading
import types
from types import FrameType
from typing import Any

from rich.markup import escape

from rescue.cli.app import app, err_console
from rescue.errors import EXIT_ERROR, RescueError, Terminated, exit_code
from rescue.data.text import visible_text

__all__ = ["app", "main"]

# Each module registers its commands on `app` when imported.
_COMMAND_MODULES = ("data_cmds", "tasks_cmds", "run_cmds", "judge_cmds", "report_cmds", "review_cmds", "build_cmds",
                    "splits_cmds", "export_cmds")
for _name in _COMMAND_MODULES:
    importlib.import_module(f"rescue.cli.{_name}")


def main() -> None:
    # The command's process only: everything imported so far lives as long as it does, so it is frozen out
    # of every later collection, and the youngest generation is collected every 10,000 new objects instead
    # of 700. A run allocates a great many long-lived ones (samples, instances, records): with the defaults
    # the collector took about 0.25 s of a 2,000-request run re-reading them, with these about 0.1 s.
    """The ``rescue`` command: run the CLI with the collector tuned for a long-lived process, errors as messages."""
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    previous = signal.signal(signal.SIGTERM, _terminate) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        command()()
    except RescueError as exc:
        err_console.print(f"[bold red]error:[/] {escape(visible_lines(str(exc)))}", highlight=False, soft_wrap=True)
        _exit(exit_code(exc))
    except (KeyboardInterrupt, Terminated) as stop:
        err_console.print("terminated (SIGTERM)." if isinstance(stop, Terminated) else "interrupted.", highlight=False)
        sys.exit(exit_code(stop))
    except Exception as exc:
        if not isinstance(exc, OSError) and type(exc).__module__ != "sqlite3":
            raise
        from rescue.errors import environment_error

        # The machine's fault, not the program's: a full disk, a folder that is a file, no permission. Every
        # file rescue writes is written whole or not at all, so what was there before is still there.
        err_console.print(f"[bold red]error:[/] {escape(visible_lines(environment_error(exc)))}", highlight=False,
                          soft_wrap=True)
        _exit(EXIT_ERROR)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (``timeout``, a scheduler) ends every command as Ctrl-C does: the ``finally`` blocks run
    (temporaries removed, locks released), children are killed, exit 143. A run stops cleanly instead
    (rescue.engine.stop); a build's children are ended by rescue.proc, which takes SIGTERM while it works."""
    children = sys.modules.get("rescue.proc")  # not imported at start-up: it costs `rescue --help` 0.1 s
    if children is not None:
        children.kill_children(stopping=True)
    raise Terminated()


def command() -> Any:
    """The click command behind ``app``, tidied for its help pages: the top level prints click's plain help (typer's
    rich help imports rich.markdown and markdown-it, a third of `rescue --help`'s time), the commands keep rich
    help with their option panels, and flags show no ``<bool>`` type."""
    words = [a for a in sys.argv[1:] if not a.startswith("-")]
    return _command_for(words[0] if words else None, "--help" in sys.argv[1:])


@functools.lru_cache(maxsize=16)
def _command_for(wanted: str | None, helping: bool = False) -> Any:
    # Built once per command name in a process: a notebook or a test suite calling main() again reuses it.
    import typer.main

    group = typer.main.get_command(_only(app, wanted))
    group.rich_markup_mode = None  # type: ignore[attr-defined]
    _no_flag_types(group)
    if helping:  # a command's help: its option panels drawn as plain text (rescue.cli.panels), not by rich
        from rescue.cli.panels import use_panels

        for sub in _commands(group):
            use_panels(sub)
    return group


def _commands(group: Any) -> list[Any]:
    """Every command below ``group``, nested groups' included."""
    found = []
    for sub in getattr(group, "commands", {}).values():
        found.append(sub)
        found.extend(_commands(sub))
    return found


def _only(typer_app: Any, wanted: str | None) -> Any:
    """``typer_app`` with every command but ``wanted`` reduced to its name and help. Typer reads the signature of
    every command it builds (hundreds of annotations): building only the one that runs halves `rescue run`'s
    start, and `rescue --help`, which runs none, lists the commands from their docstrings alone."""
    import copy

    view = copy.copy(typer_app)
    view.registered_commands = []
    for info in typer_app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        if name != wanted:
            info = copy.copy(info)
            info.callback = _stub(info.callback)
        view.registered_commands.append(info)
    view.registered_groups = []
    for info in typer_app.registered_groups:
        if info.name != wanted:
            info = copy.copy(info)
            info.typer_instance = _only(info.typer_instance, None)
        view.registered_groups.append(info)
    return view


def _stub(callback: Any) -> Any:
    def stub() -> None:
        raise AssertionError("a command's stub never runs")

    stub.__doc__ = callback.__doc__
    stub.__name__ = callback.__name__
    return stub


def _no_flag_types(cmd: Any) -> None:
    from typer._click import Context

    options = list(cmd.params)
    help_option = cmd.get_help_option(Context(cmd))
    if help_option is not None:
        options.append(help_option)
        # A help flag's value needs no conversion; typer's would build pydantic type adapters first (pydantic
        # and its plugin scan: 0.1 s of `rescue run --help`) for the group's flag, given or not.
        help_option.process_value = types.MethodType(_help_flag_value, help_option)
    for param in options:
        if getattr(param, "is_flag", False):
            param.metavar = ""  # typer shows a flag's metavar in place of its type
    for sub in getattr(cmd, "commands", {}).values():
        _no_flag_types(sub)


def _help_flag_value(self: Any, ctx: Any, value: Any) -> Any:
    return self.callback(ctx, self, bool(value)) if self.callback is not None else bool(value)


def _exit(code: int) -> None:
    runner = sys.modules.get("rescue.engine.runner")  # no run, no worker: the runner is not even imported
    prefix = getattr(runner, "WORKER_PREFIX", None)
    if prefix and any(t.is_alive() and t.name.startswith(prefix) for t in threading.enumerate()):
        # Ctrl-C left a model computation (BERTScore) running in a daemon thread; everything the run keeps is
        # written and closed, and a normal exit would wait for the computation or abort inside torch.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def visible_lines(text: str) -> str:
    """An error message with control characters escaped, its line breaks kept."""
    return "\n".join(visible_text(line) for line in text.split("\n"))
