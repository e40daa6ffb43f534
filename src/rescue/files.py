"""Files and folders: ids from data made safe file names (:func:`safe_filename`: a slug, plus a hash when cut; a
name a file chose is checked by :func:`rescue.data.names.path_name` instead), file hashes, the check of an output
folder option, one writer per output folder (:class:`DirectoryLock`), and the one JSON-lines event log
(:class:`JsonLinesLog`: ``run.log``, ``build.log``)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import IO, Any

from rescue.atomic import check_target
from rescue.errors import LockedError as LockedError, OutFolderError as OutFolderError

__all__ = ["DirectoryLock", "JsonLinesLog", "LockedError", "OutFolderError", "check_out_folder", "safe_filename", "sha256_file"]


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

        # Never through a link nor into a FIFO or device: the lock file is truncated and written (a link to a
        # system file would be emptied).
        check_target(self.path)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
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


class JsonLinesLog:
    """An event log file: one JSON object per line (``{"time", "event", ...fields}``), appended (a resumed
    command continues the same file) and flushed per event, so a kill loses at most the line being written.
    No file when ``path`` is None: :meth:`event` then records nothing. Safe to share between threads."""

    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.Lock()
        if path is not None:
            check_target(path)  # a FIFO there would block the command before it began; a device would take the log
        self._handle: IO[str] | None = None if path is None else path.open("a", encoding="utf-8")

    def event(self, event: str, **fields: Any) -> None:
        """Append one event with its fields and the time."""
        if self._handle is None:
            return
        line = json.dumps({"time": round(time.time(), 3), "event": event, **fields}, ensure_ascii=False, default=str)
        with self._lock:
            self._handle.write(line + "\n")
            self._handle.flush()

    def close(self) -> None:
        """Close the file (later events record nothing)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
