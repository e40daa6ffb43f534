"""The ``rescue`` command. Commands are thin: each lives in its own module and calls the library."""

from __future__ import annotations

import gc
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import typer.main

from rescue.cli._app import app, err_console
from rescue.cli._startup import loaded, rich_markup
from rescue.data.text import visible_text
from rescue.errors import EXIT_ERROR, EXIT_TERMINATED, TERMINATED_MESSAGE, RescueError, Terminated, environment_error, exit_code
from rescue.threads import fit_threads

__all__ = ["app", "main"]

# Each module registers its commands on `app` when imported.
_COMMAND_MODULES = ("_data_cmds", "_tasks_cmds", "_run_cmds", "_judge_cmds", "_report_cmds", "_review_cmds",
                    "_build_cmds", "_splits_cmds", "_export_cmds", "_submit_cmds", "_leaderboard_cmds")
for _name in _COMMAND_MODULES:
    importlib.import_module(f"rescue.cli.{_name}")


def main() -> None:
    # The command's process only: everything imported so far lives as long as it does, so it is frozen out
    # of every later collection, and the youngest generation is collected every 10,000 new objects instead
    # of 700. A run allocates a great many long-lived ones (samples, instances, records), which the defaults
    # would have the collector re-read again and again.
    """The ``rescue`` command: run the CLI with the collector tuned for a long-lived process, errors as messages."""
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    _sigterm.clear()
    said = False
    unraisable, sys.unraisablehook = sys.unraisablehook, _quiet_stop(sys.unraisablehook)
    previous = signal.signal(signal.SIGTERM, _terminate) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        fit_threads()  # before any library starts a pool: every pool sized to the cores rescue may use
        typer.main.get_command(app)()
    except RescueError as exc:
        err_console.print(f"[bold red]error:[/] {rich_markup.escape(visible_lines(str(exc)))}", highlight=False, soft_wrap=True)
        _exit(exit_code(exc))
    except (KeyboardInterrupt, Terminated) as stop:
        said = True
        err_console.print(TERMINATED_MESSAGE if isinstance(stop, Terminated) else "interrupted.", highlight=False)
        sys.exit(exit_code(stop))
    except Exception as exc:
        if not isinstance(exc, OSError) and type(exc).__module__ != "sqlite3":
            raise
        # The machine's fault, not the program's: a full disk, a folder that is a file, no permission. Every
        # file rescue writes is written whole or not at all, so what was there before is still there.
        err_console.print(f"[bold red]error:[/] {rich_markup.escape(visible_lines(environment_error(exc)))}", highlight=False,
                          soft_wrap=True)
        _exit(EXIT_ERROR)
    finally:
        sys.unraisablehook = unraisable
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if _sigterm.is_set() and not said:
            # The handler's Terminated was raised where Python only prints an exception and goes on (a weakref
            # callback or a __del__ the collector ran), or while an error was being said: the command ran on or
            # stopped otherwise; it still ends as a SIGTERM does.
            err_console.print(TERMINATED_MESSAGE, highlight=False)
            _exit(EXIT_TERMINATED)


def _quiet_stop(hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """``sys.unraisablehook`` saying nothing of a Terminated it is given (the handler's, raised inside a weakref
    callback or a __del__: :func:`main` ends the command as terminated once it returns), the rest as ``hook``."""
    def quiet(unraisable: Any) -> object:
        return None if isinstance(unraisable.exc_value, Terminated) else hook(unraisable)

    return quiet


_sigterm = threading.Event()  # a SIGTERM reached the command's handler (set by it, read as the command ends)


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (``timeout``, a scheduler) ends every command as Ctrl-C does: the ``finally`` blocks run
    (temporaries removed, locks released), children are killed, exit 143. A run stops cleanly instead
    (rescue.engine.stop); a build's children are ended by rescue.proc, which takes SIGTERM while it works."""
    _sigterm.set()
    children = loaded("rescue.proc")
    if children is not None:
        children.kill_children(stopping=True)
    raise Terminated()


def _exit(code: int) -> None:
    runner = loaded("rescue.engine.runner")  # no run, no worker
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
