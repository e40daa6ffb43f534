"""Problems found in input data, located by file, line, sample, row and field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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


class RescueError(Exception):
    """Base class of errors a user can hit and fix; the CLI prints the message and exits with ``exit_code``."""

    exit_code = 2


class DataError(RescueError):
    """Input data is invalid; carries every issue found, not just the first."""

    def __init__(self, issues: list[DataIssue]):
        self.issues = issues
        errors = [i for i in issues if i.severity == "error"]
        head = "\n".join(str(i) for i in errors[:20])
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"{len(errors)} data error(s):\n{head}{more}\nRun `rescue validate --data PATH` for the full list.")
