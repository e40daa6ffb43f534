"""The data's own errors: :class:`DataIssue` (one problem found in the data, with where it is) and
:class:`DataError`, which carries every issue found. Every other exception, the base :class:`RescueError` and
the exit codes live one floor below, in :mod:`rescue.errors`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rescue.errors import RescueError

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class DataIssue:
    """One problem found in the data: where (file, line, sample, row, field), what, how grave, and the rule broken."""

    file: str
    line: int
    message: str
    field: str = ""
    sample_id: str = ""
    row: int | None = None
    severity: Severity = "error"
    rule: str = ""  # the rulebook's id (rescue.data.rules) when a rule of it is broken

    def __str__(self) -> str:
        from rescue.data.text import visible_text

        # Ids and messages quote the data: control characters and lone surrogates are shown escaped.
        return visible_text(self._text())

    def _text(self) -> str:
        if self.line == 0 and not self.sample_id:  # about the path itself, not a line in it
            text = f"{self.file}: {self.message}"
            return text if self.severity == "error" else f"{text} (warning)"
        where = f"{self.file}:{self.line}:"
        subject = self.sample_id or "<no sample_id>"
        if self.row is not None:
            subject += f" row {self.row}"
        parts = [where, f"{subject}:"]
        if self.field:
            parts.append(f"{self.field}:")
        parts.append(self.message)
        text = " ".join(parts)
        return text if self.severity == "error" else f"{text} (warning)"


class DataError(RescueError):
    """Input data is invalid; carries every issue found, not just the first."""

    def __init__(self, issues: list[DataIssue]):
        self.issues = issues
        errors = [i for i in issues if i.severity == "error"]
        head = "\n".join(str(i) for i in errors[:20])
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"{len(errors)} data error(s):\n{head}{more}\nRun `rescue validate --data PATH` for the full list.")


class ProjectError(DataError):
    """A project folder that cannot be read, with every problem."""
