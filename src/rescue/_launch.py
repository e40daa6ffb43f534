"""The ``rescue`` command's first code (its console script and ``python -m rescue``): SIGTERM is rescue's from
here on, before the command's imports (a third of a second of typer, rich and every command module) and after
the command returns, while the interpreter exits.

Left to Python's default, a SIGTERM in either window ended the process without a word (killed by the signal,
no exit status of rescue's). Nothing of rescue's is under way in them (no child process, no temporary file),
so the handler here says what happened and exits 143 at once; while the command runs,
:func:`rescue.cli.main` installs its own, which stops it cleanly, and puts this one back when it returns.
The interpreter's own start, before any of rescue's code, is the one moment left to the default.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

from rescue.errors import EXIT_TERMINATED, TERMINATED_MESSAGE, Terminated


def _outside_the_command(signum: int, frame: FrameType | None) -> None:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # a closed or broken stdout: the message still goes to stderr
        pass
    os.write(2, f"{TERMINATED_MESSAGE}\n".encode())
    os._exit(EXIT_TERMINATED)


def main() -> None:
    """Take SIGTERM, then run the ``rescue`` command."""
    signal.signal(signal.SIGTERM, _outside_the_command)
    try:
        from rescue.cli import main as command

        command()
    except Terminated:
        # Raised where the command's handler could not say it (while it printed an error, in a finally block).
        os.write(2, f"{TERMINATED_MESSAGE}\n".encode())
        raise
