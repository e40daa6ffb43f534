"""Reading raw sample records from the release files (.jsonl, folders of .jsonl or per-sample .json, the
bundled demo) without validating them; :mod:`rescue.data.validation` checks them and
:func:`rescue.data.loading.load_samples` does both."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rescue.data import readback
from rescue.data.errors import DataError, DataIssue
from rescue.errors import RescueError
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
    not_finite: list[tuple[str, str]] = field(default_factory=list)  # (path, NaN|Infinity|-Infinity): not JSON
    # The record's JSON text exactly as the file holds it (a .jsonl line without its newline); None where the reader
    # filled in fields the file lacks (a per-sample .json), so the text would not be the record.
    text: str | None = None


def demo_path() -> Path:
    """The bundled demo dataset (our own writing, in the release format)."""
    return Path(str(resources.files(DEMO_PACKAGE).joinpath("demo.jsonl")))


class _NonFinite(float):
    """NaN or ±Infinity as read: a float that remembers its spelling so validation can name it and its field."""

    spelling: str


def _mark_constant(name: str) -> float:
    # NaN and ±Infinity are not JSON (json.dumps writes them, other readers refuse them); a time or
    # intensity that is not a finite number breaks every later step, so validation rejects them by field.
    value = _NonFinite(name.replace("Infinity", "inf"))
    value.spelling = name
    return value


def not_finite_paths(value: Any, path: str = "") -> list[tuple[str, str]]:
    """``(path, spelling)`` of every NaN/Infinity read from JSON inside ``value``."""
    found: list[tuple[str, str]] = []
    if isinstance(value, _NonFinite):
        found.append((path, value.spelling))
    elif isinstance(value, dict):
        for key, item in value.items():
            found += not_finite_paths(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += not_finite_paths(item, f"{path}[{index}]")
    return found


class _NotJson(ValueError):
    pass


def _loads(text: str) -> Any:
    """``json.loads`` that marks NaN/Infinity and turns depth and size limits into one-line reasons."""
    try:
        return json.loads(text, parse_constant=_mark_constant)
    except json.JSONDecodeError as exc:
        raise _NotJson(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise _NotJson("invalid JSON: nested too deeply (no sample nests more than a few levels)") from None
    except ValueError as exc:  # Python's 4300-digit limit for int(): a number no field can hold
        if "digits" in str(exc):
            raise _NotJson(f"invalid JSON: a number with thousands of digits{_digits_field(text)} (no field holds "
                           "one)") from None
        raise


def _digits_field(text: str) -> str:
    """`` in FIELD`` for the first number too long to read in ``text`` (the error path only: the reader of files
    rescue wrote names it, Python's own error does not), else nothing."""
    try:
        readback.parse_json(text, "", RescueError)
    except RescueError as found:
        named = re.search(r": field (.+?): ", str(found))
        return f" in {named.group(1)}" if named else ""
    return ""


def _parse_line(display: str, number: int, raw: bytes) -> RawRecord:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return RawRecord(display, number, None, f"not UTF-8 text (byte {exc.start + 1} of the line)")
    text = text.rstrip("\r\n")
    try:
        # Without the newline a truncated line reports the column where it stops, not "line 2 column 1".
        data = _loads(text)
    except _NotJson as exc:
        return RawRecord(display, number, None, str(exc))
    bad = not_finite_paths(data) if (b"NaN" in raw or b"Infinity" in raw) else []
    return RawRecord(display, number, data, ascii_only=raw.isascii() and b"\\u" not in raw, not_finite=bad, text=text)


def _read_jsonl(path: Path, display: str) -> Iterator[RawRecord]:
    _check_readable(path)
    seen = False
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                seen = True
                yield _parse_line(display, number, raw)
    if not seen:
        raise DataError([DataIssue(display, 0, "holds no samples (the file is empty or only whitespace)")])


def _check_readable(path: Path) -> None:
    """A data path that is not a readable regular file, said in one line (never an OSError traceback)."""
    if path.is_symlink():
        try:
            path.resolve(strict=True)
        except RuntimeError:  # Python < 3.13 raises this for a loop
            raise DataError([DataIssue(str(path), 0, "a symbolic link that loops back on itself")]) from None
        except OSError as exc:
            reason = "loops back on itself" if exc.errno == 40 else f"points to {os.readlink(path)!r}, which does not exist"
            raise DataError([DataIssue(str(path), 0, f"a symbolic link that {reason}")]) from None
    if path.is_dir():
        raise DataError([DataIssue(str(path), 0, "is a folder, not a data file")])
    if not path.exists():
        raise DataError([DataIssue(str(path), 0, "no such file or directory")])


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


def _items(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _read_sample_json(path: Path, root: Path) -> RawRecord:
    """A per-sample file as the authors' scripts expect it: ``<group>/<sample>.json`` holding ``rows``."""
    display = str(path)
    _check_readable(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return RawRecord(display, 1, None, f"not UTF-8 text (byte {exc.start + 1} of the file)")
    if not text.strip():
        return RawRecord(display, 1, None, "holds no sample (the file is empty or only whitespace)")
    try:
        data = json.loads(text, parse_constant=_mark_constant)
    except json.JSONDecodeError as exc:
        return RawRecord(display, exc.lineno, None, f"invalid JSON: {exc.msg} at column {exc.colno}")
    except RecursionError:
        return RawRecord(display, 1, None, "invalid JSON: nested too deeply (no sample nests more than a few levels)")
    except ValueError as exc:
        if "digits" not in str(exc):
            raise
        return RawRecord(display, 1, None, "invalid JSON: a number with thousands of digits (no field holds one)")
    if isinstance(data, dict) and isinstance(data.get("rows"), list):
        sample_id = path.relative_to(root).with_suffix("").as_posix()
        data.setdefault("sample_id", sample_id)
        data.setdefault("scenario", infer_scenario(sample_id, data["rows"]))
        data.setdefault("participants", infer_participants(data["rows"]))
        data.setdefault("source_file", path.relative_to(root).as_posix())
    return RawRecord(display, 1, data, not_finite=not_finite_paths(data) if ("NaN" in text or "Infinity" in text) else [])


def _read_hf_folder(root: Path) -> Iterator[RawRecord]:
    """A Hugging Face ``datasets`` folder of samples (``rescue export --format hf --kind samples``): each split's
    ``record`` column holds a sample as the release writes it; it is read as one line of a .jsonl would be, and
    named ``FOLDER/SPLIT:ROW``."""
    try:
        import datasets
    except ImportError:
        raise DataError([DataIssue(str(root), 0, "a Hugging Face datasets folder: reading it needs the 'hf' extra "
                                   "(missing: datasets): pip install 'rescue-bench[hf]'")]) from None
    loaded = datasets.load_from_disk(str(root))
    parts = loaded.items() if isinstance(loaded, datasets.DatasetDict) else [("", loaded)]
    seen = False
    for split, table in parts:
        if "record" not in table.column_names:
            raise DataError([DataIssue(f"{root}/{split}".rstrip("/"), 0, "a datasets folder without a 'record' "
                                       "column: only a samples export (--kind samples) holds whole samples")])
        for number, text in enumerate(table["record"], start=1):
            seen = True
            yield _parse_line(f"{root}/{split}".rstrip("/"), number, str(text).encode("utf-8"))
    if not seen:
        raise DataError([DataIssue(str(root), 0, "holds no samples")])


def iter_records(path: str | Path | None) -> Iterator[RawRecord]:
    """Yield raw sample records from a .jsonl file, a folder of .jsonl files, or a folder of per-sample .json files."""
    if path is None:
        yield from _read_jsonl(demo_path(), "<demo>/demo.jsonl")
        return
    root = Path(path)
    if root.is_symlink() or not root.exists():
        _check_readable(root)
    if root.is_file():
        if root.suffix == ".json":
            yield _read_sample_json(root, root.parent)
        else:
            yield from _read_jsonl(root, str(root))
        return
    if (root / "dataset_dict.json").is_file() or (root / "state.json").is_file():
        yield from _read_hf_folder(root)
        return
    # A folder (or a link to one) named *.jsonl is no data file; a broken or looping link is said as such.
    jsonl_files = sorted(p for p in root.rglob("*.jsonl") if not p.is_dir())
    if jsonl_files:
        for file in jsonl_files:
            yield from _read_jsonl(file, str(file))
        return
    json_files = sorted(p for p in root.rglob("*.json") if p.name != "manifest.json" and not p.is_dir())
    if not json_files:
        raise DataError([DataIssue(str(root), 0, "no .jsonl or .json sample files found")])
    for file in json_files:
        yield _read_sample_json(file, root)
