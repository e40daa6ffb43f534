"""A judge that never gives a valid grade leaves the run incomplete (issue #22.2): exit 3, ``complete: false``,
``run.judge_failures`` counted, and ``--retry-errors`` asks the judge again for the grades it could not give
(its unusable answers are cached, so a plain rerun would replay them).

The judge is the real scripted HTTP server; the evaluated model is an offline baseline, so every request the
server sees is a judge request.
"""

from __future__ import annotations

import json

import pytest
from _cli import invoke_main

from rescue.testing.openai_server import Reply, serve

KEY = "sk-judge-Zq8vL2mN4pR6tX0yB3dF5hJ7"
GOOD = Reply.json({"emotion_score": 4, "score": 3})

# The five kinds first, then variants the fix was not written against.
NEVER_VALID = {
    "schema_invalid": Reply.json({"grade": "good"}),
    "nan": Reply.text('{"emotion_score": NaN, "score": NaN}'),
    "truncated": Reply.truncated('{"emotion_score": 4, "score": 3, "notes": "fine"}', keep=0.4),
    "content_filtered": Reply.filtered(),
    "key_echoing": Reply.quoting_key("{api_key}"),
    "out_of_range": Reply.json({"emotion_score": 9, "score": 0}),
    "string_scores": Reply.json({"emotion_score": "four", "score": "three"}),
    "prose_only": Reply.text("I would rate this a four out of five."),
    "big_number": Reply.text('{"emotion_score": ' + "4" * 5000 + "}"),
    "refused_400": Reply.content_filter(),
}


def _run(tmp_path, url, *extra):
    return invoke_main(["run", "--out", str(tmp_path / "run"), "--model", "baseline/majority", "--tasks", "er",
                        "--limit-samples", "1", "--quiet", "--no-bertscore", "--judge", "judge-x",
                        "--judge-base-url", url, "--max-retries", "0", *extra],
                       env={"OPENAI_API_KEY": KEY})


def _results(tmp_path):
    return json.loads((tmp_path / "run" / "results.json").read_text())


@pytest.mark.parametrize("kind", list(NEVER_VALID))
def test_a_judge_that_never_grades_leaves_the_run_incomplete_and_retry_errors_asks_again(tmp_path, kind):
    with serve(NEVER_VALID[kind], api_key=KEY) as server:
        first = _run(tmp_path, server.base_url)
        assert first.exit_code == 3, first.output
        results = _results(tmp_path)
        assert results["run"]["complete"] is False
        failures = results["run"]["judge_failures"]
        assert failures > 0 and failures == results["models"]["baseline/majority"]["er"]["all"]["judge_failures"]
        assert "judge judge-x: every grade failed" in first.output
        assert KEY not in first.output and KEY not in (tmp_path / "run" / "run.log").read_text()

        # A plain rerun replays what the judge said: still incomplete, and it says how to ask again.
        asked = server.request_count
        plain = _run(tmp_path, server.base_url)
        assert plain.exit_code == 3 and "--retry-errors" in plain.output, plain.output

        server.script = GOOD
        before = server.request_count
        retried = _run(tmp_path, server.base_url, "--retry-errors")
        assert retried.exit_code == 0, retried.output
        assert server.request_count - before >= failures  # every failed grade was asked again
    assert asked > 0
    results = _results(tmp_path)
    assert results["run"]["complete"] is True and results["run"]["judge_failures"] == 0
    er = results["models"]["baseline/majority"]["er"]["all"]
    assert er["judge_failures"] == 0 and er["judge_emotion"] == 4.0


def test_some_grades_failing_also_leaves_the_run_incomplete(tmp_path):
    seen: list[str] = []

    def script(body):
        first = body["messages"][0]["content"]  # the same for an instance's re-asks
        if first not in seen:
            seen.append(first)
        return NEVER_VALID["schema_invalid"] if seen.index(first) == 0 else GOOD

    with serve(script, api_key=KEY) as server:
        result = _run(tmp_path, server.base_url)
    assert result.exit_code == 3, result.output
    results = _results(tmp_path)
    assert results["run"]["complete"] is False and results["run"]["judge_failures"] == 1
    assert f"1 of {len(seen)} grades failed" in result.output
