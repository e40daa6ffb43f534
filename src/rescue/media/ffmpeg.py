"""Finding and running ffmpeg (always through :func:`rescue.proc.run`: a child that ends with rescue).

The system's ffmpeg wins where present (it may have hardware encoders); otherwise imageio-ffmpeg's static
binary, which ``pip install`` brings, so a fresh machine needs no extra step. ffprobe is not assumed:
imageio-ffmpeg ships none, so probing parses ``ffmpeg -i`` (see :mod:`rescue.media.probe`).
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from rescue import proc
from rescue.data.errors import RescueError

# ffmpeg's own messages are long; the last lines say what went wrong.
_STDERR_TAIL = 1200


class MediaError(RescueError):
    """A media step failed: the input is unreadable, or ffmpeg could not do what was asked."""


@functools.cache
def ffmpeg_exe() -> str:
    """The ffmpeg binary: ``$RESCUE_FFMPEG``, else the system's, else imageio-ffmpeg's."""
    chosen = os.environ.get("RESCUE_FFMPEG") or shutil.which("ffmpeg")
    if chosen:
        return chosen
    try:
        import imageio_ffmpeg  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - a dependency of the package
        raise MediaError("ffmpeg not found: install imageio-ffmpeg (pip install imageio-ffmpeg)") from None
    return str(imageio_ffmpeg.get_ffmpeg_exe())


def run_ffmpeg(args: Sequence[str | Path], *, step: str, subject: str | Path, capture: bool = False) -> bytes:
    """Run ffmpeg with ``args`` (after ``-hide_banner -nostdin``); stdout when ``capture``.

    A failure raises :class:`MediaError` naming the step and its subject, with ffmpeg's last words.
    """
    command = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", *map(str, args)]
    result = proc.run(command, capture=capture)
    if result.returncode != 0:
        tail = result.stderr.decode("utf-8", "replace").strip()[-_STDERR_TAIL:]
        raise MediaError(f"{subject}: {step} failed (ffmpeg exit {result.returncode}): {tail or 'no message'}")
    return result.stdout if capture else b""


def ffmpeg_info(path: str | Path) -> str:
    """What ``ffmpeg -i PATH`` prints about the input (it exits 1 because no output is given)."""
    result = proc.run([ffmpeg_exe(), "-hide_banner", "-nostdin", "-i", str(path)])
    return result.stderr.decode("utf-8", "replace")
