"""``rescue review init --benchmark --sample N`` (issue #43 item 2): per task N instances, stratified by scenario and
session group, drawn with a fixed seed and recorded in benchmark.json; the project then holds only those."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from _cli import invoke_main
from bench_helpers import ALL_TASKS, make_bench

from rescue.data.groups import infer_groups
from rescue.data.loading import load_samples
from rescue.data.reading import demo_path
from rescue.errors import ReviewError
from rescue.human.benchmark import STRATA, init_benchmark, load_benchmark, stratified_sample
from rescue.tasks import get_task


def _stratum(instance) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    groups = infer_groups(load_samples(demo_path()))
    return instance.sample.scenario, groups.group_of(instance.sample.sample_id)


def test_each_task_keeps_n_instances_in_its_strata_shares_recorded_in_benchmark_json(tmp_path):
    root = make_bench(tmp_path / "b", sample=5)
    config = json.loads((root / "benchmark.json").read_text())
    sample = config["sample"]
    assert sample["per_task"] == 5 and sample["seed"] == 0 and sample["strata"] == list(STRATA)
    bench = load_benchmark(root)
    built = {t: get_task(t).build(load_samples(demo_path())) for t in ALL_TASKS}
    for task in ALL_TASKS:
        kept = bench.instances[task]
        assert [i.instance_id for i in kept] == sample["instances"][task] and len(kept) == 5 == config["instances"][task]
        assert sample["of"][task] == len(built[task])
        # Each stratum in its share of the task's instances (largest remainder: within one of it).
        everyone, chosen = Counter(map(_stratum, built[task])), Counter(map(_stratum, kept))
        for stratum, size in everyone.items():
            assert abs(chosen[stratum] - 5 * size / len(built[task])) < 1, (task, stratum)
        assert [i.instance_id for i in kept] == [i.instance_id for i in built[task] if i.instance_id in set(sample["instances"][task])]
        assert bench.instance(task, 1).instance_id == kept[0].instance_id  # numbered within the subset


def test_the_same_seed_draws_the_same_instances_and_another_seed_others(tmp_path):
    instances = get_task("itp").build(load_samples(demo_path()))
    first = [i.instance_id for i in stratified_sample(instances, 7, 0, "itp")]
    assert first == [i.instance_id for i in stratified_sample(instances, 7, 0, "itp")]
    assert first != [i.instance_id for i in stratified_sample(instances, 7, 1, "itp")]
    assert stratified_sample(instances, len(instances) + 5, 0, "itp") == instances  # a task with no more keeps all
    a = init_benchmark(tmp_path / "a", demo_path(), ["itp", "er"], sample=4, seed=3)
    b = init_benchmark(tmp_path / "b", demo_path(), ["itp", "er"], sample=4, seed=3)
    assert a["sample"] == b["sample"]


def test_a_sample_the_data_does_not_make_is_refused_naming_the_field(tmp_path):
    root = make_bench(tmp_path / "b", tasks=["stp"], sample=2)
    path = root / "benchmark.json"
    config = json.loads(path.read_text())
    config["sample"]["instances"]["stp"][0] = "no/such#row1"
    path.write_text(json.dumps(config))
    with pytest.raises(ReviewError, match=r"sample\.instances\.stp: 'no/such#row1'"):
        load_benchmark(root)
    del config["sample"]["instances"]
    path.write_text(json.dumps(config))
    with pytest.raises(ReviewError, match=r"sample\.instances: Field required"):
        load_benchmark(root)
    with pytest.raises(ReviewError, match="--sample 0"):
        init_benchmark(tmp_path / "c", demo_path(), ["stp"], sample=0)


def test_the_command_takes_sample_and_seed(tmp_path):
    made = invoke_main(["review", "init", str(tmp_path / "p"), "--benchmark", "--data", str(demo_path()),
                        "--tasks", "rpp,er", "--sample", "3", "--seed", "9"])
    assert made.exit_code == 0, made.output
    assert "stratified, seed 9" in " ".join(made.output.split())
    config = json.loads((tmp_path / "p" / "benchmark.json").read_text())
    assert config["sample"]["seed"] == 9 and config["instances"] == {"rpp": 3, "er": 3}
    refused = invoke_main(["review", "init", str(tmp_path / "q"), "--benchmark", "--data", str(demo_path()), "--sample", "0"])
    assert refused.exit_code == 2 and not (tmp_path / "q").exists()
