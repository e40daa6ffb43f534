"""Reading raw sample records from the release files (.jsonl, folders of .jsonl or per-sample .json, the
bundled demo) without validating them; :mod:`rescue.data.validation` checks them and
:func:`rescue.data.loading.load_samples` does both."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rescue.data.errors import DataError, DataIssue
from rescue.data.models import NON_PERSON_LABELS, Scenario

DEMO_PACKAGE = "rescue.data.demo"


@dataclass
class RawRecord:
    """One sample as read, before validation."""

    file: str
    line: int
    data: Any  # the parsed JSON value (normally a dict); None when it did not parse
    parse_error: str = ""  # set exactly when the line could not be read as JSON
    ascii_only: bool = False  # the source text is plain ASCII with no \u escapes (lets validation skip work)


def demo_path() -> Path:
    """The bundled demo dataset (our own writing, in the release format)."""
    return Path(str(resources.files(DEMO_PACKAGE).joinpath("demo.jsonl")))


def _parse_line(display: str, number: int, raw: bytes) -> RawRecord:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return RawRecord(display, number, None, f"not UTF-8 text (byte {exc.start + 1} of the line)")
    try:
        # Without the newline a truncated line reports the column where it stops, not "line 2 column 1".
        data = json.loads(text.rstrip("\r\n"))
    except json.JSONDecodeError as exc:
        return RawRecord(display, number, None, f"invalid JSON: {exc.msg} at column {exc.colno}")
    return RawRecord(display, number, data, ascii_only=raw.isascii() and b"\\u" not in raw)


def _read_jsonl(path: Path, display: str) -> Iterator[RawRecord]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                yield _parse_line(display, number, raw)


def infer_scenario(sample_id: str, rows: list[Any]) -> Scenario:
    """The authors' rule: a family_therapy/ path, or the group label Family anywhere a person can be named."""
    if sample_id.startswith("family_therapy/") or "/family_therapy/" in sample_id:
        return "family"
    for row in rows:
        if not isinstance(row, dict):
            continue
        if str(row.get("primary_speaker", "")).strip() == "Family":
            return "family"
        if "Family" in _names(row.get("target")):
            return "family"
        for item in _items(row.get("support_strategy")):
            if "Family" in _names(item.get("target")):
                return "family"
    return "couple"


def infer_participants(rows: list[Any]) -> list[str]:
    """The authors' rule: speakers, row targets and strategy targets in first-seen order, minus Therapist and groups."""
    seen: dict[str, None] = {}
    for row in rows:
        if not isinstance(row, dict):
            continue
        names = [str(row.get("primary_speaker", "")), *_names(row.get("target"))]
        for item in _items(row.get("support_strategy")):
            names.extend(_names(item.get("target")))
        for name in names:
            name = name.strip()
            if name and name not in NON_PERSON_LABELS:
                seen.setdefault(name)
    return list(seen)


def _names(value: Any) -> list[str]:
    # Raw rows are not validated yet: tolerate wrong types here and let validation report them.
    return [str(v) for v in value] if isinstance(value, list) else []


def _items(value: Any) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _read_sample_json(path: Path, root: Path) -> RawRecord:
    """A per-sample file as the authors' scripts expect it: ``<group>/<sample>.json`` holding ``rows``."""
    display = str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        return RawRecord(display, 1, None, f"not UTF-8 text (byte {exc.start + 1} of the file)")
    except json.JSONDecodeError as exc:
        return RawRecord(display, exc.lineno, None, f"invalid JSON: {exc.msg} at column {exc.colno}")
    if isinstance(data, dict) and isinstance(data.get("rows"), list):
        sample_id = path.relative_to(root).with_suffix("").as_posix()
        data.setdefault("sample_id", sample_id)
        data.setdefault("scenario", infer_scenario(sample_id, data["rows"]))
        data.setdefault("participants", infer_participants(data["rows"]))
        data.setdefault("source_file", path.relative_to(root).as_posix())
    return RawRecord(display, 1, data)


def iter_records(path: str | Path | None) -> Iterator[RawRecord]:
    """Yield raw sample records from a .jsonl file, a folder of .jsonl files, or a folder of per-sample .json files."""
    if path is None:
        yield from _read_jsonl(demo_path(), "<demo>/demo.jsonl")
        return
    root = Path(path)
    if not root.exists():
        raise DataError([DataIssue(str(root), 0, "no such file or directory")])
    if root.is_file():
        if root.suffix == ".json":
            yield _read_sample_json(root, root.parent)
        else:
            yield from _read_jsonl(root, str(root))
        return
    jsonl_files = sorted(root.rglob("*.jsonl"))
    if jsonl_files:
        for file in jsonl_files:
            yield from _read_jsonl(file, str(file))
        return
    json_files = sorted(p for p in root.rglob("*.json") if p.name != "manifest.json")
    if not json_files:
        raise DataError([DataIssue(str(root), 0, "no .jsonl or .json sample files found")])
    for file in json_files:
        yield _read_sample_json(file, root)
