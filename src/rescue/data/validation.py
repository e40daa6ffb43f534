"""Validation of raw sample records: schema (pydantic) first, then the benchmark's own rules.

MINIMAL VERSION: schema errors only. Semantic checks (times, intensity range, speakers, taxonomy labels,
evidence rows, duplicate ids, mojibake warnings) are to be added here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import ValidationError

from rescue.data.errors import DataIssue
from rescue.data.loading import RawRecord
from rescue.data.models import Sample


@dataclass
class ValidationReport:
    samples: list[Sample] = field(default_factory=list)
    issues: list[DataIssue] = field(default_factory=list)

    @property
    def errors(self) -> list[DataIssue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[DataIssue]:
        return [i for i in self.issues if i.severity == "warning"]


def _schema_issues(record: RawRecord, exc: ValidationError) -> list[DataIssue]:
    data = record.data if isinstance(record.data, dict) else {}
    sample_id = str(data.get("sample_id", ""))
    issues = []
    for err in exc.errors():
        loc = list(err["loc"])
        row = None
        if len(loc) >= 2 and loc[0] == "rows" and isinstance(loc[1], int):
            rows = data.get("rows") or []
            raw_row = rows[loc[1]] if loc[1] < len(rows) else {}
            row = raw_row.get("row_index", loc[1] + 1) if isinstance(raw_row, dict) else loc[1] + 1
            loc = loc[2:]
        field_name = ".".join(str(part) if not isinstance(part, int) else f"[{part}]" for part in loc).replace(".[", "[")
        message = err["msg"].lower() if err["type"] == "missing" else f"{err['msg']} (got {err.get('input')!r:.60})"
        issues.append(DataIssue(record.file, record.line, message, field_name, sample_id, row))
    return issues


def validate_records(records: list[RawRecord]) -> ValidationReport:
    report = ValidationReport()
    for record in records:
        if record.data is None:
            report.issues.append(DataIssue(record.file, record.line, record.parse_error))
            continue
        if not isinstance(record.data, dict):
            report.issues.append(DataIssue(record.file, record.line, "a sample must be a JSON object"))
            continue
        try:
            sample = Sample.model_validate(record.data)
        except ValidationError as exc:
            report.issues.extend(_schema_issues(record, exc))
            continue
        sample.origin_file, sample.origin_line = record.file, record.line
        report.samples.append(sample)
    return report
