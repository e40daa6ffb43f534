"""A run with a thinking model (issue #23 item 1): the scripted server answers with reasoning deltas,
length-exhausted answers and thinking-only answers; every outcome is right, each request is paid once,
reasoning is stored with the record (or not), counted, and named in results.json, the summary and the report."""

from __future__ import annotations

import json

import pytest
from _cli import invoke_main
from _engine_support import itp_instances, oracle_answers, read_jsonl

from rescue.engine.config import RunError
from rescue.engine.runner import RunConfig, run
from rescue.testing.openai_server import Reply, request_key, serve

THOUGHTS = "First, who is speaking? The client sounds upset. " * 3


def _script(answers: dict[str, str], spent: set[str], only: set[str]):
    """Reasoning then the oracle's answer; the keys in ``spent`` run out of budget unless given more than 100
    tokens; those in ``only`` think and stop without an answer."""

    def script(body):
        key = request_key(body)
        if key in only:
            return Reply.thinking(None, THOUGHTS)
        if key in spent and body["max_tokens"] < 5000:
            return Reply.budget_spent()
        return Reply.thinking(answers[key], THOUGHTS)

    return script


def _config(tmp_path, base_url, **overrides) -> RunConfig:
    options = dict(out=str(tmp_path / "run"), models=["think-model"], tasks=["itp"], base_url=base_url,
                   quiet=True, bertscore=False, max_retries=2, timeout=30.0, limit_samples=1, stream=True)
    options.update(overrides)
    return RunConfig(**options)


def _keys():
    instances = itp_instances(limit_samples=1)
    answers = oracle_answers("itp", instances)
    keys = sorted(answers)
    return answers, set(keys[:3]), set(keys[3:4])


def test_a_thinking_model_run_gets_every_outcome_right_and_pays_each_request_once(tmp_path):
    answers, spent, only = _keys()
    with serve(_script(answers, spent, only)) as server:
        outcome = run(_config(tmp_path, server.base_url))
        sent = server.request_count
        assert all(b.get("stream") is True for b in server.bodies)
        # A rerun asks only the thinking-only one again: the spent budgets are outcomes, not paid twice.
        run(_config(tmp_path, server.base_url))
        assert server.request_count == sent + 1
    assert sent == len(answers)  # nothing retried: neither spent budgets nor thinking-only answers
    records = read_jsonl(tmp_path / "run" / "predictions.jsonl")
    by_status: dict[str, int] = {}
    for record in records:
        by_status[record["status"]] = by_status.get(record["status"], 0) + 1
    assert by_status == {"ok": len(answers) - 4, "budget_exhausted": 3, "request_error": 1}
    ok = [r for r in records if r["status"] == "ok"]
    assert all(r["reasoning"] == THOUGHTS for r in ok) and all(r["prediction"] in ("yes", "no") for r in ok)
    assert all(THOUGHTS not in (r["raw"] or "") for r in records)  # the answer is never the thoughts
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    itp = results["models"]["think-model"]["itp"]
    assert itp["all"]["budget_exhausted"] == 3 and itp["all"]["failures"] == 4
    usage = results["models"]["think-model"]["usage"]["itp"]
    assert usage["budget_exhausted"] == 3 and usage["reasoning_tokens"] > 0
    assert results["run"]["budget_exhausted"] == 3
    assert results["config"]["stream"] is True
    assert not outcome.complete  # the thinking-only answer is a request error, asked again on a rerun


def test_budget_retry_asks_spent_answers_once_more_with_a_larger_budget(tmp_path):
    answers, spent, _ = _keys()
    with serve(_script(answers, spent, set())) as server:
        first = run(_config(tmp_path, server.base_url))
        assert server.request_count == len(answers)
        assert first.results["run"]["budget_exhausted"] == 3
        # Rerun with --budget-retry into the same directory: the same run, continued.
        second = run(_config(tmp_path, server.base_url, budget_retry=4.0))
        retried = server.bodies[len(answers):]
    assert len(retried) == 3 and {b["max_tokens"] for b in retried} == {1600 * 4}
    assert second.complete and "budget_exhausted" not in second.results["run"]
    assert second.results["models"]["think-model"]["itp"]["all"]["failures"] == 0


def test_no_store_reasoning_keeps_records_as_they_were(tmp_path):
    answers, _, _ = _keys()
    with serve(_script(answers, set(), set())) as server:
        run(_config(tmp_path, server.base_url, store_reasoning=False))
    records = read_jsonl(tmp_path / "run" / "predictions.jsonl")
    assert records and all("reasoning" not in r for r in records)


def test_a_model_that_does_not_think_writes_records_without_a_reasoning_key(tmp_path):
    answers, _, _ = _keys()
    with serve(lambda body: Reply.text(answers[request_key(body)])) as server:
        run(_config(tmp_path, server.base_url, stream=None))
        assert all("stream" not in b for b in server.bodies)
    text = (tmp_path / "run" / "predictions.jsonl").read_text()
    assert '"reasoning"' not in text


def test_the_summary_names_the_fix_and_the_leaderboard_counts_budget_failures(tmp_path):
    answers, spent, _ = _keys()
    with serve(_script(answers, spent, set())) as server:
        result = invoke_main(["run", "--model", "think-model", "--base-url", server.base_url, "--tasks", "itp",
                              "--limit-samples", "1", "--out", str(tmp_path / "run"), "--no-bertscore", "--stream"],
                             env={"OPENAI_API_KEY": "test"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "3 answer(s) ran out of budget" in text and "--budget-retry 2" in text
    assert "(3 budget)" in text


@pytest.mark.parametrize(("preset", "level", "sent"), [
    ("dashscope/qwen3-max", "on", {"enable_thinking": True}),
    ("dashscope/qwen3-max", "off", {"enable_thinking": False}),
    ("kimi/kimi-k2.5", "off", {"thinking": {"type": "disabled"}}),
    ("openai/gpt-5.4", "low", {"reasoning_effort": "low"}),
    ("openrouter/deepseek/deepseek-r1", "high", {"reasoning": {"effort": "high"}}),
    ("vllm/Qwen/Qwen3-8B", "off", {"chat_template_kwargs": {"enable_thinking": False}}),
])
def test_thinking_is_mapped_per_preset_and_recorded(tmp_path, preset, level, sent):
    answers, _, _ = _keys()
    with serve(lambda body: Reply.text(answers[request_key(body)])) as server:
        run(_config(tmp_path, server.base_url, models=[preset], thinking=level, stream=None))
        body = server.bodies[0]
    for key, value in sent.items():
        assert body[key] == value
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["config"]["thinking"] == level
    # DashScope streams its thinking requests by default (the preset says why).
    assert body.get("stream", False) is (preset.startswith("dashscope") and level == "on")


def test_thinking_a_provider_cannot_be_told_is_refused_before_any_work(tmp_path):
    from rescue.llm._providers import ThinkingError

    with pytest.raises(ThinkingError, match="takes only on, off"):
        run(_config(tmp_path, "http://127.0.0.1:9/v1", models=["dashscope/qwen3-max"], thinking="high"))
    with pytest.raises(ThinkingError, match="no documented thinking switch"):
        run(_config(tmp_path, "http://127.0.0.1:9/v1", models=["deepseek/deepseek-reasoner"], thinking="off"))
    with pytest.raises(RunError, match="--thinking 'max'"):
        _config(tmp_path, "http://127.0.0.1:9/v1", thinking="max")
    assert not (tmp_path / "run").exists()


def test_a_run_with_thinking_differs_in_configuration_from_one_without(tmp_path):
    answers, _, _ = _keys()
    with serve(lambda body: Reply.text(answers[request_key(body)])) as server:
        run(_config(tmp_path, server.base_url, stream=None))
        with pytest.raises(RunError, match="thinking"):
            run(_config(tmp_path, server.base_url, stream=None, thinking="off"))


def test_dry_run_warns_for_a_thinking_model_with_small_budgets(tmp_path):
    result = invoke_main(["run", "--dry-run", "--model", "dashscope/deepseek-r1", "--model", "dashscope/qwen3-max",
                          "--tasks", "itp,rpp", "--limit-samples", "1"], env={"DASHSCOPE_API_KEY": "k"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "dashscope/deepseek-r1 is known to think" in text and "itp 1,600" in text
    assert "qwen3-max is known to think" not in text  # the preset switches its thinking off
    quiet = invoke_main(["run", "--dry-run", "--model", "dashscope/deepseek-r1", "--tasks", "itp", "--limit-samples",
                         "1", "--max-tokens", "16000"], env={"DASHSCOPE_API_KEY": "k"})
    assert "known to think" not in quiet.output


def test_the_report_shows_reasoning_collapsed_and_refuses_runs_differing_in_thinking(tmp_path):
    from rescue.report.html import decode_payload

    answers, spent, _ = _keys()
    with serve(_script(answers, spent, set())) as server:
        run(_config(tmp_path, server.base_url, out=str(tmp_path / "on")))
        run(_config(tmp_path, server.base_url, out=str(tmp_path / "off"), thinking="off"))
    report = invoke_main(["report", str(tmp_path / "on"), "--out", str(tmp_path / "report"), "--no-figures"])
    assert report.exit_code == 0, report.output
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    payload = page.split('id="report-data" data-encoding="gzip+base64">', 1)[1].split("</script>", 1)[0]
    items = decode_payload(payload)["instances"]
    assert {i.get("reasoning") for i in items if i["status"] == "ok"} == {THOUGHTS}
    assert 'el("details", {class: "reasoning"}' in page  # shown collapsed in the drill-down
    markdown = (tmp_path / "report" / "leaderboard.md").read_text(encoding="utf-8")
    assert "ITP" in markdown and "(3 budget)" in markdown
    mixed = invoke_main(["report", str(tmp_path / "on"), str(tmp_path / "off"), "--out", str(tmp_path / "r2"),
                         "--no-figures"])
    assert mixed.exit_code == 2
    assert "thinking (--thinking) differs" in " ".join(mixed.output.split())
