"""A run says why its answers failed (issue 35 item 2): at its end, per model and task, the commonest failure
reasons with counts and an example instance id; the same in results.json, and ``rescue report`` shows them on
the terminal, in failures.md and in report.html. Answers come from the scripted server over real HTTP."""

from __future__ import annotations

import json
import re

import pytest
from _cli import invoke_main
from _engine_support import oracle_answers, read_jsonl

from rescue.data.loading import choose_samples, load_samples
from rescue.runs.failures import failure_reasons, reason_of
from rescue.tasks import get_task
from rescue.tasks.base import PredictionRecord
from rescue.testing.openai_server import Reply, request_key, serve

UNKNOWN = "Maria"  # no cast of the demo data has her: an unknown label in every sample


def _stp_script(prose_every: int = 0):
    """STP answers naming a participant no sample has (the ids and the shape stay right), every
    ``prose_every``-th answer prose instead, and the first one right."""
    samples = choose_samples(load_samples(None), 2, "stratified")
    answers = oracle_answers("stp", get_task("stp").build(samples))
    seen: list[str] = []

    def script(body):
        seen.append(request_key(body))
        right = answers[seen[-1]]
        if len(seen) == 1:
            return Reply.text(right)
        if prose_every and len(seen) % prose_every == 0:
            return Reply.text("Riley, I think.")
        answer = json.loads(right)
        for item in answer["predictions"]:
            item["target_top3"] = [UNKNOWN]
        return Reply.json(answer)

    return script


def _data_order(record: dict) -> tuple:
    return record["sample_id"], record["row_index"], record["instance_id"]


def _run(server, out, *extra: str):
    return invoke_main(["run", "--model", "scripted", "--base-url", server.base_url, "--tasks", "stp",
                        "--limit-samples", "2", "--no-bertscore", "--max-retries", "0", "--out", str(out), *extra],
                       env={"OPENAI_API_KEY": None})


def test_the_run_prints_and_stores_why_answers_failed(tmp_path):
    out = tmp_path / "run"
    with serve(_stp_script(prose_every=5)) as server:
        done = _run(server, out, "--quiet")  # quiet or not, the reasons are printed
    assert done.exit_code == 0, done.output
    records = read_jsonl(out / "predictions.jsonl")
    failed = [r for r in records if r["status"] != "ok"]
    unknown = sorted((r for r in failed if UNKNOWN in r["error"]), key=_data_order)
    prose = sorted((r for r in failed if UNKNOWN not in r["error"]), key=_data_order)
    # Both samples (a couple and a family, whose candidate lists differ) fail for the one reason.
    assert len({r["scenario"] for r in unknown}) == 2 and prose

    stored = json.loads((out / "results.json").read_text())["models"]["scripted"]["failure_reasons"]["stp"]
    assert [r["count"] for r in stored] == [len(unknown), len(prose)]
    assert stored[0]["reason"] == f"parse_error: unknown label '{UNKNOWN}'"
    assert stored[0]["example"] == unknown[0]["instance_id"] and stored[0]["error"] == unknown[0]["error"]
    assert stored[1]["reason"].startswith("parse_error: ") and stored[1]["example"] == prose[0]["instance_id"]

    text = re.sub(r"\s+", " ", done.stderr)
    assert "Why answers failed" in text
    assert f"scripted · stp: {len(failed)} of {len(records)} failed" in text
    assert f"{len(unknown)}× parse_error: unknown label '{UNKNOWN}' (e.g. {unknown[0]['instance_id']})" in text


@pytest.mark.slow
def test_report_shows_why_answers_failed_on_the_terminal_in_markdown_and_in_the_page(tmp_path):
    out = tmp_path / "run"
    with serve(_stp_script()) as server:
        assert _run(server, out, "--quiet").exit_code == 0
    failed = sorted((r for r in read_jsonl(out / "predictions.jsonl") if r["status"] != "ok"), key=_data_order)
    done = invoke_main(["report", str(out), "--out", str(tmp_path / "report"), "--bootstrap", "0", "--no-figures",
                        "--quiet"])
    assert done.exit_code == 0, done.output
    table = done.stdout[done.stdout.index("Why answers failed"):]
    assert f"scripted · stp: {len(failed)} of " in table
    assert f"    {len(failed)}× parse_error: unknown label '{UNKNOWN}' (e.g. {failed[0]['instance_id']})" in table
    markdown = (tmp_path / "report" / "failures.md").read_text()
    assert f"| scripted | STP | {len(failed)} of " in markdown and failed[0]["instance_id"] in markdown
    page = (tmp_path / "report" / "report.html").read_text()
    assert 'id="failures"' in page and f"unknown label &#39;{UNKNOWN}&#39;" in page


def test_a_run_without_failures_prints_and_stores_no_reasons(tmp_path):
    samples = choose_samples(load_samples(None), 1, "stratified")
    answers = oracle_answers("stp", get_task("stp").build(samples))
    with serve(lambda body: Reply.text(answers[request_key(body)])) as server:
        done = invoke_main(["run", "--model", "scripted", "--base-url", server.base_url, "--tasks", "stp",
                            "--limit-samples", "1", "--no-bertscore", "--quiet", "--out", str(tmp_path / "run")])
    assert done.exit_code == 0 and "Why answers failed" not in done.output
    assert json.loads((tmp_path / "run" / "results.json").read_text())["models"]["scripted"]["failure_reasons"] == {}


def _record(instance_id: str, status: str, error: str) -> PredictionRecord:
    return PredictionRecord(model="m", task="stp", instance_id=instance_id, sample_id=instance_id.split("#")[0],
                            scenario="couple", row_index=1, gold=None, status=status, error=error)  # type: ignore[arg-type]


@pytest.mark.parametrize(("errors", "reason"), [
    # the instance's own id, in a batched answer's prefix and inside the message
    (["row3: unknown label 'Maria' (expected one of: Riley, Sam, Couple)",
      "row9: unknown label 'Maria' (expected one of: Ana, Ben, Cleo, Family)"], "parse_error: unknown label 'Maria'"),
    (["no answer for id 'row3'", "no answer for id 'row9'"], "missing: no answer for id '<id>'"),
    # token counts differ from answer to answer
    (["budget_exhausted: the answer budget ran out (1,024 output tokens) before any answer (finish_reason=length)",
      "budget_exhausted: the answer budget ran out (998 output tokens) before any answer (finish_reason=length)"],
     "budget_exhausted: the answer budget ran out (N output tokens) before any answer (finish_reason=length)"),
])
def test_instances_that_fail_alike_share_one_reason(errors, reason):
    status = reason.split(":")[0]
    records = [_record(f"s{n}#row{3 if n == 0 else 9}", status, e) for n, e in enumerate(errors)]
    assert {reason_of(r) for r in records} == {reason}
    (found,) = failure_reasons(records)
    assert (found.count, found.example, found.error) == (2, "s0#row3", errors[0])


def test_hostile_errors_are_shown_as_text_and_kept_short():
    records = [_record("s#row1", "parse_error", "\x1b[31m[bold]red[/bold] " + "x" * 5000),
               _record("s#row2", "request_error", ""), _record("s#row3", "ok", "")]
    found = failure_reasons(records)
    assert [r.count for r in found] == [1, 1]
    assert "\x1b" not in found[0].reason and "\\x1b" in found[0].reason and len(found[0].reason) <= 160
    assert len(found[0].error) <= 300
    assert found[1].reason == "request_error: (no error recorded)"


def test_the_example_is_the_first_instance_in_the_datas_order_whatever_order_answers_came_in():
    import random

    records = [_record(f"s{n % 3}#row{n}", "parse_error", "unknown label 'X'") for n in range(12)]
    for seed in range(5):
        random.Random(seed).shuffle(records)
        assert [(r.count, r.example) for r in failure_reasons(records)] == [(12, "s0#row0")]


def test_only_the_commonest_reasons_are_kept_and_the_rest_counted():
    from rescue.runs.failures import TOP_REASONS, reason_lines

    records = [_record(f"s#row{n}", "parse_error", f"unknown label 'L{n % 5}'") for n in range(20)]
    found = failure_reasons(records)
    assert len(found) == TOP_REASONS and [r.count for r in found] == [4] * TOP_REASONS
    assert reason_lines(found, 20)[-1] == f"{20 - 4 * TOP_REASONS}× other reasons"


# --- grouped, not hidden (#46 item 5) ----------------------------------------------------------------------


@pytest.mark.parametrize(("errors", "reason", "values"), [
    (["intensity 42 is outside 0-10", "intensity 11 is outside 0-10", "intensity 42 is outside 0-10"],
     "parse_error: intensity N is outside 0-10", {"42": 2, "11": 1}),
    (["intensity -3 is outside 0-10", "intensity 12.5 is outside 0-10"], "parse_error: intensity N is outside 0-10",
     {"-3": 1, "12.5": 1}),
    (["between 3 and 7 rows", "between 1 and 7 rows"], "parse_error: between N and N rows", {"3 / 7": 1, "1 / 7": 1}),
    # a quoted value is the reason itself, a number inside a word or a range is no value
    (["unknown label 'L2'", "unknown label 'L2'"], "parse_error: unknown label 'L2'", {}),
    (["model gpt4o said 1-5", "model gpt4o said 1-5"], "parse_error: model gpt4o said 1-5", {}),
])
def test_a_reason_keeps_the_values_it_groups(errors, reason, values):
    from rescue.runs.failures import reason_lines

    records = [_record(f"s{n}#row{n}", "parse_error", e) for n, e in enumerate(errors)]
    (found,) = failure_reasons(records)
    assert (found.reason, found.values) == (reason, values)
    (line,) = reason_lines([found], len(errors))
    shown = ", ".join(v + (f" ×{n}" if n > 1 else "") for v, n in values.items())
    assert line == f"{len(errors)}× {reason}{f' (N: {shown})' if values else ''} (e.g. s0#row0)"


def test_only_the_commonest_values_are_kept_and_the_rest_said():
    from rescue.runs.failures import VALUES_SHOWN

    records = [_record(f"s#row{n}", "parse_error", f"intensity {20 + n} is outside 0-10") for n in range(9)]
    (found,) = failure_reasons(records)
    assert len(found.values) == VALUES_SHOWN and found.shown().endswith(", …)")


def test_the_run_and_the_report_print_the_values_of_an_er_intensity_out_of_range(tmp_path):
    samples = choose_samples(load_samples(None), 1, "stratified")
    instances = get_task("er").build(samples)
    wrong = {i.instance_id: 42 if n % 3 else 11 for n, i in enumerate(instances)}

    def script(body):
        answer = json.loads(oracle_answers("er", instances)[request_key(body)])
        for item in answer["predictions"]:
            (instance_id,) = [i.instance_id for i in instances if i.instance_id.endswith("#" + item["checkpoint_id"])]
            item["intensity"] = wrong[instance_id]
        return Reply.json(answer)

    out = tmp_path / "run"
    with serve(script) as server:
        done = invoke_main(["run", "--model", "scripted", "--base-url", server.base_url, "--tasks", "er",
                            "--limit-samples", "1", "--no-bertscore", "--max-retries", "0", "--out", str(out),
                            "--quiet"], env={"OPENAI_API_KEY": None})
    assert done.exit_code == 0, done.output
    elevens, fortytwos = sum(v == 11 for v in wrong.values()), sum(v == 42 for v in wrong.values())
    expected = f"intensity N is outside 0-10 (N: 42 ×{fortytwos}, 11 ×{elevens})"
    assert expected in done.stderr, done.stderr
    report = invoke_main(["report", str(out), "--out", str(out / "report"), "--bootstrap", "0", "--no-figures",
                          "--quiet"])
    assert report.exit_code == 0 and expected in report.stdout, report.output
    assert expected in (out / "report" / "failures.md").read_text()
