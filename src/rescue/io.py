"""Files rescue writes and text it shows: the atomic writer and its stale temporary files, the lock on an output
folder and the check of one, file hashes, environment errors worded for people, safe file names, safe display,
Markdown tables.

:func:`write_atomic` writes a file whole: a reader (or a kill -9) sees the old file or the new one, never a
half-written or empty one. Names and texts that come from outside (model ids, sample ids, an endpoint's error
body) pass through :func:`safe_filename` before they name a file, and through :func:`terminal_text` /
:func:`markdown_text` before they reach a terminal or a Markdown table.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from rescue.atomic import (
    TEMP_SUFFIX as TEMP_SUFFIX,
    process_alive as process_alive,
    remove_stale_temporaries as remove_stale_temporaries,
    temporary_path as temporary_path,
    write_all_atomic as write_all_atomic,
    write_atomic as write_atomic,
)
from rescue.data.text import json_safe, latex_text, visible_text
from rescue.data.errors import LockedError as LockedError, OutFolderError as OutFolderError

__all__ = [
    "DirectoryLock", "LockedError", "OutFolderError", "check_out_folder", "json_safe", "latex_text", "markdown_table",
    "environment_error", "markdown_text", "process_alive", "remove_stale_temporaries", "safe_filename", "sha256_file", "temporary_path", "terminal_text", "visible_text",
    "write_all_atomic", "write_atomic",
]

def check_out_folder(out: str | Path, option: str = "--out") -> None:
    """An output folder must be a folder or not exist yet (it is then created); checked before any work."""
    path = Path(out)
    if path.is_symlink() and not path.exists():
        raise OutFolderError(f"{option} {path}: a symbolic link to nothing")
    if path.exists() and not path.is_dir():
        raise OutFolderError(f"{option} {path}: exists and is not a folder; name a folder (it is created if missing)")


def sha256_file(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------------------
# Names and texts from outside

MAX_FILENAME = 80  # far below every file system's 255 bytes, with room for a suffix


def safe_filename(text: str, *, max_length: int = MAX_FILENAME) -> str:
    """A file name for ``text`` (a model or sample id): ASCII letters, digits, ``._-``, at most ``max_length``.

    Readable names stay as they are (``baseline/majority`` -> ``baseline_majority``); a name that had to be
    cut ends in a short hash of the whole id, so two long ids that share a beginning stay apart.
    """
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"
    if len(cleaned) <= max_length:
        return cleaned
    tag = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned[: max_length - len(tag) - 1].rstrip('._-')}-{tag}"


def terminal_text(text: str, *, max_length: int | None = None) -> str:
    """``text`` ready for a rich markup string: controls escaped, ``[...]`` shown literally, never styled."""
    from rich.markup import escape

    return escape(visible_text(text, max_length=max_length))


def markdown_text(text: str, *, max_length: int | None = None) -> str:
    """``text`` for one Markdown table cell: one line, no raw HTML, no column break."""
    shown = visible_text(text, max_length=max_length)
    # Only what could open a tag or an entity is escaped: "p < 0.05" stays readable in the .md file itself.
    shown = _ENTITY_START.sub("&amp;", shown)
    shown = _TAG_START.sub("&lt;", shown)
    for raw, safe in (("|", "\\|"), ("`", "\\`")):
        shown = shown.replace(raw, safe)
    return shown


_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")  # <b>, </x>, <!-- ... -->, <?x: never "< 0.05" or "a <= b"
_ENTITY_START = re.compile(r"&(?=#?\w+;)")  # &lt; &#60; as text, not as the characters they name


# ---------------------------------------------------------------------------------------------------------
# One writer per folder


class DirectoryLock:
    """An exclusive, non-blocking ``flock`` on ``FOLDER/.rescue.lock``, released when the holder exits or dies.

    The kernel drops the lock with the process, so a kill -9 never leaves a folder locked.
    """

    NAME = ".rescue.lock"

    def __init__(self, folder: str | Path):
        self.path = Path(folder) / self.NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise LockedError naming the process that holds it."""
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                holder: int | None = int(os.read(fd, 32).decode("ascii", "replace").strip() or "x")
            except ValueError:
                holder = None
            os.close(fd)
            raise LockedError(self.path, holder) from None
        self._fd = fd
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        except OSError:
            pass  # a full disk: the lock holds all the same; only the holder's pid is not there to name

    @classmethod
    def writer(cls, folder: str | Path) -> int | None:
        """The process holding ``folder``'s lock now (-1 when it cannot be named), None when nobody does.
        A folder without a lock file was never written by a locking command and is left as it is."""
        if not (Path(folder) / cls.NAME).is_file():
            return None
        probe = cls(folder)
        try:
            probe.acquire()
        except LockedError as exc:
            return exc.pid if exc.pid is not None else -1
        except OSError:
            return None
        probe.release()
        return None

    def release(self) -> None:
        """Release the lock (nothing when it is not held)."""
        if self._fd is not None:
            import fcntl

            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> DirectoryLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A GitHub Markdown table; every cell through :func:`markdown_text` (one line, no raw HTML, ``|`` escaped)."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(markdown_text(str(c)) for c in cells) + " |"

    return "\n".join([line(headers), "|" + "---|" * len(headers), *(line(r) for r in rows)]) + "\n"


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def is_disk_full(exc: BaseException) -> bool:
    """An OSError of a full disk or quota, a file over the size limit, or SQLite's "database or disk is full"."""
    if isinstance(exc, OSError) and exc.errno in _FULL:
        return True
    text = str(exc)
    return type(exc).__name__ in ("OperationalError", "DatabaseError", "DiskFull") and (
        "disk is full" in text or "No space left on device" in text)


def environment_error(exc: BaseException) -> str:
    """One line for an error of the machine (not of the input or of rescue): what failed, where, and that what
    was written before is intact (every file is written whole or not at all, answers are committed one by one)."""
    where = getattr(exc, "filename", None)
    place = f"{where}: " if where else ""
    if is_disk_full(exc):
        return (f"{place}the disk is full (or its quota or the file size limit is reached): {exc}. Nothing was "
                "lost: every file written before is whole, answers already received are kept in the cache. Free "
                "some space and run the same command again.")
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return f"{place}{reason}. Nothing was lost: every file written before is whole; fix this and run the command again."
