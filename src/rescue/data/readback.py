"""The one reader of a JSON file rescue wrote and reads again (``results.json``, ``splits.json``, ``batches.json``,
a transcript's ``.chunks.json``, a build's ``manifest.json`` and drafts, a benchmark project's ``benchmark.json``, a
review database's JSON fields): each is untrusted input, since anyone may have edited, cut or replaced it.

:func:`read_json_file` reads a file, :func:`parse_json` a text already in hand (a database field, a line), and
:func:`validated` holds the value to a pydantic model. Each raises the caller's own :class:`~rescue.errors.RescueError`
(exit 2) with one line naming the file and the line or field, and never changes the file:

- not a regular file (a FIFO would block the read forever, a device never ends), or larger than the caller's limit;
- not UTF-8, not JSON, cut short (the line and column where it stops);
- nested deeper than :data:`MAX_DEPTH` (no file rescue writes nests more than a dozen levels; a hundred thousand
  brackets would exhaust the recursion of every reader after the decoder);
- a number that is not one: ``NaN``, ``Infinity``, ``1e999``, or beyond what any field rescue writes can hold
  (:data:`MAX_FLOAT`, :data:`MAX_INT_DIGITS`: ``1e308`` seconds overflow every clock and timer).
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rescue.errors import RescueError

__all__ = ["MAX_DEPTH", "MAX_FILE_BYTES", "MAX_FLOAT", "MAX_INT_DIGITS", "ErrorType", "check_parsed", "check_regular",
           "parse_json",
           "read_json_file", "validated", "validation_field"]

MAX_DEPTH = 64
MAX_FLOAT = 1e15  # far above any time, count, cost or score rescue writes; below where floats lose whole seconds
MAX_INT_DIGITS = 19  # a signed 64-bit integer (what SQLite holds): seeds, counts, versions
MAX_FILE_BYTES = 512 * 1024 * 1024

ErrorType = Callable[[str], RescueError]
Model = TypeVar("Model", bound=BaseModel)


class _Refused:
    """A number the decoder met that no field can hold, kept in place so the walk can name its field."""

    __slots__ = ("spelling",)

    def __init__(self, spelling: str):
        self.spelling = spelling


def _parse_float(text: str) -> float | _Refused:
    value = float(text)
    return value if math.isfinite(value) and abs(value) <= MAX_FLOAT else _Refused(text)


def _parse_int(text: str) -> int | _Refused:
    return _Refused(text) if len(text.lstrip("-")) > MAX_INT_DIGITS else int(text)


_DECODER = json.JSONDecoder(parse_float=_parse_float, parse_int=_parse_int, parse_constant=_Refused)


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _too_deep_line(text: str) -> int:
    """The line where ``text`` first nests deeper than :data:`MAX_DEPTH` (strings skipped); 1 if it never does."""
    depth, in_string, escaped = 0, False, False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return _line_of(text, index)
        elif char in "]}":
            depth -= 1
    return 1


def _field(parts: list[str | int]) -> str:
    if len(parts) > 12:  # a path down a deep nest: its start and how deep
        return f"{_field(parts[:6])}... ({len(parts)} levels)"
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _problem(value: Any, depth: int) -> tuple[list[str | int], str] | None:
    """The first refused number or too deep nesting inside ``value``: its path (innermost first) and why."""
    kind = type(value)
    if kind is _Refused:
        spelling = value.spelling if len(value.spelling) <= 24 else f"a number of {len(value.spelling)} characters"
        return [], f"{spelling} is not a number any field holds (NaN, Infinity and magnitudes past {MAX_FLOAT:g} " \
                   f"or {MAX_INT_DIGITS} digits are refused)"
    if kind is not dict and kind is not list:
        return None
    if depth >= MAX_DEPTH:
        return [], f"nested more than {MAX_DEPTH} levels deep (no file rescue writes nests so deep)"
    items = value.items() if kind is dict else enumerate(value)
    for key, item in items:
        inner = type(item)
        if inner is dict or inner is list or inner is _Refused:
            found = _problem(item, depth + 1)
            if found is not None:
                found[0].append(key)
                return found
    return None


_INT_LIMIT = 10**MAX_INT_DIGITS


def _number_refused(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value) or abs(value) > MAX_FLOAT
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_LIMIT


def _problem_in_parsed(value: Any, depth: int) -> tuple[list[str | int], str] | None:
    """As :func:`_problem`, for a value another reader parsed: every number is looked at."""
    if isinstance(value, (dict, list)):
        if depth >= MAX_DEPTH:
            return [], f"nested more than {MAX_DEPTH} levels deep (no file rescue writes nests so deep)"
        for key, item in (value.items() if isinstance(value, dict) else enumerate(value)):
            found = _problem_in_parsed(item, depth + 1)
            if found is not None:
                found[0].append(key)
                return found
    elif _number_refused(value):
        spelling = getattr(value, "spelling", None) or f"{value!r:.24}"  # NaN as the file spells it
        return [], f"{spelling} is not a number any field holds (NaN, Infinity and magnitudes past {MAX_FLOAT:g} " \
                   f"or {MAX_INT_DIGITS} digits are refused)"
    return None


def check_parsed(value: Any, where: str, error: ErrorType) -> None:
    """Hold a value another reader already parsed (a draft's line read with the release reader) to the limits of
    :func:`parse_json`: ``error`` naming ``where`` and the field of the first number no field holds or of
    nesting past :data:`MAX_DEPTH`."""
    found = _problem_in_parsed(value, 0)
    if found is not None:
        parts, reason = found
        raise error(f"{where}: field {_field(parts[::-1])}: {reason}")


def parse_json(text: str, where: str, error: ErrorType) -> Any:
    """The JSON value of ``text``, read from ``where`` (a file, ``file:line`` or a database field); ``error``
    (naming ``where``, the line or the field) for anything :mod:`this module <rescue.data.readback>` refuses."""
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise error(f"{where}:{exc.lineno}: not JSON ({exc.msg} at column {exc.colno}; cut short or edited?)") from None
    except RecursionError:
        raise error(f"{where}:{_too_deep_line(text)}: nested more than {MAX_DEPTH} levels deep (no file rescue "
                    "writes nests so deep)") from None
    found = _problem(value, 0)
    if found is not None:
        parts, reason = found
        raise error(f"{where}: field {_field(parts[::-1])}: {reason}")
    return value


def check_regular(path: Path, error: ErrorType) -> os.stat_result:
    """The file's status, or ``error`` when it is not a regular file: a FIFO would block a reader forever and a
    device never ends. A link is followed (what is read is what it points to); a missing file raises
    :class:`FileNotFoundError`."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a FIFO, a device or a socket)"
        raise error(f"{path}: is {kind}; rescue reads back only files it wrote")
    return info


def read_json_file(path: str | Path, error: ErrorType, *, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """The JSON value of the file at ``path``, refused with ``error`` as :func:`parse_json` says, and also when
    it is not a regular file or is larger than ``max_bytes``. A missing file raises :class:`FileNotFoundError`
    (each caller says what its absence means)."""
    file = Path(path)
    info = check_regular(file, error)
    if info.st_size > max_bytes:
        raise error(f"{file}: {info.st_size:,} bytes, larger than any file rescue writes here ({max_bytes:,})")
    try:
        with file.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{file}: cannot be read ({exc.strerror or exc})") from None
    if len(raw) > max_bytes:
        raise error(f"{file}: larger than any file rescue writes here ({max_bytes:,} bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise error(f"{file}:{line}: not UTF-8 text (byte {exc.start + 1})") from None
    return parse_json(text, str(file), error)


def validation_field(exc: ValidationError) -> str:
    """``field a.b[2].c: what is wrong`` for the first problem pydantic found."""
    first = exc.errors()[0]
    parts: list[str | int] = [p for p in first["loc"] if isinstance(p, (str, int))]
    return f"field {_field(parts)}: {first['msg']}"


def validated(model: type[Model], value: Any, where: str, error: ErrorType) -> Model:
    """``value`` held to ``model``; ``error`` naming ``where`` and the first field that does not fit."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise error(f"{where}: {validation_field(exc)}") from None
