"""The one reading of JSON out of a model's answer, shared by the tasks' parsing (rescue.tasks.parsing) and the
build's draft checks (rescue.builder.checks): a fenced block is unwrapped, the whole text is tried, then the first
decodable object inside other text. Each caller says what it accepts and words its own errors.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from rescue.errors import UnreadableJSON as UnreadableJSON

FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_START = re.compile(r"[{\[]")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is not a finite number")
    return value


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a finite number")


# NaN, Infinity and 1e999 are refused: they would pass float fields and reach a release as non-finite times.
FINITE = json.JSONDecoder(parse_float=_finite, parse_constant=_no_constant)
PLAIN = json.JSONDecoder()
_THOUSANDS_OF_DIGITS = "a number with thousands of digits"


@dataclass(frozen=True)
class FoundJSON:
    """What :func:`find_json` read: ``value`` (when ``found``), whether it was in a code fence (``fenced``) or
    inside other text (``surrounded``), and why the whole unfenced text was not JSON (``error``, else None)."""

    found: bool
    value: Any = None
    fenced: bool = False
    surrounded: bool = False
    error: json.JSONDecodeError | None = None


def unfence(text: str) -> tuple[str, bool]:
    """``text`` stripped, without a Markdown code fence around it, and whether there was one."""
    text = text.strip()
    fenced = FENCE.match(text)
    return (fenced.group(1).strip(), True) if fenced else (text, False)


def _decode(decoder: json.JSONDecoder, text: str, start: int | None) -> Any:
    """The whole ``text`` (``start`` None) or the value starting at ``start``."""
    try:
        return decoder.decode(text) if start is None else decoder.raw_decode(text, start)[0]
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise UnreadableJSON(nested=True) from None
    except ValueError as exc:  # a 5000-digit number, a refused non-finite number
        # Python's own words for the digit limit ("Exceeds the limit (4300 digits) for integer string
        # conversion") would reach the run's failure summary: say what the answer held instead.
        detail = str(exc).split(":")[0]
        raise UnreadableJSON(_THOUSANDS_OF_DIGITS if "integer string conversion" in detail else detail) from None


def find_json(raw: str, accept_whole: Callable[[Any], bool], accept_inner: Callable[[Any], bool],
              decoder: json.JSONDecoder = PLAIN, *, inner: Literal["first", "outermost"] = "first") -> FoundJSON:
    """The JSON in ``raw``: the whole (unfenced) text when ``accept_whole`` takes its value, else a value inside
    it that ``accept_inner`` takes: the first decodable ``{...}`` or ``[...]`` (``first``: the tasks read an
    answer so), or the text from the first ``{`` to the last ``}`` (``outermost``: a build draft is one object).

    Raises :class:`UnreadableJSON` for JSON that is there but cannot be read (``outermost`` looks no further
    than the whole text for that).
    """
    text, fenced = unfence(raw)
    error: json.JSONDecodeError | None = None
    try:
        value = _decode(decoder, text, None)
        if accept_whole(value):
            return FoundJSON(True, value, fenced)
    except json.JSONDecodeError as exc:
        error = exc
    found = _outermost(text, decoder) if inner == "outermost" else _first(text, decoder, accept_inner)
    if found is not _NOTHING and accept_inner(found):
        return FoundJSON(True, found, fenced, True, error)
    return FoundJSON(False, fenced=fenced, error=error)


_NOTHING = object()


def _first(text: str, decoder: json.JSONDecoder, accept: Callable[[Any], bool]) -> Any:
    for match in _START.finditer(text):
        try:
            value = _decode(decoder, text, match.start())
        except json.JSONDecodeError:
            continue
        if accept(value):
            return value
    return _NOTHING


def _outermost(text: str, decoder: json.JSONDecoder) -> Any:
    first, last = text.find("{"), text.rfind("}")
    if not 0 <= first < last:
        return _NOTHING
    try:
        return decoder.decode(text[first:last + 1])
    except (ValueError, RecursionError):
        return _NOTHING
