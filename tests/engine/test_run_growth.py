"""A run that grows (#46 item 4): a model or a task added to a run folder with the same data, rendering and
settings grows the run in place (what it holds is answered from the cache, the new pairs are asked), and
results.json says what was added when; what would make the run incomparable is still refused, naming it.
Through the real CLI, against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest
from _cli import invoke_main

from rescue.data.loading import choose_samples, load_samples
from rescue.tasks import get_task
from rescue.testing.openai_server import serve
from rescue.testing.oracle import OracleScript

ENV = {"OPENAI_API_KEY": "test"}


@pytest.fixture(scope="module")
def oracle_samples():
    return choose_samples(load_samples(None), 1, "stratified")  # what --limit-samples 1 takes


def _oracle(samples, *tasks: str) -> OracleScript:
    return OracleScript(samples, [get_task(t) for t in tasks], batch_size=1)


def _run(server, out, *args: str):
    return invoke_main(["run", "--out", str(out), "--base-url", server.base_url, "--limit-samples", "1",
                        "--no-bertscore", "--quiet", "--timeout", "30", *args], env=ENV)


def _instances(samples, task: str) -> int:
    return len(get_task(task).build(samples))


def test_a_model_then_a_task_added_grow_the_run_asking_only_the_new_pairs(tmp_path, oracle_samples):
    out = tmp_path / "run"
    itp, rpp = _instances(oracle_samples, "itp"), _instances(oracle_samples, "rpp")
    with serve(_oracle(oracle_samples, "itp", "rpp")) as server:
        first = _run(server, out, "--model", "a", "--tasks", "itp")
        assert first.exit_code == 0, first.output
        made = json.loads((out / "results.json").read_text())
        assert made["growth"] == []  # a run made by one command lists no steps
        assert server.request_count == itp

        # The same command with a second model: before #46 "holds a run with another configuration".
        grown = _run(server, out, "--model", "a", "--model", "b", "--tasks", "itp")
        assert grown.exit_code == 0, grown.output
        assert "growing the run" in grown.stderr and "adding model b" in grown.stderr
        assert server.request_count == 2 * itp  # a's answers came from the cache
        results = json.loads((out / "results.json").read_text())
        assert results["config"]["models"] == ["a", "b"]
        assert results["models"]["a"]["itp"] == made["models"]["a"]["itp"]
        assert results["models"]["b"]["itp"]["all"]["accuracy"] == 1.0
        steps = results["growth"]
        assert [(s["models"], s["tasks"]) for s in steps] == [(["a"], ["itp"]), (["b"], [])]
        assert steps[0]["run_id"] == made["run"]["run_id"] and steps[1]["run_id"] == results["run"]["run_id"]
        assert all(s["at"] for s in steps)

        # Only the new task named: the run's models answer it, the task it holds is kept (from the cache).
        third = _run(server, out, "--model", "b", "--tasks", "rpp")
        assert third.exit_code == 0, third.output
        assert "adding task rpp" in third.stderr
        assert server.request_count == 2 * itp + 2 * rpp
        results = json.loads((out / "results.json").read_text())
        assert results["config"]["tasks"] == ["itp", "rpp"] and results["config"]["models"] == ["a", "b"]
        assert {t for t in ("itp", "rpp") if t in results["models"]["a"]} == {"itp", "rpp"}
        assert [(s["models"], s["tasks"]) for s in results["growth"]] == [
            (["a"], ["itp"]), (["b"], []), ([], ["rpp"])]

        # A plain rerun adds nothing, asks nothing and keeps the steps; so does rescore.
        again = _run(server, out, "--model", "a", "--model", "b", "--tasks", "itp,rpp")
        assert again.exit_code == 0 and "growing" not in again.stderr
        assert server.request_count == 2 * itp + 2 * rpp
        assert json.loads((out / "results.json").read_text())["growth"] == results["growth"]
    rescored = invoke_main(["rescore", str(out), "--quiet"], env=ENV)
    assert rescored.exit_code == 0, rescored.output
    assert json.loads((out / "results.json").read_text())["growth"] == results["growth"]


@pytest.mark.parametrize(("args", "named"), [
    (("--temperature", "0.5"), "temperature: 0.0 → 0.5"),
    (("--context-size", "2"), "context_size: None → 2"),
    (("--parse", "lenient"), "parse: 'strict' → 'lenient'"),
    (("--limit", "3"), "limit: None → 3"),
    (("--data", "DATA"), "data: sha256"),
])
def test_what_makes_the_run_incomparable_is_refused_naming_it(tmp_path, oracle_samples, args, named):
    out = tmp_path / "run"
    if "DATA" in args:  # the demo data, one sample less: other data
        other = tmp_path / "other.jsonl"
        lines = load_samples(None)
        other.write_text("".join(s.model_dump_json() + "\n" for s in lines[1:]), encoding="utf-8")
        args = tuple(str(other) if a == "DATA" else a for a in args)
    with serve(_oracle(oracle_samples, "itp")) as server:
        assert _run(server, out, "--model", "a", "--tasks", "itp").exit_code == 0
        before = (out / "results.json").read_text()
        refused = _run(server, out, "--model", "a", "--model", "b", "--tasks", "itp", *args)
        asked = server.request_count
    assert refused.exit_code == 2, refused.output
    assert "another configuration" in refused.stderr and named in refused.stderr, refused.stderr
    assert (out / "results.json").read_text() == before  # untouched
    assert asked == _instances(oracle_samples, "itp")  # nothing asked for b


def test_a_graded_task_added_to_a_run_without_one_grows_it(tmp_path, oracle_samples):
    # ITP's run stores no judge or BERTScore settings (nothing it scores reads them); ER brings them.
    out = tmp_path / "run"
    with serve(_oracle(oracle_samples, "itp", "er")) as server:
        assert _run(server, out, "--model", "a", "--tasks", "itp").exit_code == 0
        grown = _run(server, out, "--model", "a", "--tasks", "itp,er")
        assert grown.exit_code == 0, grown.output
        assert server.request_count == _instances(oracle_samples, "itp") + _instances(oracle_samples, "er")
    results = json.loads((out / "results.json").read_text())
    assert "er" in results["models"]["a"] and results["growth"][-1]["tasks"] == ["er"]


def test_a_run_with_a_graded_task_still_refuses_another_judge_setting(tmp_path, oracle_samples):
    out = tmp_path / "run"
    with serve(_oracle(oracle_samples, "er")) as server:
        assert _run(server, out, "--model", "a", "--tasks", "er").exit_code == 0
        refused = _run(server, out, "--model", "a", "--model", "b", "--tasks", "er", "--judge-repeats", "2",
                       "--judge", "j")
    assert refused.exit_code == 2 and "judge" in refused.stderr, refused.output


def test_no_model_named_resumes_the_runs_own_models_without_adding_the_baselines(tmp_path, oracle_samples):
    out = tmp_path / "run"
    with serve(_oracle(oracle_samples, "itp", "rpp")) as server:
        assert _run(server, out, "--model", "a", "--tasks", "itp").exit_code == 0
        grown = _run(server, out, "--tasks", "rpp")
        assert grown.exit_code == 0, grown.output
    results = json.loads((out / "results.json").read_text())
    assert list(results["models"]) == ["a"] and results["config"]["tasks"] == ["itp", "rpp"]


def test_overwrite_still_replaces_instead_of_growing(tmp_path, oracle_samples):
    out = tmp_path / "run"
    with serve(_oracle(oracle_samples, "itp", "rpp")) as server:
        assert _run(server, out, "--model", "a", "--tasks", "itp").exit_code == 0
        replaced = _run(server, out, "--model", "b", "--tasks", "rpp", "--overwrite")
        assert replaced.exit_code == 0, replaced.output
    results = json.loads((out / "results.json").read_text())
    assert list(results["models"]) == ["b"] and results["config"]["tasks"] == ["rpp"] and results["growth"] == []


# The results.json a run that grows reads back is untrusted input (#42 item 4): an edited one grows nothing and
# is refused naming the file and field, or read as far as it is sound; never a traceback, never a lost run.
@pytest.mark.parametrize(("path", "value"), [
    (("config", "models"), "a"),
    (("config", "models"), [1, 2]),
    (("config", "tasks"), 7),
    (("config", "seed"), "x"),
    (("config", "seed"), 1e308),
    (("growth",), "x"),
    (("growth",), [1]),
    (("growth",), [{"models": "a"}]),
])
def test_an_edited_results_json_is_refused_naming_it_and_nothing_is_lost(tmp_path, oracle_samples, path, value):
    out = tmp_path / "run"
    with serve(_oracle(oracle_samples, "itp")) as server:
        assert _run(server, out, "--model", "a", "--tasks", "itp").exit_code == 0
        results = json.loads((out / "results.json").read_text())
        holder = results
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = value
        edited = json.dumps(results)
        (out / "results.json").write_text(edited)
        asked = server.request_count
        refused = _run(server, out, "--model", "a", "--model", "b", "--tasks", "itp")
        assert server.request_count == asked
    assert refused.exit_code == 2, refused.output
    assert "Traceback" not in refused.output and "results.json" in refused.stderr, refused.stderr
    assert (out / "results.json").read_text() == edited  # nothing replaced
