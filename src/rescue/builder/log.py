"""``DIR/build.log``: one JSON object per line, each step named with its subject and outcome. It is also
the event log the model layer writes request failures to."""

from __future__ import annotations

from typing import Any

from rescue.files import JsonLinesLog


class BuildLog(JsonLinesLog):
    """build.log: one JSON line per event, flushed as written (no file when ``path`` is None)."""

    def step(self, step: str, subject: str, done: bool, **fields: Any) -> None:
        """A media or annotation step: ``done`` when it ran now, else it was already there (resumed)."""
        self.event("step", step=step, subject=subject, status="done" if done else "skipped", **fields)
