"""Finding and running ffmpeg (always through :func:`rescue.proc.run`: a child that ends with rescue).

The system's ffmpeg wins where present (it may have hardware encoders); otherwise imageio-ffmpeg's static
binary, which ``pip install`` brings, so a fresh machine needs no extra step. ffprobe is not assumed:
imageio-ffmpeg ships none, so probing parses ``ffmpeg -i`` (see :mod:`rescue.media._probe`).
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rescue import proc
from rescue.errors import MediaError as MediaError

# ffmpeg's own messages are long; the last lines say what went wrong.
_STDERR_TAIL = 1200


@functools.cache
def ffmpeg_exe() -> str:
    """The ffmpeg binary: ``$RESCUE_FFMPEG``, else the system's, else imageio-ffmpeg's."""
    chosen = os.environ.get("RESCUE_FFMPEG") or shutil.which("ffmpeg")
    if chosen:
        return chosen
    try:
        import imageio_ffmpeg
    except ImportError:  # pragma: no cover - a dependency of the package
        raise MediaError("ffmpeg not found: install imageio-ffmpeg (pip install imageio-ffmpeg)") from None
    return str(imageio_ffmpeg.get_ffmpeg_exe())


# Every ffmpeg call is bounded in proportion to the media it works on: BASE seconds plus PER_SECOND seconds
# per second of media (a 3840x2160 60 fps clip must not hold a build for ever). Generous for any machine that
# can do the work at all; RESCUE_MEDIA_TIME_BASE / RESCUE_MEDIA_TIME_PER_SECOND change them.
TIME_BASE = 120.0
TIME_PER_SECOND = 20.0


def time_limit(duration: float | None) -> float:
    """Seconds an ffmpeg step on ``duration`` seconds of media may take (None: a probe, base only)."""
    base = float(os.environ.get("RESCUE_MEDIA_TIME_BASE") or TIME_BASE)
    per_second = float(os.environ.get("RESCUE_MEDIA_TIME_PER_SECOND") or TIME_PER_SECOND)
    return base + per_second * max(0.0, duration or 0.0)


def run_bounded(command: Sequence[str | Path], *, step: str, subject: str | Path, duration: float | None,
                capture: bool = False) -> Any:
    """:func:`rescue.proc.run` within :func:`time_limit`; past it, a :class:`MediaError` naming step and bound."""
    limit = time_limit(duration)
    try:
        return proc.run(command, capture=capture, timeout=limit)
    except proc.TimedOut:
        media = f"{duration:.1f} s of media" if duration else "a probe"
        raise MediaError(f"{subject}: {step} took longer than {limit:.0f} s, the limit for {media} "
                         "(RESCUE_MEDIA_TIME_BASE + RESCUE_MEDIA_TIME_PER_SECOND per second of media); ffmpeg was "
                         "stopped. A very large or high-frame-rate video may need converting first.") from None


def run_ffmpeg(args: Sequence[str | Path], *, step: str, subject: str | Path, capture: bool = False,
               duration: float | None = None) -> bytes:
    """Run ffmpeg with ``args`` (after ``-hide_banner -nostdin``); stdout when ``capture``; within the time
    limit for ``duration`` seconds of media.

    A failure raises :class:`MediaError` naming the step and its subject, with ffmpeg's last words.
    """
    command = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", *map(str, args)]
    result = run_bounded(command, step=step, subject=subject, duration=duration, capture=capture)
    if result.returncode != 0:
        tail = result.stderr.decode("utf-8", "replace").strip()[-_STDERR_TAIL:]
        raise MediaError(f"{subject}: {step} failed (ffmpeg exit {result.returncode}): {tail or 'no message'}")
    return result.stdout if capture else b""


def ffmpeg_info(path: str | Path) -> str:
    """What ``ffmpeg -i PATH`` prints about the input (it exits 1 because no output is given)."""
    result = run_bounded([ffmpeg_exe(), "-hide_banner", "-nostdin", "-i", str(path)], step="probe", subject=path,
                         duration=None)
    info: str = result.stderr.decode("utf-8", "replace")
    return info
