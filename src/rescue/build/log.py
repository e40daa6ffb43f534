"""``DIR/build.log``: one JSON object per line, each step named with its subject and outcome. It is also
the event log the model layer writes request failures to."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any


class BuildLog:
    """build.log: one JSON line per event, flushed as written (no file when ``path`` is None)."""

    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.Lock()
        self._file = None if path is None else path.open("a", encoding="utf-8")

    def event(self, event: str, **fields: Any) -> None:
        """Append one event with its fields and the time."""
        if self._file is None:
            return
        line = json.dumps({"time": round(time.time(), 3), "event": event, **fields}, ensure_ascii=False, default=str)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def step(self, step: str, subject: str, done: bool, **fields: Any) -> None:
        """A media or annotation step: ``done`` when it ran now, else it was already there (resumed)."""
        self.event("step", step=step, subject=subject, status="done" if done else "skipped", **fields)

    def close(self) -> None:
        """Close the log file."""
        if self._file is not None:
            self._file.close()
            self._file = None
