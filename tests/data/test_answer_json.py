"""The one reading of JSON out of a model's answer (rescue.data.answer_json), as the tasks and the build use it."""

from __future__ import annotations

import pytest

from rescue.builder.checks import parse_draft
from rescue.data.answer_json import FINITE, UnreadableJSON, find_json, unfence
from rescue.tasks.parsing import AnswerError, extract_json


def _any(value: object) -> bool:
    return True


def _dict(value: object) -> bool:
    return isinstance(value, dict)


def test_fences_and_surrounding_text():
    assert unfence('  ```json\n{"a": 1}\n```  ') == ('{"a": 1}', True)
    assert unfence("```JSON {} ```") == ("{}", True) and unfence(" {} ") == ("{}", False)
    found = find_json('Sure: {bad} {"a": 2} and {"b": 3}', _any, _dict)
    assert (found.found, found.value, found.surrounded, found.fenced) == (True, {"a": 2}, True, False)
    assert found.error is not None and found.error.pos == 0  # why the whole text was not JSON
    whole = find_json('```json\n[1, 2]\n```', _any, _dict)
    assert (whole.value, whole.fenced, whole.surrounded, whole.error) == ([1, 2], True, False, None)


def test_outermost_takes_the_first_to_the_last_brace_only():
    # A build draft is one object: two objects are not one answer, braces in prose are not part of it.
    assert not find_json('{"a": 1} {"b": 2}', _any, _any, inner="outermost").found
    assert find_json('{"a": 1} {"b": 2}', _any, _dict).value == {"a": 1}
    assert find_json('Here: {"a": {"b": 1}} done', _any, _any, inner="outermost").value == {"a": {"b": 1}}


def test_unreadable_json_stops_the_search():
    with pytest.raises(UnreadableJSON, match="nested too deeply") as nested:
        find_json("[" * 100000, _any, _dict)
    assert nested.value.nested
    with pytest.raises(UnreadableJSON, match="cannot be read") as refused:
        find_json('{"a": NaN}', _any, _dict, decoder=FINITE)
    assert refused.value.detail == "NaN is not a finite number"
    assert find_json('{"a": NaN}', _any, _dict).value["a"] != 0  # the plain decoder reads NaN


def test_both_callers_word_their_own_errors():
    with pytest.raises(AnswerError, match="no JSON object found in the answer \\(truncated\\?\\)"):
        extract_json('{"a": [1')
    assert extract_json('[{"id": "row1"}]') == {"predictions": [{"id": "row1"}]}
    value, problems = parse_draft('{"a": Infinity}')
    assert value is None and [p.message for p in problems] == ["the answer's JSON cannot be read (Infinity is not a finite number)"]
    value, problems = parse_draft("```JSON\n{\"rows\": []}\n```")
    assert value == {"rows": []} and [p.message for p in problems] == ["the JSON is wrapped in a code fence"]
