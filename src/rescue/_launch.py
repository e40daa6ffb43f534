"""The ``rescue`` command's first code (its console script and ``python -m rescue``): SIGTERM is rescue's from
here on, before the command's imports (typer, rich and every command module) and until the process ends.

Left to Python's default, a SIGTERM in two windows ended the process without a word (killed by the signal, no
exit status of rescue's): the command's imports, and its exit, where Python resets every signal handler to the
default as it begins to finalize and then collects and tears down every module (seconds, after a report). In
neither is anything of rescue's under way (no child process, no temporary file), so the handler here says what
happened and exits 143 at once; while the command runs, :func:`rescue.cli.main` installs its own, which stops it
cleanly, and puts this one back when it returns. The exit ends here too: the last exit function (registered
first, so run after every library's) flushes the output and ends the process with the command's exit status,
without the finalization that would drop the handler. The interpreter's own start, before any of rescue's
code, is the moment left to the default.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from types import FrameType

from rescue.errors import EXIT_INTERRUPTED, EXIT_TERMINATED, TERMINATED_MESSAGE, Terminated

_status = [0]  # the command's exit status, as Python would give it, for the last exit function


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed, broken, or replaced by None
            pass


def _outside_the_command(signum: int, frame: FrameType | None) -> None:
    _flush()
    os.write(2, f"{TERMINATED_MESSAGE}\n".encode())
    os._exit(EXIT_TERMINATED)


def _end_here() -> None:
    """Run after every other exit function: end the process with the command's status before Python finalizes
    (which resets SIGTERM to the default first)."""
    _flush()
    os._exit(_status[0])


def _exit_status(code: object) -> int:
    """The exit status Python gives ``sys.exit(code)``: None 0, an int itself, anything else (a message) 1."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def main() -> None:
    """Take SIGTERM, then run the ``rescue`` command."""
    signal.signal(signal.SIGTERM, _outside_the_command)
    atexit.register(_end_here)
    try:
        from rescue.cli import main as command

        command()
    except Terminated:
        # Raised where the command's handler could not say it (while it printed an error, in a finally block).
        os.write(2, f"{TERMINATED_MESSAGE}\n".encode())
        _status[0] = EXIT_TERMINATED
        raise
    except SystemExit as exc:
        _status[0] = _exit_status(exc.code)
        raise
    except KeyboardInterrupt:
        _status[0] = EXIT_INTERRUPTED
        raise
    except BaseException:
        _status[0] = 1  # Python prints the traceback, then exits 1
        raise
