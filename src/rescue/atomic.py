"""The one way rescue writes a file: whole or not at all, and still there after a power cut.

Every file a command produces is first written to a temporary name beside it, ``.NAME.PID.tmp`` (hidden,
named by the writing process so two writers never share one and :func:`remove_stale_temporaries` knows a dead
writer's leftovers), flushed to disk (``fsync``), renamed over ``NAME``, and the folder itself is synced so the
new name survives a crash. A reader, a kill -9 or a full disk leaves the old file or the new one, never a
half-written or empty one. New files follow the umask like any other file the user makes.

- :func:`write_atomic` / :func:`write_all_atomic`: text or bytes already in memory.
- :func:`atomic_output`: anything written by name (a child process such as ffmpeg, a streamed download, a
  file written line by line): the block gets the temporary path and the file appears only if it ends cleanly.
- :func:`move_into_place`: files made elsewhere in the same folder tree (a scratch folder of frames).

Each of them replaces only a regular file (:func:`check_target`, also asked before a command's work begins):
a FIFO, a device (``/dev/full``, a terminal), a socket or a folder at the target is refused, and so is a
symbolic link, whatever it points to (the link is never followed nor replaced: the user names the file itself).
Folders on the way to the target are followed like any path (a home folder or a mount may be a link).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from rescue.errors import OutFileError

__all__ = [
    "OutFileError", "atomic_output", "check_target", "move_into_place", "process_alive", "process_started",
    "remove_stale_temporaries", "temporary_path", "write_all_atomic", "write_atomic",
]

TEMP_SUFFIX = ".tmp"
_TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.tmp$")
# Threads of one process share its temporary names: two writing the same file take turns.
_BUSY: set[Path] = set()
_BUSY_CHANGED = threading.Condition()


def temporary_path(path: str | Path) -> Path:
    """Where this process writes ``path`` before it is whole: hidden, beside it, named by the process id so
    two writers never share one and :func:`remove_stale_temporaries` knows a dead writer's leftovers."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}{TEMP_SUFFIX}")


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_target(path: str | Path) -> None:
    """Raise :class:`OutFileError` unless ``path`` is absent or a regular file, the only things rescue replaces.

    A symbolic link is refused whatever it points to (a regular file included): replacing the link would drop
    it, writing through it would write a file the user did not name. Nothing is followed but the folders on the way.
    """
    target = Path(path)
    try:
        info = os.lstat(target)
    except OSError:
        return  # absent (or a folder on the way is missing or not one): the write itself says so
    if stat.S_ISREG(info.st_mode):
        return
    if stat.S_ISLNK(info.st_mode):
        try:
            points = f" to {os.readlink(target)}"
        except OSError:
            points = ""
        raise OutFileError(target, f"a symbolic link{points}; rescue never writes through a link nor replaces "
                           "one: name the file itself (or another path)")
    kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
    raise OutFileError(target, f"is {kind}; rescue writes only regular files and replaces nothing else: name a "
                       "file (a new path, or a regular file to replace)")


@contextlib.contextmanager
def _claimed(temporary: Path) -> Iterator[None]:
    with _BUSY_CHANGED:
        while temporary in _BUSY:
            _BUSY_CHANGED.wait()
        _BUSY.add(temporary)
    try:
        yield
    finally:
        with _BUSY_CHANGED:
            _BUSY.discard(temporary)
            _BUSY_CHANGED.notify_all()


def _sync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_folder(folder: Path) -> None:
    """Make the renames in ``folder`` durable; a file system that cannot sync a folder is left as it is."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _commit(pairs: list[tuple[Path, Path]]) -> None:
    """Sync every temporary, rename each over its target, then sync each folder once."""
    for temporary, target in pairs:
        check_target(target)  # again at the last moment: something may have been put there while it was written
        _sync_file(temporary)
    for temporary, target in pairs:
        os.replace(temporary, target)
    for folder in dict.fromkeys(target.parent for _, target in pairs):
        _sync_folder(folder)


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """Write ``path`` by name: the block writes the yielded temporary path (``.NAME.PID.tmp``), which replaces
    ``path`` only when the block ends without an exception; otherwise it is removed and ``path`` is untouched.
    The temporary's name does not end in NAME's suffix: a child that guesses formats from it must be told."""
    target = Path(path)
    check_target(target)
    temporary = temporary_path(target)
    with _claimed(temporary):
        try:
            yield temporary
            _commit([(temporary, target)])
        finally:
            temporary.unlink(missing_ok=True)


def _write_file(path: Path, data: str | bytes | Iterable[bytes], target: Path) -> None:
    try:
        with path.open("wb") as handle:
            if isinstance(data, (str, bytes)):
                handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            else:  # chunks, written as they come: a large file is never held whole (nor twice, text and bytes)
                for chunk in data:
                    handle.write(chunk)
    except OSError as exc:
        if exc.filename is not None:
            raise
        # A write to an open file (a full disk) names no file: name the one being written, as the user named it.
        raise type(exc)(exc.errno, exc.strerror, str(target)) from exc


def write_atomic(path: str | Path, data: str | bytes | Iterable[bytes]) -> None:
    """Replace ``path`` with ``data`` (text is UTF-8; or chunks of bytes, written as they come) so that no reader
    ever sees a partial file."""
    with atomic_output(path) as temporary:
        _write_file(temporary, data, Path(path))


def write_all_atomic(files: Iterable[tuple[str | Path, str | bytes]]) -> None:
    """Write several files so that each is whole; all of them are on disk before the first replace.

    A kill between two replaces can still leave one file new and the next old; callers that need the pair
    to match record a fingerprint of one in the other (``results.json`` names the hash of
    ``predictions.jsonl``) and check it when reading.
    """
    listed = list(files)
    for path, _ in listed:
        check_target(path)
    with contextlib.ExitStack() as stack:
        staged = []
        for path, data in listed:
            target = Path(path)
            temporary = temporary_path(target)
            stack.enter_context(_claimed(temporary))
            stack.callback(temporary.unlink, missing_ok=True)
            _write_file(temporary, data, target)
            staged.append((temporary, target))
        _commit(staged)


def move_into_place(pairs: Iterable[tuple[str | Path, str | Path]]) -> None:
    """Move files made elsewhere on the same file system (``(made, target)`` pairs) into place, synced like
    :func:`write_atomic`'s: each target is the whole file or absent."""
    _commit([(Path(made), Path(target)) for made, target in pairs])


def _process_stat(pid: int) -> tuple[str, str]:
    """Process ``pid``'s state (``R``, ``S``, ``Z`` ...) and when it started (clock ticks since boot), from /proc;
    "" for what cannot be read. With the pid the start names one process, even once the pid is reused."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return fields[0].decode("ascii"), fields[19].decode("ascii")
    except (OSError, IndexError, UnicodeDecodeError):
        return "", ""


def process_started(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot, from /proc), "" where that cannot be read: kept beside
    a pid, it tells the process from a later one given the same pid (:func:`process_alive`)."""
    return _process_stat(pid)[1]


def process_alive(pid: int, started: str = "") -> bool:
    """Whether process ``pid`` still runs (this one included): it exists, has not ended unreaped (a zombie holds
    nothing: its files and locks went with it), and, when ``started`` is given (:func:`process_started`), is the
    process that started then, not a later one with the same pid."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: alive
    except OSError:
        return False
    state, start = _process_stat(pid)
    return state not in ("Z", "X") and (not started or start in ("", started))


def remove_stale_temporaries(folder: str | Path) -> list[Path]:
    """Delete ``.NAME.PID.tmp`` files in ``folder`` left by processes that no longer run; return what went."""
    root = Path(folder)
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for entry in root.iterdir():
        match = _TEMP_NAME.match(entry.name)
        if match is None or not entry.is_file() or process_alive(int(match["pid"])):
            continue
        try:
            entry.unlink()
        except FileNotFoundError:
            continue
        removed.append(entry)
    return removed
