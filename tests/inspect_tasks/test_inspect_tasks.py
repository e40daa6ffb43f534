"""RESCUE-Bench inside inspect_ai (issue 27 item 4): ``inspect eval`` against the scripted OpenAI-compatible server
and a ``rescue run`` of the same scripted model on the same instances give the same records and the same metrics,
and ``rescue report`` over both puts them on one leaderboard; ``inspect eval rescue/itp`` on the command line finds
the tasks through the package's entry point.

The scripted model answers by the request's messages: right on some instances, wrong on others, unreadable on
some, so both paths go through request, parsing, failures and scoring for real.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tomllib
import typing
from pathlib import Path
from typing import Any

import pytest

from _cli import invoke_main
from extras import requires_extra

from rescue.data.loading import choose_samples, load_samples
from rescue.engine.runner import RunConfig, run
from rescue.tasks import get_task
from rescue.tasks.base import RenderOptions, gold_value
from rescue.testing.openai_server import Reply, request_key, serve

# inspect_ai is imported inside the tests: at collection it cost 3 s of CPU to every run, quick ones included.
pytestmark = [pytest.mark.slow, requires_extra("inspect"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]  # inspect's own retry settings

ROOT = Path(__file__).resolve().parents[2]
MODEL = "test-model"
INSPECT_MODEL = f"openai-api/scripted/{MODEL}"  # inspect's OpenAI-compatible provider: SCRIPTED_BASE_URL/_API_KEY
LIMIT = 2


def mixed_answers(task_name: str, limit: int = LIMIT) -> dict[str, str]:
    """request key -> answer for every instance of the first ``limit`` samples (stratified, as --limit-samples):
    every third the gold, every third another instance's gold (mostly wrong), every third prose no parser reads."""
    task = get_task(task_name)
    instances = task.build(choose_samples(load_samples(None), limit, "stratified"))
    answers = {}
    for k, instance in enumerate(instances):
        key = request_key({"messages": task.render([instance], RenderOptions())})
        other = instances[(k + 1) % len(instances)]
        if k % 3 == 2:
            answers[key] = "I would rather not say."
        else:
            value = gold_value(task, instance if k % 3 == 0 else other)
            answers[key] = task.format_answer([instance], {instance.instance_id: value})
    return answers


def script_for(answers: dict[str, str]):
    def script(body: dict[str, Any]) -> Reply:
        answer = answers.get(request_key(body))
        return Reply.text(answer) if answer is not None else Reply.error(400, "unknown request")

    return script


def inspect_env(server) -> dict[str, str]:
    # inspect keeps model clients by name, base URL included: each eval below also names its server's URL, so a
    # client of an earlier test's (stopped) server is never reused.
    return {"SCRIPTED_BASE_URL": server.base_url, "SCRIPTED_API_KEY": "test"}


def rescue_run(tmp_path: Path, server, tasks: list[str]) -> dict[str, Any]:
    config = RunConfig(out=str(tmp_path / "run"), models=[MODEL], tasks=tasks, base_url=server.base_url, quiet=True,
                       bertscore=False, max_retries=1, timeout=30.0, limit_samples=LIMIT)
    run(config)
    return json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))


def inspect_run(tmp_path: Path, server, tasks: list[str], monkeypatch) -> list[Any]:
    from inspect_ai import eval as inspect_eval

    from rescue.inspect_tasks.bench import rescue_task

    for name, value in inspect_env(server).items():
        monkeypatch.setenv(name, value)
    logs = inspect_eval([rescue_task(t, limit_samples=LIMIT) for t in tasks], model=INSPECT_MODEL,
                        model_base_url=server.base_url,
                        log_dir=str(tmp_path / "logs"), display="none", max_retries=1)
    assert all(log.status == "success" for log in logs), [log.error for log in logs]
    return logs


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "model"}


def test_inspect_and_rescue_run_give_identical_records_and_metrics(tmp_path, monkeypatch):
    tasks = ["itp", "rpp"]
    answers = {k: v for t in tasks for k, v in mixed_answers(t).items()}
    with serve(script_for(answers)) as server:
        results = rescue_run(tmp_path, server, tasks)
        asked_by_rescue = server.request_count
        logs = inspect_run(tmp_path, server, tasks, monkeypatch)
        # The same prompts, byte for byte: every inspect request is one the script knows, one per instance.
        assert server.request_count == 2 * asked_by_rescue
        assert len({request_key(b) for b in server.bodies}) == asked_by_rescue
    predictions = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    for log in logs:
        task = log.eval.task.split("/")[-1]
        from_inspect = {s.id: s.scores[f"rescue_{task}"].metadata["rescue_record"] for s in log.samples}
        from_rescue = {r["instance_id"]: r for r in predictions if r["task"] == task}
        assert from_inspect.keys() == from_rescue.keys()
        assert {k: comparable(v) for k, v in from_inspect.items()} == {k: comparable(v) for k, v in from_rescue.items()}
        statuses = {r["status"] for r in from_rescue.values()}
        assert "ok" in statuses and statuses - {"ok"}, "the script answers right, wrong and unreadably"
        stored = results["models"][MODEL][task]["all"]
        metrics = {m.name: m.value for score in log.results.scores for m in score.metrics.values()}
        numeric = {k: float(v) for k, v in stored.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        assert metrics == numeric
        used, run_used = log.eval.metadata["rescue"]["config"]["used"], results["config"]["used"]
        assert used["data_sha256"] == run_used["data_sha256"] and used["parse"] == run_used["parse"]
        for key in ("context_size", "batch_size", "task_options"):
            assert used[key] == {task: run_used[key][task]}

    # One leaderboard: the report reads the run directory and the folder of inspect logs, finds them comparable
    # (same data, options, gold and instances) and shows the same numbers for both.
    done = invoke_main(["report", str(tmp_path / "run"), str(tmp_path / "logs"), "--out", str(tmp_path / "report"),
                        "--bootstrap", "0", "--no-html", "--no-figures"])
    assert done.exit_code == 0, done.output
    rows = list(csv.DictReader((tmp_path / "report" / "leaderboard.csv").open(encoding="utf-8")))
    by_system: dict[str, dict[tuple[str, str], str]] = {}
    for row in rows:
        by_system.setdefault(row["system"], {})[(row["scope"], row["metric"])] = row["value"]
    assert set(by_system) == {MODEL, INSPECT_MODEL}
    assert by_system[MODEL] == by_system[INSPECT_MODEL]
    assert {task for _, metric in by_system[MODEL] for task in tasks if metric.startswith(task.upper())} == set(tasks)


def _entry_point_site(tmp_path: Path) -> Path:
    """A folder whose dist-info declares the package's inspect_ai entry point exactly as pyproject.toml does, so the
    CLI finds ``rescue/itp`` whether or not this checkout's metadata was reinstalled."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]["inspect_ai"]
    site = tmp_path / "site"
    info = site / "rescue_inspect_entry-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rescue-inspect-entry\nVersion: 0\n", encoding="utf-8")
    lines = "".join(f"{name} = {target}\n" for name, target in declared.items())
    (info / "entry_points.txt").write_text(f"[inspect_ai]\n{lines}", encoding="utf-8")
    return site


def test_inspect_cli_runs_rescue_itp_through_the_entry_point_and_the_report_checks_its_options(tmp_path):
    from inspect_ai.log import read_eval_log

    answers = mixed_answers("itp", limit=1)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "OPENAI_"))}
    inspect = Path(sys.executable).with_name("inspect")
    with serve(script_for(answers)) as server:
        env.update(inspect_env(server))
        env["PYTHONPATH"] = os.pathsep.join([str(_entry_point_site(tmp_path)), str(ROOT / "src"),
                                             env.get("PYTHONPATH", "")])
        done = subprocess.run([str(inspect), "eval", "rescue/itp", "--model", INSPECT_MODEL, "-T", "limit_samples=1",
                               "-T", "parse=lenient", "--log-dir", str(tmp_path / "logs"), "--display", "none",
                               "--max-retries", "1"],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        assert server.request_count == len(answers)
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and log.eval.task == "rescue/itp"
    assert log.eval.task_args["parse"] == "lenient"
    assert log.eval.metadata["rescue"]["config"]["used"]["parse"] == "lenient"
    assert len(log.samples) == len(answers)
    # The report checks an inspect run like any run: beside a strict rescue run of the same instances, the
    # lenient parse policy is named and the report refused.
    run(RunConfig(out=str(tmp_path / "run"), models=["baseline/majority"], tasks=["itp"], limit_samples=1, quiet=True,
                  bertscore=False))
    done_report = invoke_main(["report", str(tmp_path / "run"), str(path), "--out", str(tmp_path / "report"),
                               "--bootstrap", "0", "--no-html", "--no-figures"])
    assert done_report.exit_code == 2, done_report.output
    assert "parse policy differs" in done_report.output and "lenient" in done_report.output


def _judge_or_model(answers: dict[str, str]):
    """The evaluated model answers from ``answers``; the judge ("judge-model") grades each prompt with a score
    that depends on the prompt, so a grade read for the wrong instance would show."""
    def script(body: dict[str, Any]) -> Reply:
        if body.get("model") == "judge-model":
            score = 1 + int(request_key(body), 16) % 5
            return Reply.json({"emotion_score": score, "verdict": "pass", "notes": f"graded {score}"})
        return script_for(answers)(body)

    return script


def _without_names(record: dict[str, Any]) -> dict[str, Any]:
    """A record without the names the two paths give the same models (inspect's provider prefix)."""
    judge = record.get("judge") or {}
    grades = sorted(json.dumps(g, sort_keys=True) for g in (judge.get("judges") or {}).values())
    return {**comparable(record), "judge": {**judge, "judges": grades}}


def test_er_is_judged_with_the_tasks_rubric_by_inspects_grader_role(tmp_path, monkeypatch):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from rescue.inspect_tasks.bench import rescue_task

    answers = mixed_answers("er")
    with serve(_judge_or_model(answers)) as server:
        config = RunConfig(out=str(tmp_path / "run"), models=[MODEL], tasks=["er"], base_url=server.base_url,
                           judges=["judge-model"], judge_base_url=server.base_url, quiet=True, bertscore=False,
                           max_retries=1, timeout=30.0, limit_samples=LIMIT)
        run(config)
        for name, value in inspect_env(server).items():
            monkeypatch.setenv(name, value)
        (log,) = inspect_eval(rescue_task("er", limit_samples=LIMIT), model=INSPECT_MODEL,
                              model_base_url=server.base_url, display="none",
                              model_roles={"grader": get_model("openai-api/scripted/judge-model",
                                                               base_url=server.base_url)},
                              log_dir=str(tmp_path / "logs"), max_retries=1)
    assert log.status == "success", log.error
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    predictions = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    from_inspect = {s.id: _without_names(s.scores["rescue_er"].metadata["rescue_record"]) for s in log.samples}
    assert from_inspect == {r["instance_id"]: _without_names(r) for r in predictions}
    judged = [r for r in from_inspect.values() if r["scores"].get("judge_emotion") is not None]
    assert len({r["scores"]["judge_emotion"] for r in judged}) > 1
    metrics = {m.name: m.value for score in log.results.scores for m in score.metrics.values()}
    stored = results["models"][MODEL]["er"]["all"]
    assert metrics == {k: float(v) for k, v in stored.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    assert metrics["s_er"] > 0 and log.eval.model_roles["grader"].model == "openai-api/scripted/judge-model"


def test_an_eval_that_stopped_on_an_error_reports_its_failure_and_says_so(tmp_path, monkeypatch):
    from inspect_ai import eval as inspect_eval

    from rescue.inspect_tasks.bench import rescue_task

    task = get_task("itp")
    instances = task.build(choose_samples(load_samples(None), 1, "stratified"))
    failing = instances[1]
    answers = {request_key({"messages": task.render([i], RenderOptions())}):
               task.format_answer([i], {i.instance_id: gold_value(task, i)}) for i in instances if i is not failing}

    def script(body: dict[str, Any]) -> Reply:
        answer = answers.get(request_key(body))
        return Reply.text(answer) if answer is not None else Reply.error(400, "bad request")

    with serve(script) as server:
        for name, value in inspect_env(server).items():
            monkeypatch.setenv(name, value)
        (log,) = inspect_eval(rescue_task("itp", limit_samples=1), model=INSPECT_MODEL,
                              model_base_url=server.base_url, display="none",
                              log_dir=str(tmp_path / "logs"), max_retries=1)
    assert log.status == "error"  # inspect stops an eval at its first failed sample unless told otherwise
    ran = {s.id for s in log.samples}
    assert failing.instance_id in ran
    done = invoke_main(["report", str(tmp_path / "logs"), "--out", str(tmp_path / "report"), "--bootstrap", "0",
                        "--no-html", "--no-figures"])
    assert done.exit_code == 0, done.output
    assert "the inspect eval ended with status error" in done.output
    (row,) = [r for r in csv.DictReader((tmp_path / "report" / "leaderboard.csv").open(encoding="utf-8"))
              if r["scope"] == "all" and r["metric"] == "ITP F1"]
    assert (int(row["instances"]), int(row["failures"])) == (len(ran), 1)  # the failed request counts, as in rescue run


def test_the_inspect_parameters_are_rescue_runs_options():
    """Each -T parameter named like a `rescue run` option has its type and default, from the one declaration."""
    import inspect

    from rescue.engine.run_options import declared_options
    from rescue.inspect_tasks import bench

    declared = {d.name: d for d in declared_options()}
    shared = [p for p in inspect.signature(bench.itp).parameters.values() if p.name in declared]
    assert {p.name for p in shared} >= {"mode", "parse", "sample_choice", "judge_scale", "data", "split", "splits"}
    for parameter in shared:
        assert parameter.default == declared[parameter.name].default or parameter.default is None, parameter.name
    hints = typing.get_type_hints(bench.rescue_task)
    for name in ("mode", "parse", "sample_choice", "judge_scale"):
        assert hints[name] == declared[name].annotation, name
