"""Child processes that end with rescue: however rescue ends, no child (ffmpeg) keeps running.

- Each child runs in its own process group, so the terminal's Ctrl-C reaches rescue alone and rescue decides
  when the child stops (it is killed, then waited for, before the exception moves on).
- On Linux each child asks the kernel for SIGKILL when rescue dies (``prctl(PR_SET_PDEATHSIG)``), so even a
  ``kill -9`` of rescue takes its children along; a child whose parent died before that request exits at once.
- :func:`ending_children_on_signals` turns SIGTERM (what ``timeout``, systemd and schedulers send) into an
  exit that runs every ``finally`` (temporaries removed), after killing the children of every thread; from
  then on no thread starts a new child (:class:`Stopping`).

A child left running would go on writing into a file a rerun may also write, or hold a port.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from rescue.errors import Stopping as Stopping, Terminated as Terminated, TimedOut as TimedOut

__all__ = ["Stopping", "Terminated", "ending_children_on_signals", "kill_children", "run", "running_children"]

_PR_SET_PDEATHSIG = 1
_LIVE: set[subprocess.Popen[bytes]] = set()
# Re-entrant: the signal handlers take it in the main thread, which may hold it already (starting a child).
_LIVE_LOCK = threading.RLock()
# Set once a signal stops rescue: no new child starts, so a worker thread cannot start one after the kill.
_STOPPING = threading.Event()


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):  # pragma: no cover - a Linux without glibc's prctl
        return None


# Resolved in the parent: between fork and exec the child must not load libraries.
_PRCTL = _load_prctl()


def _child_setup(parent: int) -> Callable[[], None]:
    def setup() -> None:  # runs in the child between fork and exec
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # rescue died before the request above: nobody would stop this child
            os._exit(137)

    return setup


def run(command: Sequence[str | Path], *, capture: bool = False, env: dict[str, str] | None = None,
        timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``command`` to its end (stdout kept when ``capture``, stderr always kept) as a child that ends with
    rescue; any exception while it runs (Ctrl-C, SIGTERM) kills it, waits for it, and moves on. Past
    ``timeout`` seconds it is killed the same way and :class:`TimedOut` is raised. Once a signal stops rescue,
    :class:`Stopping` is raised instead of starting the child (a thread of a stopping rescue starts none)."""
    with _LIVE_LOCK:  # started and registered under the lock: a kill of every child never misses this one
        if _STOPPING.is_set():
            raise Stopping()
        process = subprocess.Popen(
            [str(part) for part in command], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
            process_group=0, preexec_fn=_child_setup(os.getpid()),
        )
        _LIVE.add(process)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        process.communicate()
        raise TimedOut(timeout or 0.0) from None
    except BaseException:
        _kill(process)
        process.wait()
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(process)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout or b"", stderr or b"")


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def running_children() -> list[int]:
    """The process ids of the children :func:`run` is waiting for now (every thread's)."""
    with _LIVE_LOCK:
        return [process.pid for process in _LIVE]


def kill_children(*, stopping: bool = False) -> None:
    """Kill every child :func:`run` is waiting for, in every thread; their waits then return at once.
    ``stopping``: no child starts any more either, until :func:`ending_children_on_signals` is left."""
    with _LIVE_LOCK:
        if stopping:
            _STOPPING.set()
        live = list(_LIVE)
    for process in live:
        _kill(process)


@contextlib.contextmanager
def ending_children_on_signals() -> Iterator[None]:
    """While the block runs (main thread only): SIGTERM kills the children and raises :class:`Terminated`;
    Ctrl-C kills them too before the usual KeyboardInterrupt. The previous handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum: int, frame: FrameType | None) -> Any:
        kill_children(stopping=True)
        raise Terminated()

    def on_int(signum: int, frame: FrameType | None) -> Any:
        if previous_int == signal.SIG_IGN:
            kill_children()
            return None
        kill_children(stopping=True)
        if callable(previous_int):
            return previous_int(signum, frame)
        raise KeyboardInterrupt

    previous_term = signal.signal(signal.SIGTERM, on_term)
    previous_int = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, on_int)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        signal.signal(signal.SIGINT, previous_int)
        _STOPPING.clear()
