"""Answers no JSON reader takes as they are (issue #22.1): a 5000-digit number, JSON nested past the recursion
limit, lone UTF-16 surrogates. Each is a recorded failure of its instance, the run goes on and completes, and
a rerun reads the same directory again; a cached answer that can no longer be read is asked again.

Everything goes through the real scripted HTTP server and real run directories; nothing of ours is mocked.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from _cli import invoke_main
from _engine_support import itp_instances, oracle_answers, oracle_script, read_jsonl

from rescue.builder.checks import parse_draft
from rescue.engine.runner import RunConfig, run
from rescue.tasks.parsing import AnswerError, extract_json
from rescue.testing.openai_server import Reply, request_key, serve

BIG = "9" * 5000


def _config(tmp_path, base_url, **overrides) -> RunConfig:
    options = dict(out=str(tmp_path / "run"), models=["test-model"], tasks=["itp"], base_url=base_url,
                   quiet=True, bertscore=False, max_retries=1, timeout=30.0, limit_samples=1)
    options.update(overrides)
    return RunConfig(**options)


# The case the issue reports first, then variants the fix was not written against.
HOSTILE_ANSWERS = {
    "big_integer": '{"predictions": [{"id": "x", "answer": ' + BIG + "}]}",
    "big_integer_id": '{"predictions": [{"id": ' + BIG + ', "answer": "yes"}]}',
    "big_negative_integer_bare": "-" + BIG,
    "big_integer_after_prose": 'Here it is: {"answer": "yes", "confidence": ' + BIG + "}",
    "deep_nesting": "[" * 200_000 + "]" * 200_000,
    "deep_nesting_in_object": '{"predictions": ' + "[" * 200_000 + "]" * 200_000 + "}",
    "lone_surrogate_label": '{"predictions": [{"id": "x", "answer": "yes\\ud800"}]}',
    "lone_low_surrogate_id": '{"predictions": [{"id": "\\udfff", "answer": "no"}]}',
    "split_surrogate_pair": '{"predictions": [{"id": "x", "answer": "yes", "why": "\\ud83d\\ude00"}]}',
}


# The 400,000-bracket answers take seconds each to send and refuse: slow.
@pytest.mark.parametrize("kind", [pytest.param(kind, marks=pytest.mark.slow) if kind.startswith("deep_nesting") else kind
                                  for kind in HOSTILE_ANSWERS])
def test_an_answer_no_parser_takes_is_a_failure_of_its_instance_and_reruns_read_it(tmp_path, kind):
    raw = HOSTILE_ANSWERS[kind]
    with serve(Reply(content=raw)) as server:
        first = run(_config(tmp_path, server.base_url))
        asked = server.request_count
        again = run(_config(tmp_path, server.base_url))  # from the cache: the same records, no crash
        retried = run(_config(tmp_path, server.base_url, retry_errors=True))
        assert server.request_count == asked  # a parse error is an answer: never paid for twice
    assert first.complete and again.complete and retried.complete
    records = read_jsonl(tmp_path / "run" / "predictions.jsonl")
    assert records and {r["status"] for r in records} <= {"ok", "parse_error", "missing"}
    if kind in ("big_integer", "big_integer_id", "big_negative_integer_bare", "deep_nesting",
                "deep_nesting_in_object"):
        assert {r["status"] for r in records} == {"parse_error"}
        assert all("cannot be read" in r["error"] or "nested too deeply" in r["error"] for r in records), records[0]
    assert json.loads((tmp_path / "run" / "results.json").read_text())["run"]["complete"] is True


def test_a_batch_answer_with_a_big_number_fails_its_batch_and_the_single_reasks_answer(tmp_path):
    instances = itp_instances(1)
    singles = oracle_answers("itp", instances, batch_size=1)

    def script(body):
        answer = singles.get(request_key(body))  # a single re-ask gets the right answer, a batch the big number
        return Reply.text(answer) if answer is not None else Reply(content=HOSTILE_ANSWERS["big_integer"])

    with serve(script) as server:
        outcome = run(_config(tmp_path, server.base_url, batch_size="4"))
    assert outcome.complete
    assert outcome.results["models"]["test-model"]["itp"]["all"]["accuracy"] == 1.0


def test_the_cli_exits_0_and_writes_the_failures(tmp_path):
    with serve(Reply(content='{"answer": ' + BIG + "}")) as server:
        result = invoke_main(["run", "--out", str(tmp_path / "run"), "--model", "m", "--base-url", server.base_url,
                              "--tasks", "itp", "--limit-samples", "1", "--no-bertscore", "--quiet"],
                             env={"OPENAI_API_KEY": "test"})
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "Exceeds the limit" not in result.output


# --- a cached answer that can no longer be read is asked again ------------------------------------------

CORRUPTIONS = {
    "text_not_utf8": "UPDATE answers SET text = CAST(X'fffe41' AS TEXT)",
    "usage_not_json": "UPDATE answers SET usage = 'lots'",
    "usage_wrong_keys": "UPDATE answers SET usage = '{\"tokens\": 3}'",
    "meta_not_json": "UPDATE answers SET meta = '{'",
    "text_null": "UPDATE answers SET text = NULL",
    "text_a_blob": "UPDATE answers SET text = X'00ff'",
}


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_an_unreadable_cached_answer_is_asked_again_never_fatal(tmp_path, corruption):
    instances = itp_instances(1)
    with serve(oracle_script(oracle_answers("itp", instances))) as server:
        first = run(_config(tmp_path, server.base_url))
        asked = server.request_count
        with sqlite3.connect(tmp_path / "run" / "cache.sqlite") as db:
            db.execute(CORRUPTIONS[corruption] + " WHERE rowid IN (SELECT rowid FROM answers LIMIT 3)")
        second = run(_config(tmp_path, server.base_url))
        assert server.request_count == asked + 3  # exactly the three unreadable answers, asked again
        third = run(_config(tmp_path, server.base_url))
        assert server.request_count == asked + 3  # and stored again, readable
    assert first.complete and second.complete and third.complete
    assert second.results["models"]["test-model"]["itp"]["all"]["accuracy"] == 1.0
    log = [json.loads(line) for line in (tmp_path / "run" / "run.log").read_text().splitlines()]
    assert sum(1 for e in log if e.get("event") == "cache_unreadable") == 3


# --- the parsers themselves ------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [HOSTILE_ANSWERS["big_integer"], "[" * 100_000, '{"a": ' + "[" * 100_000,
                                 "prose " + '{"x": ' + BIG + "}", "1" * 4301])
def test_extract_json_says_what_it_cannot_read(raw):
    with pytest.raises(AnswerError):
        extract_json(raw)


@pytest.mark.parametrize("raw", ['{"rows": [{"start_time": ' + BIG + "}]}", "[" * 100_000 + "]" * 100_000,
                                 "Sure: {" + '"rows": ' + BIG + "}", '```json\n{"rows": ' + BIG + "}\n```",
                                 '{"rows": [{"start_time": 1e999}]}', '{"rows": [{"end_time": NaN}]}',
                                 '{"rows": [{"end_time": -Infinity}]}'])
def test_a_draft_answer_no_reader_takes_is_a_problem_not_a_crash(raw):
    value, problems = parse_draft(raw)
    assert value is None and problems and "JSON" in str(problems[-1].message)


# --- rescue build ----------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["big_number", "huge_float", "lone_surrogate"])
def test_build_takes_hostile_answers_as_problems_and_reruns(tmp_path, prepared, session_files, monkeypatch, kind):
    from rescue.builder import AnnotateSettings, BuildConfig, SessionSpec, build
    from rescue.data.validation import validate_path
    from rescue.testing.drafts import draft_script

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    out = prepared.seed(tmp_path / "out")
    spec = SessionSpec(session_files.video, session_files.subs, "couple", ("Alan", "Evelyn"), "alan_and_evelyn",
                       segments=prepared.segments)
    with serve(script=draft_script(kind, fix_on_reask=False)) as server:
        config = BuildConfig(out=out, sessions=[spec], annotate=AnnotateSettings(video_input="none"), max_retries=1,
                             model="test-model", base_url=server.base_url)
        outcome = build(config)
        asked = server.request_count
        (out / "draft.jsonl").unlink()
        again = build(config)  # from the cache and the stored segment draft
        assert server.request_count == asked
    assert outcome.complete and again.complete
    text = (out / "draft.jsonl").read_text(encoding="utf-8")
    assert "\ud800" not in text and validate_path(out / "draft.jsonl").errors == []
    if kind == "lone_surrogate":
        assert "\ufffd" in text  # the one character that could not be stored, shown as a replacement character
