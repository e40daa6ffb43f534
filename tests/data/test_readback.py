"""The one reader of files rescue wrote (rescue.data.readback, issue #42 item 4): its limits at their edges, each
refusal naming the place, and what it must still read (the attack table of real commands is
tests/data/test_readback_attacks.py)."""

from __future__ import annotations

import json
import os

import pytest

from rescue.data.readback import MAX_DEPTH, MAX_FLOAT, MAX_INT_DIGITS, parse_json, read_json_file
from rescue.errors import SplitError


def _refused(text: str) -> str:
    with pytest.raises(SplitError) as caught:
        parse_json(text, "f.json", SplitError)
    return str(caught.value)


def _nest(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_what_rescue_writes_is_read_as_it_was():
    value = {"a": [1, -2, 0.5, -1e-9, MAX_FLOAT, -MAX_FLOAT, int("9" * MAX_INT_DIGITS), None, True, "x[{"],
             "b": {"c": "é\u2028"}, "deep": json.loads(_nest(MAX_DEPTH - 1))}
    assert parse_json(json.dumps(value), "f.json", SplitError) == value


@pytest.mark.parametrize("text, named", [
    ('{"a": {"b": [0, 1e16]}}', "field a.b[1]: 1e16"),
    ('{"a": -1e16}', "field a: -1e16"),
    ('{"n": ' + "1" * (MAX_INT_DIGITS + 1) + "}", "field n:"),
    ('{"n": -' + "1" * (MAX_INT_DIGITS + 1) + "}", "field n:"),
    ('{"n": ' + "7" * 5000 + "}", "a number of 5000 characters"),
    ('[NaN]', "field [0]: NaN"),
    ('{"x": [1, {"y": -Infinity}]}', "field x[1].y: -Infinity"),
    ('{"x": 1e400}', "field x: 1e400"),
    ('1e999', "field (top level): 1e999"),
])
def test_numbers_no_field_holds_are_named_by_field(text, named):
    assert named in _refused(text)


def test_nesting_is_refused_past_the_limit_naming_where():
    assert "nested more than 64" in _refused(_nest(MAX_DEPTH + 1))
    deep = '{"a": {"b": ' + _nest(MAX_DEPTH) + "}}"
    message = _refused(deep)
    assert "field a.b[0]" in message and "levels)" in message  # a long path: its start and its depth


def test_nesting_past_the_decoders_recursion_names_the_line_outside_strings():
    text = '{"note": "[[[[[[",\n "x":\n' + "[" * 100_000
    assert _refused(text).startswith("f.json:3: nested more than")


@pytest.mark.parametrize("text, line", [('{"a": 1,\n "b": }', 2), ("", 1), ('{"a": "b', 1), ("\n\n{,}", 3)])
def test_text_that_is_not_json_names_the_line(text, line):
    assert _refused(text).startswith(f"f.json:{line}: not JSON")


def test_a_file_is_read_only_when_regular_and_not_too_large(tmp_path):
    good = tmp_path / "a.json"
    good.write_text('{"a": 1}')
    assert read_json_file(good, SplitError) == {"a": 1}
    with pytest.raises(SplitError, match="larger than"):
        read_json_file(good, SplitError, max_bytes=4)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(SplitError, match="not a regular file"):
        read_json_file(fifo, SplitError)  # never opened: opening a FIFO blocks until a writer comes
    with pytest.raises(SplitError, match="is a folder"):
        read_json_file(tmp_path, SplitError)
    bad = tmp_path / "b.json"
    bad.write_bytes(b'{"a":\n "\xff"}')
    with pytest.raises(SplitError, match=r"b.json:2: not UTF-8 text \(byte 9\)"):
        read_json_file(bad, SplitError)
    with pytest.raises(FileNotFoundError):
        read_json_file(tmp_path / "missing.json", SplitError)
