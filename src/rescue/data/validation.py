"""Validation of raw sample records: schema (pydantic, strict types) first, then the benchmark's own rules.

Every problem becomes a :class:`DataIssue` located by file, line, sample, row and field. Errors make a
sample unusable; warnings (mis-encoded text, evidence rows numbered from 0, cue persons outside the cast)
are reported but the sample is still loaded, because the official release itself has them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rescue.data.encoding import fix_text, non_ascii_strings
from rescue.data.errors import DataError, DataIssue, Severity
from rescue.data.reading import RawRecord, infer_scenario, iter_records
from rescue.data.models import Sample, share_field_names
from rescue.data.rules import cast_of, check_row, severity_in
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class ValidationReport:
    """What reading and validating a dataset found: the valid samples, every issue, the records read."""

    samples: list[Sample] = field(default_factory=list)
    issues: list[DataIssue] = field(default_factory=list)
    records: int = 0  # records read, valid or not

    @property
    def errors(self) -> list[DataIssue]:
        """The issues that make the data unusable."""
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[DataIssue]:
        """The issues worth knowing that do not stop a command."""
        return [i for i in self.issues if i.severity == "warning"]

    @property
    def mis_encoded(self) -> int:
        """Issues `rescue validate --fix` repairs (said once after the list, not on every line)."""
        return sum(1 for i in self.issues if i.message.startswith(MIS_ENCODED))


MIS_ENCODED = "mis-encoded text"


# --- schema ------------------------------------------------------------------------------------------------

# pydantic appends the member type of a failed union ("intensity.int", "intensity.float"); users need the field.
_UNION_TAGS = frozenset({"int", "float", "str", "bool", "none", "list", "dict"})
_TYPE_NAMES = {
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "bool_type": "true or false",
    "literal_error": "",
}


def _schema_issues(record: RawRecord, exc: ValidationError) -> list[DataIssue]:
    data = record.data if isinstance(record.data, dict) else {}
    sample_id = str(data.get("sample_id", ""))
    rows: list[Any] = data["rows"] if isinstance(data.get("rows"), list) else []
    found: dict[tuple[int | None, str], list[Any]] = {}
    for err in exc.errors():
        loc = [part for part in err["loc"] if not (isinstance(part, str) and part in _UNION_TAGS)]
        row = None
        if len(loc) >= 2 and loc[0] == "rows" and isinstance(loc[1], int):
            raw_row = rows[loc[1]] if loc[1] < len(rows) else {}
            row = raw_row.get("row_index", loc[1] + 1) if isinstance(raw_row, dict) else loc[1] + 1
            if not isinstance(row, int) or isinstance(row, bool):
                row = loc[1] + 1
            loc = loc[2:]
        field_name = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        found.setdefault((row, field_name), []).append(err)
    issues = []
    for (row, field_name), errs in found.items():
        issues.append(DataIssue(record.file, record.line, _schema_message(errs), field_name, sample_id, row))
    return issues


def _schema_message(errs: list[Any]) -> str:
    first = errs[0]
    if first["type"] == "missing":
        return "missing"
    got = f"(got {first.get('input')!r:.60})"
    if first["type"] == "literal_error":
        return f"{first['msg'].lower()} {got}"
    expected = [_TYPE_NAMES.get(e["type"]) for e in errs]
    if all(expected):
        return f"expected {' or '.join(dict.fromkeys(expected))} {got}"  # type: ignore[arg-type]
    return f"{first['msg']} {got}"


# --- the benchmark's rules ----------------------------------------------------------------------------------


class _Collector:
    """Issues of one sample, so each check only says what is wrong and where."""

    def __init__(self, record: RawRecord, sample_id: str, strict: bool = False):
        self.record = record
        self.sample_id = sample_id
        self.strict = strict
        self.issues: list[DataIssue] = []

    def add(self, message: str, field_name: str = "", row: int | None = None, severity: Severity = "error",
            rule: str = "") -> None:
        self.issues.append(
            DataIssue(self.record.file, self.record.line, message, field_name, self.sample_id, row, severity, rule)
        )


def _check_times(sample: Sample, out: _Collector) -> None:
    previous_start: float | None = None
    for row in sample.rows:
        for name in ("start_time", "end_time"):
            value = getattr(row, name)
            if value < 0:
                out.add(f"negative time {value}", name, row.row_index)
        if row.end_time < row.start_time:
            out.add(f"end_time {row.end_time} is before start_time {row.start_time}", "end_time", row.row_index)
        # Turns may overlap (people talk over each other), so only a start earlier than the previous start is wrong.
        if previous_start is not None and row.start_time < previous_start:
            out.add(
                f"start_time {row.start_time} is earlier than the previous row's start_time {previous_start}",
                "start_time",
                row.row_index,
            )
        previous_start = row.start_time


def _check_row_numbers(sample: Sample, out: _Collector) -> None:
    if not sample.rows:
        out.add("a sample needs at least one row", "rows")
    for position, row in enumerate(sample.rows, start=1):
        if row.row_index != position:
            out.add(f"expected {position} (rows are numbered from 1 in order), got {row.row_index}", "row_index", position)


def _check_rules(sample: Sample, out: _Collector) -> None:
    """The rulebook (rescue.data.rules) on every row, read from the record as the file holds it."""
    cast = cast_of(sample.scenario, sample.participants)
    raw_rows = out.record.data["rows"]
    for row, raw in zip(sample.rows, raw_rows):
        for breach in check_row(raw, cast):
            severity = severity_in(breach.rule, out.strict)
            # A rule newer than the release: say what --strict would make of it.
            note = f" [{breach.rule.id}: an error with --strict]" if severity != breach.severity else ""
            out.add(breach.message + note, breach.field, row.row_index, severity, breach.rule.id)


def _check_evidence(sample: Sample, out: _Collector) -> None:
    count = len(sample.rows)
    for row in sample.rows:
        for name in ("relation_pattern_evidence_rows", "relation_cycle_evidence_rows"):
            for i, ref in enumerate(getattr(row, name) or []):
                if ref == 0:
                    # The release has a few of these: a 0-based index slipped into 1-based evidence lists.
                    out.add("row 0 does not exist (rows are numbered from 1)", f"{name}[{i}]", row.row_index, "warning")
                elif not 1 <= ref <= count:
                    out.add(f"row {ref} is out of range 1-{count}", f"{name}[{i}]", row.row_index)


def _check_scenario(sample: Sample, out: _Collector) -> None:
    if infer_scenario(sample.sample_id, out.record.data.get("rows") or []) == "family" and sample.scenario == "couple":
        out.add(
            "is 'couple' but the rows name the group label Family (the authors' scripts would treat it as family)",
            "scenario",
            severity="warning",
        )


def _check_encoding(record: RawRecord, out: _Collector) -> None:
    if record.ascii_only:  # the common case: nothing non-ASCII anywhere in the record, so no mojibake
        return
    rows = record.data.get("rows") if isinstance(record.data.get("rows"), list) else []
    for path, text in non_ascii_strings(record.data):
        surrogate = _SURROGATE.search(text)
        fixed = text if surrogate else fix_text(text)
        if fixed == text and not surrogate:
            continue
        row, field_name = _row_of(path, rows)
        if surrogate:
            # Half of a UTF-16 pair, escaped in the JSON: no UTF-8 file, prompt or cache key can hold it.
            at = surrogate.start()
            out.add(f"lone UTF-16 surrogate \\u{ord(text[at]):04x} in {text[max(0, at - 12) : at + 12]!r}; text must "
                    "be valid Unicode (write the character itself, or a \\uXXXX pair)", field_name, row)
            continue
        bad = next((i for i, (a, b) in enumerate(zip(text, fixed)) if a != b), 0)
        out.add(
            f"{MIS_ENCODED} {text[max(0, bad - 12) : bad + 12]!r}, probably "
            f"{fixed[max(0, bad - 12) : bad + 10]!r}",
            field_name,
            row,
            "warning",
        )


def _row_of(path: str, rows: list[Any]) -> tuple[int | None, str]:
    """``rows[3].start_time`` -> (that row's row_index, ``start_time``); other paths have no row."""
    if not path.startswith("rows[") or "]" not in path:
        return None, path
    position = int(path[5 : path.index("]")])
    raw_index = rows[position].get("row_index") if position < len(rows) and isinstance(rows[position], dict) else None
    row = raw_index if type(raw_index) is int else position + 1
    return row, path[path.index("]") + 2 :]


def _in_row_order(issues: list[DataIssue]) -> list[DataIssue]:
    """As a reader walks the file: sample-level issues first, then row by row (stable within a row)."""
    return sorted(issues, key=lambda issue: -1 if issue.row is None else issue.row)


SAMPLE_CHECKS = (_check_row_numbers, _check_times, _check_rules, _check_evidence, _check_scenario)


def check_sample(sample: Sample, record: RawRecord, strict: bool = False) -> list[DataIssue]:
    """The benchmark's rules for one schema-valid sample (``strict``: the rulebook at its own severities)."""
    out = _Collector(record, sample.sample_id, strict)
    if not sample.sample_id.strip():
        out.add("must not be empty", "sample_id")
    for check in SAMPLE_CHECKS:
        check(sample, out)
    return out.issues


def _validate_record(record: RawRecord, first_seen: dict[str, str], strict: bool,
                     keep_text: bool = True) -> tuple[Sample | None, list[DataIssue]]:
    if record.parse_error:
        return None, [DataIssue(record.file, record.line, record.parse_error)]
    if not isinstance(record.data, dict):
        got = json.dumps(record.data)[:40]
        return None, [DataIssue(record.file, record.line, f"a sample must be a JSON object (got {got})")]
    encoding = _Collector(record, str(record.data.get("sample_id", "")))
    if record.not_finite:
        rows: list[Any] = record.data["rows"] if isinstance(record.data.get("rows"), list) else []
        for path, spelling in record.not_finite:
            row, field_name = _row_of(path, rows)
            encoding.add(f"{spelling} is not a JSON number (a finite number is needed)", field_name, row)
        return None, _in_row_order(encoding.issues)
    _check_encoding(record, encoding)
    try:
        sample = Sample.model_validate(record.data, strict=True)
    except ValidationError as exc:
        return None, _in_row_order(encoding.issues + _schema_issues(record, exc))
    issues = encoding.issues + check_sample(sample, record, strict)
    if sample.sample_id in first_seen:
        issues.append(
            DataIssue(
                record.file, record.line, f"duplicate (first seen at {first_seen[sample.sample_id]})", "sample_id",
                sample.sample_id,
            )
        )
    else:
        first_seen[sample.sample_id] = f"{record.file}:{record.line}"
    if any(issue.severity == "error" for issue in issues):
        return None, _in_row_order(issues)
    sample.origin_file, sample.origin_line = record.file, record.line
    if keep_text:
        sample.keep_release_text(record.text if record.text is not None else json.dumps(record.data, ensure_ascii=False))
    share_field_names(sample)
    return sample, _in_row_order(issues)


def validate_records(records: Iterable[RawRecord], strict: bool = False, *, keep_text: bool = True) -> ValidationReport:
    """Validate every record; valid samples (warnings allowed) are kept, every issue is reported.

    ``strict`` applies every rule of the rulebook at its own severity; without it, breaches of rules newer
    than the release format (``Rule.lenient``) are warnings. ``keep_text=False``: the samples keep no copy of
    their records' text (:meth:`Sample.release_json` then writes the model's fields as set)."""
    report = ValidationReport()
    first_seen: dict[str, str] = {}  # sample_id -> FILE:LINE, for duplicate messages
    for record in records:
        report.records += 1
        sample, issues = _validate_record(record, first_seen, strict, keep_text)
        report.issues.extend(issues)
        if sample is not None:
            report.samples.append(sample)
    return report


def validate_path(path: str | Path | None, strict: bool = False) -> ValidationReport:
    """Read and validate everything under ``path`` (the demo dataset when None)."""
    try:
        return validate_records(iter_records(path), strict)
    except DataError as exc:  # the path itself is unusable (missing, or holds no sample files)
        return ValidationReport(issues=list(exc.issues))
