"""A good answer with a bad usage block, and response headers the HTTP client cannot read (issue #22.4).

A usage block with NaN, negative or unreadable counts keeps the answer: its usage is recorded as unknown
(counted in results.json), the cost is marked incomplete, a warning says so, and nothing is asked twice.
Response headers larger than httpx accepts are one clear request error naming the cause, never retried.
All against the real scripted HTTP server.
"""

from __future__ import annotations

import json

import pytest
from _cli import invoke_main
from _engine_support import itp_instances, oracle_answers

from rescue.testing.openai_server import Reply, request_key, serve

USAGES = {
    # The two cases first, then shapes the fix was not written against.
    "nan": {"prompt_tokens": float("nan"), "completion_tokens": 3},
    "negative": {"prompt_tokens": 10, "completion_tokens": -4},
    "infinite": {"prompt_tokens": float("inf"), "completion_tokens": 3},
    "string_count": {"prompt_tokens": "many", "completion_tokens": 3},
    "boolean_count": {"prompt_tokens": True, "completion_tokens": 3},
    "usage_a_string": "lots",
    "usage_a_list": [1, 2],
    "details_a_list": {"prompt_tokens": 10, "completion_tokens": 3, "prompt_tokens_details": [1]},
    "negative_cached": {"prompt_tokens": 10, "completion_tokens": 3, "prompt_cache_hit_tokens": -1},
}


def _script(answers, usage):
    def script(body):
        reply = Reply.text(answers[request_key(body)])
        reply.usage = usage
        return reply

    return script


def _run(tmp_path, url, *extra):
    return invoke_main(["run", "--out", str(tmp_path / "run"), "--model", "m", "--base-url", url, "--tasks", "itp",
                        "--limit-samples", "1", "--no-bertscore", "--max-retries", "3", *extra],
                       env={"OPENAI_API_KEY": "test"})


@pytest.mark.parametrize("kind", list(USAGES))
def test_a_malformed_usage_block_keeps_the_answer_and_marks_the_cost_incomplete(tmp_path, kind):
    instances = itp_instances(1)
    with serve(_script(oracle_answers("itp", instances), USAGES[kind])) as server:
        result = _run(tmp_path, server.base_url)
        assert server.request_count == len(instances)  # each asked once
        again = _run(tmp_path, server.base_url)
        assert server.request_count == len(instances)  # and never paid for twice
    assert result.exit_code == 0 and again.exit_code == 0, result.output
    assert "usage block could not be read" in result.output
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    model = results["models"]["m"]
    assert model["itp"]["all"]["accuracy"] == 1.0 and model["itp"]["all"]["failures"] == 0
    assert model["usage"]["itp"]["usage_unknown"] == len(instances)
    assert model["cost"]["incomplete"] is True
    log = [json.loads(line) for line in (tmp_path / "run" / "run.log").read_text().splitlines()]
    assert sum(1 for e in log if e.get("event") == "usage_unknown") == len(instances)


def test_a_good_usage_block_leaves_the_cost_complete(tmp_path):
    instances = itp_instances(1)
    with serve(_script(oracle_answers("itp", instances), None)) as server:
        assert _run(tmp_path, server.base_url).exit_code == 0
    model = json.loads((tmp_path / "run" / "results.json").read_text())["models"]["m"]
    assert model["usage"]["itp"]["usage_unknown"] == 0 and model["cost"]["incomplete"] is False


HEADERS = {
    "one_huge_header": {"x-debug": "a" * 200_000},
    "many_headers": {f"x-trace-{i}": "v" * 60 for i in range(2000)},
}


@pytest.mark.parametrize("kind", list(HEADERS))
@pytest.mark.parametrize("status", [200, 429, 500])
def test_response_headers_over_the_client_limit_are_one_clear_error_never_retried(tmp_path, kind, status):
    reply = Reply.json({"answer": "yes"}) if status == 200 else Reply.error(status, "no")
    reply.headers = {**reply.headers, **HEADERS[kind]}
    instances = itp_instances(1)
    with serve(reply) as server:
        result = _run(tmp_path, server.base_url, "--max-failures", "1000")
        sent = server.request_count
    assert result.exit_code == 3, result.output
    assert sent == len(instances)  # one request per instance: not retried
    assert "response_headers_too_large" in result.output
    records = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert all("headers are larger than the HTTP client accepts" in r["error"] for r in records)
