"""Splits by session group (issue 27 item 1): leak-free, stratified, deterministic, and --split on every command."""

from __future__ import annotations

import json

import pytest

from rescue.data.groups import infer_groups
from rescue.data.splits import SplitError, check_leak_free, make_splits, read_plan, select_split
from _cli import invoke_main


def _groups_per_split(plan, samples):
    groups = infer_groups(samples)
    return {name: {groups.group_of(i) for i in ids} for name, ids in plan.splits.items()}


def _assert_leak_free(plan, samples):
    per_split = _groups_per_split(plan, samples)
    names = list(per_split)
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            assert not per_split[names[a]] & per_split[names[b]], (names[a], names[b])
    assert sorted(i for ids in plan.splits.values() for i in ids) == sorted(s.sample_id for s in samples)
    check_leak_free(plan, infer_groups(samples))


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_no_group_in_two_splits_on_the_real_samples(real_samples, seed):
    plan = make_splits(real_samples, seed=seed)
    _assert_leak_free(plan, real_samples)
    # Families span several clips (folders): a family is one group, so all its clips share a split.
    family = [s for s in real_samples if s.scenario == "family"]
    assert len({infer_groups(real_samples).group_of(s.sample_id) for s in family}) < len(family)
    # Stratified: each scenario has samples in train.
    train = set(plan.splits["train"])
    assert {s.scenario for s in real_samples if s.sample_id in train} == {"couple", "family"}


@pytest.mark.parametrize("folds", [2, 3, 5])
def test_folds_are_leak_free_and_balanced(real_samples, folds):
    plan = make_splits(real_samples, folds=folds, seed=3)
    assert plan.names() == [f"fold{k}" for k in range(1, folds + 1)]
    _assert_leak_free(plan, real_samples)
    assert all(plan.splits[name] for name in plan.names())


def test_the_same_seed_gives_the_same_plan_and_the_demo_splits(demo_samples):
    first = make_splits(demo_samples, seed=4)
    assert first == make_splits(demo_samples, seed=4)
    _assert_leak_free(first, demo_samples)
    # Shares are of samples per scenario: with test 0.5 a scenario of several groups gives some to test.
    plan = make_splits(demo_samples, test=0.5, dev=0.0, seed=0)
    assert plan.names() == ["train", "test"]
    assert plan.splits["test"] and plan.splits["train"]


def test_bad_shares_and_folds_are_errors(demo_samples):
    with pytest.raises(SplitError, match="--folds 1"):
        make_splits(demo_samples, folds=1)
    with pytest.raises(SplitError, match="under 1"):
        make_splits(demo_samples, test=0.6, dev=0.5)


def test_rescue_splits_writes_a_plan_and_split_restricts_tasks_stats_and_run(tmp_path):
    out = tmp_path / "splits.json"
    result = invoke_main(["splits", "--out", str(out), "--test", "0.5", "--dev", "0", "--quiet"])
    assert result.exit_code == 0, result.output
    plan = read_plan(out)
    test_ids = plan.splits["test"]
    assert test_ids

    stats = invoke_main(["stats", "--split", "test", "--splits", str(out), "--format", "json"])
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.stdout)["all"]["samples"] == len(test_ids)

    counts = invoke_main(["tasks", "--split", "test", "--splits", str(out), "--format", "json"])
    assert counts.exit_code == 0, counts.output
    everything = json.loads(invoke_main(["tasks", "--format", "json"]).stdout)
    assert sum(v["samples"] for v in json.loads(counts.stdout)["itp"].values()) < \
        sum(v["samples"] for v in everything["itp"].values())

    run = invoke_main(["run", "--model", "baseline/majority", "--tasks", "itp", "--no-bertscore", "--quiet",
                       "--split", "test", "--splits", str(out), "--out", str(tmp_path / "run")])
    assert run.exit_code == 0, run.output
    data = json.loads((tmp_path / "run" / "results.json").read_text())["data"]
    assert data["split"] == "test" and data["sample_choice"] == "split:test"
    assert sorted(data["sample_ids"]) == sorted(test_ids)


def test_a_split_that_is_not_there_or_of_other_data_is_a_clear_error(tmp_path, demo_samples):
    out = tmp_path / "splits.json"
    assert invoke_main(["splits", "--out", str(out), "--quiet"]).exit_code == 0
    missing = invoke_main(["stats", "--split", "validation", "--splits", str(out)])
    assert missing.exit_code == 2 and "no split 'validation'" in missing.output and str(out) in missing.output
    plan = json.loads(out.read_text())
    plan["splits"]["train"].append("someone_else/001")
    out.write_text(json.dumps(plan))
    with pytest.raises(SplitError, match="does not hold"):
        select_split(demo_samples, out, "train")
    out.write_text('{"version": 1, "scheme": "halves"')
    broken = invoke_main(["tasks", "--split", "train", "--splits", str(out)])
    assert broken.exit_code == 2 and f"{out}:1" in broken.output
    out.write_text('{"version": 1, "scheme": "halves", "seed": 0, "grouping": "x"}')
    bad = invoke_main(["tasks", "--split", "train", "--splits", str(out)])
    assert bad.exit_code == 2 and "field scheme" in bad.output
    absent = invoke_main(["tasks", "--split", "train", "--splits", str(tmp_path / "nope.json")])
    assert absent.exit_code == 2 and "rescue splits" in absent.output


def test_report_split_keeps_only_that_splits_instances(tmp_path):
    out = tmp_path / "splits.json"
    assert invoke_main(["splits", "--out", str(out), "--test", "0.5", "--dev", "0", "--quiet"]).exit_code == 0
    test_ids = set(read_plan(out).splits["test"])
    run = invoke_main(["run", "--model", "baseline/majority", "--tasks", "itp,rpp", "--no-bertscore", "--quiet",
                       "--out", str(tmp_path / "run")])
    assert run.exit_code == 0, run.output
    report = invoke_main(["report", str(tmp_path / "run"), "--out", str(tmp_path / "rep"), "--split", "test",
                          "--splits", str(out), "--bootstrap", "0", "--no-html", "--no-figures", "--quiet"])
    assert report.exit_code == 0, report.output
    assert "--split test" in report.output
    rows = (tmp_path / "rep" / "leaderboard.csv").read_text()
    full = json.loads((tmp_path / "run" / "results.json").read_text())["models"]["baseline/majority"]["itp"]["all"]
    from rescue.tasks import TASKS, scoped_aggregates
    from rescue.runs.folder import read_predictions
    kept = [r for r in read_predictions(tmp_path / "run" / "predictions.jsonl") if r.task == "itp" and r.sample_id in test_ids]
    expected = scoped_aggregates(TASKS["itp"], kept)["all"]
    assert expected["instances"] < full["instances"]
    assert str(expected["instances"]) in rows or f"{expected['f1'] * 100:.2f}" in rows
