"""What an inspect task of RESCUE-Bench evaluates and records (rescue.inspect_tasks.plan), without inspect_ai: the
same samples, instances, prompts and recorded values as ``rescue run``, and clear errors for options it refuses."""

from __future__ import annotations

import json

import pytest

from rescue.errors import RescueError
from rescue.data.loading import choose_samples, load_samples
from rescue.inspect_tasks.plan import BenchError, BenchOptions, build_plan
from rescue.tasks import get_task
from rescue.tasks.base import RenderOptions


def test_the_plan_is_the_runs_samples_instances_and_prompts():
    plan = build_plan(BenchOptions("rpp", limit_samples=2, context_size=3))
    task = get_task("rpp")
    expected = task.build(choose_samples(load_samples(None), 2, "stratified"))
    assert [i.instance_id for i in plan.instances] == [i.instance_id for i in expected]
    assert plan.messages(plan.instances[0]) == task.render([expected[0]], RenderOptions(context_size=3))
    assert plan.config.used.context_size == {"rpp": 3} and plan.config.used.batch_size == {"rpp": 1}
    assert plan.data.sample_choice == "stratified" and plan.data.sample_ids and len(plan.data.sample_ids) == 2
    metadata = plan.metadata()
    assert metadata["task"] == "rpp" and "out" not in metadata["config"]


@pytest.mark.parametrize("options", [BenchOptions("itp", limit_samples=2), BenchOptions("er", parse="lenient")])
def test_the_log_keeps_the_config_and_data_as_built(options):
    # Typed on the plan (StoredConfig, DataInfo), written as the keys they were built from: none a default adds.
    metadata = build_plan(options).metadata()
    run_config = options.run_config().to_json()
    del run_config["out"], run_config["bertscore"]  # no run directory; bertscore becomes the backbone (None)
    assert {key: metadata["config"][key] for key in run_config} == run_config
    assert set(metadata["config"]) - set(run_config) == {"bertscore", "bertscore_enabled", "rescue_version", "used"}
    assert metadata["config"]["bertscore"] is None and metadata["config"]["bertscore_enabled"] is False
    assert set(metadata["data"]) == {"path", "sha256", "samples", "sample_choice", "sample_ids", "split"}
    assert json.loads(json.dumps(metadata)) == metadata


def test_scenario_keeps_one_scenario_only():
    plan = build_plan(BenchOptions("itp", scenario="family"))
    assert plan.instances and {i.scenario for i in plan.instances} == {"family"}


@pytest.mark.parametrize(("options", "named"), [
    (BenchOptions("itp", mode="video"), "mode='video'"),
    (BenchOptions("itp", scenario="friends"), "scenario='friends'"),
    (BenchOptions("itp", parse="loose"), "parse='loose'"),
])
def test_options_it_cannot_run_are_named(options, named):
    with pytest.raises(BenchError, match=named):
        build_plan(options)


def test_an_unknown_task_or_missing_data_is_a_clear_error(tmp_path):
    with pytest.raises(RescueError, match="unknown task 'xyz'"):
        build_plan(BenchOptions("xyz"))
    with pytest.raises(RescueError, match="nowhere.jsonl"):
        build_plan(BenchOptions("itp", data=str(tmp_path / "nowhere.jsonl")))
