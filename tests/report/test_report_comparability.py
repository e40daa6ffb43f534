"""`rescue report` refuses runs that are not comparable, naming the difference; --allow-mixed shows them
side by side with counts and marks. Cluster bootstrap units, the clustered McNemar, the `judged` count."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue.cli import app
from rescue.data.loading import demo_path
from rescue.files import sha256_file
from rescue.report.bootstrap import bootstrap_ci, cluster_of, count_clusters
from rescue.report.comparability import ComparabilityError
from rescue.report.significance import clustered_mcnemar
from rescue.tasks.base import PredictionRecord

FAST = ("--tasks", "itp,rpp,stp,ssp", "--no-bertscore", "--quiet")


def _run(out: Path, *extra: str, model: str = "baseline/majority") -> Path:
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--model", model, *FAST, *extra])
    assert result.exit_code == 0, result.output
    return out


def _report(*runs: Path, out: Path, extra: tuple[str, ...] = ()):
    return CliRunner().invoke(app, ["report", *map(str, runs), "--out", str(out), "--bootstrap", "50", "--quiet",
                                    "--no-figures", *extra])


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("base") / "majority")


@pytest.fixture(scope="module")
def uniform(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("uniform") / "uniform", model="baseline/uniform")


def _refusal(result) -> str:
    assert result.exit_code != 0
    assert isinstance(result.exception, ComparabilityError), result.output
    return str(result.exception)


@pytest.mark.slow
def test_comparable_runs_report_and_record_what_they_used(base, uniform, tmp_path):
    used = json.loads((base / "results.json").read_text())["config"]["used"]
    assert len(used["data_sha256"]) == 64
    assert used["context_size"]["rpp"] == -1 and used["parse"] == "strict" and used["rpp_gold"] == "auto"
    assert set(used["rpp_gold_field"].values()) <= {"relation_pattern", "relation_cycle_state"}
    result = _report(base, uniform, out=tmp_path / "r")
    assert result.exit_code == 0, result.output


def test_other_rpp_gold_is_refused(base, tmp_path):
    other = _run(tmp_path / "cycle", "--rpp-gold", "relation_cycle_state", model="baseline/uniform")
    message = _refusal(_report(base, other, out=tmp_path / "r"))
    assert "RPP gold field differs" in message and "--allow-mixed" in message


def test_other_gold_on_a_shared_instance_is_refused(base, uniform, tmp_path):
    # The same instance ids with another gold label (what another gold field does on the real samples).
    other = tmp_path / "other_gold"
    shutil.copytree(uniform, other)
    lines = (other / "predictions.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    changed = next(r for r in records if r["task"] == "rpp")
    changed["gold"] = "attack_attack" if changed["gold"] != "attack_attack" else "pursue_withdraw"
    (other / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    # A run that really had that gold: its results.json names these predictions (else the reader refuses the pair).
    results = json.loads((other / "results.json").read_text())
    results["predictions"]["sha256"] = sha256_file(other / "predictions.jsonl")
    (other / "results.json").write_text(json.dumps(results))
    message = _refusal(_report(base, other, out=tmp_path / "r"))
    assert "RPP gold differs between baseline/majority and baseline/uniform on 1 shared instance" in message
    assert changed["instance_id"] in message


@pytest.mark.slow
def test_fewer_samples_are_refused_then_shown_with_counts_and_marks(base, tmp_path):
    few = _run(tmp_path / "few", "--limit-samples", "1", model="baseline/uniform")
    message = _refusal(_report(base, few, out=tmp_path / "r"))
    assert "instance sets differ" in message and "baseline/uniform:" in message
    out = tmp_path / "mixed"
    result = _report(base, few, out=out, extra=("--allow-mixed",))
    assert result.exit_code == 0, result.output
    markdown = (out / "leaderboard.md").read_text()
    assert "‡" in markdown and "(n=" in markdown and "another instance set" in markdown
    with (out / "comparisons.csv").open() as handle:
        rows = [r for r in csv.DictReader(handle) if r["metric"] == "RPP Acc" and r["scope"] == "all"]
    few_rpp = sum(1 for line in (few / "predictions.jsonl").read_text().splitlines() if '"task":"rpp"' in line)
    assert rows and int(rows[0]["instances"]) == few_rpp  # the paired test says how many it used


def test_other_data_is_refused(base, tmp_path):
    data = tmp_path / "data.jsonl"
    lines = demo_path().read_text(encoding="utf-8").splitlines()
    data.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # the demo minus its last sample
    other = _run(tmp_path / "other", "--data", str(data), model="baseline/uniform")
    message = _refusal(_report(base, other, out=tmp_path / "r"))
    assert "data (sha256) differs" in message


def test_other_context_size_is_refused(base, tmp_path):
    other = _run(tmp_path / "ctx", "--context-size", "2", model="baseline/uniform")
    assert "context size differs" in _refusal(_report(base, other, out=tmp_path / "r"))


def _with_config(run: Path, dest: Path, **changes: object) -> Path:
    """A copy of a real run whose results.json says it was scored another way (what the report reads)."""
    shutil.copytree(run, dest)
    results = json.loads((dest / "results.json").read_text())
    results["config"].update(changes)
    (dest / "results.json").write_text(json.dumps(results))
    return dest


@pytest.fixture(scope="module")
def generative(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gen")
    result = CliRunner().invoke(app, ["run", "--out", str(root / "nearest"), "--model", "baseline/nearest",
                                      "--tasks", "er", "--no-bertscore", "--quiet"])
    assert result.exit_code == 0, result.output
    return root / "nearest"


@pytest.mark.parametrize(("changes", "expected"), [
    ({"judges": ["openai/gpt-5.4"]}, "judge differs"),
    ({"judge_scale": "authors"}, "judge scale differs"),
    ({"bertscore": {"model": "roberta-large", "num_layers": 17}}, "BERTScore backbone differs"),
])
def test_other_scorers_are_refused(generative, tmp_path, changes, expected):
    first = _with_config(generative, tmp_path / "a", judges=["openai/gpt-4o"], judge_scale="likert",
                         bertscore={"model": "all-MiniLM-L6-v2", "num_layers": 6})
    second = _with_config(first, tmp_path / "b", **changes)
    assert expected in _refusal(_report(first, second, out=tmp_path / "r"))


def _record(sample: str, row: int, right: bool, scenario: str = "couple") -> PredictionRecord:
    return PredictionRecord(model="m", task="rpp", instance_id=f"{sample}#row{row}", sample_id=sample,
                            scenario=scenario, row_index=row, gold="a", prediction=["a" if right else "b"], status="ok")


def _accuracy(records: list[PredictionRecord]) -> dict[str, float]:
    return {"acc": sum(r.prediction[0] == r.gold for r in records) / len(records)}


def test_cluster_units_and_seeds():
    # Two couples with three clips each: a couple's clips are all right or all wrong.
    records = [_record(f"{couple}/clip{k}", row, couple.startswith("good"))
               for couple in ("good_a", "good_b", "bad_a", "bad_b") for k in range(3) for row in (1, 2)]
    assert cluster_of("alan_and_evelyn/004_s03e06_ct09_segment05") == "alan_and_evelyn"
    assert cluster_of("family_therapy/003/merged") == "family_therapy/003"
    assert cluster_of("demo", "group") == "demo" and cluster_of("a/b", "sample") == "a/b"
    assert count_clusters(records, "group") == 4 and count_clusters(records, "sample") == 12
    by_group = bootstrap_ci(records, _accuracy, ["acc"], n_resamples=400, seed=0, cluster="group")["acc"]
    by_sample = bootstrap_ci(records, _accuracy, ["acc"], n_resamples=400, seed=0, cluster="sample")["acc"]
    assert (by_group.high - by_group.low) > (by_sample.high - by_sample.low)
    from rescue.report.bootstrap import resample_weights

    strata = [0] * 6 + [1] * 6
    assert not (resample_weights(strata, 50, seed=0) == resample_weights(strata, 50, seed=1)).all()
    assert (resample_weights(strata, 50, seed=4) == resample_weights(strata, 50, seed=4)).all()


@pytest.mark.slow
def test_report_seeds_give_other_intervals(base, uniform, tmp_path):
    bounds = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        assert _report(base, uniform, out=out, extra=("--seed", seed)).exit_code == 0
        with (out / "leaderboard.csv").open() as handle:
            bounds.append([(r["ci_low"], r["ci_high"]) for r in csv.DictReader(handle) if r["ci_low"]])
    assert bounds[0] and bounds[0] != bounds[1]


@pytest.mark.slow
def test_report_names_the_cluster_unit(base, uniform, tmp_path):
    for unit, words in (("group", "session groups"), ("sample", "samples (clips)")):
        out = tmp_path / unit
        result = _report(base, uniform, out=out, extra=("--cluster", unit))
        assert result.exit_code == 0, result.output
        assert words in (out / "leaderboard.md").read_text()
        assert "Durkalski" in (out / "comparisons.md").read_text()
    bad = _report(base, uniform, out=tmp_path / "bad", extra=("--cluster", "couple"))
    assert bad.exit_code != 0 and "--cluster" in str(bad.exception)


def test_clustered_mcnemar_is_less_sure_than_the_exact_test_on_clustered_wins():
    # A wins every instance of one cluster only: many discordant pairs, one independent unit.
    a = [True] * 10 + [True] * 10
    b = [False] * 10 + [True] * 10
    clusters = ["c1"] * 10 + ["c2"] * 10
    assert clustered_mcnemar(a, b, clusters) > 0.05
    assert clustered_mcnemar([True, True], [True, True], ["x", "y"]) == 1.0


def test_judged_counts_only_predictions_sent_to_the_judge():
    from rescue.tasks import get_task

    def er(ok: bool, emotion: float | None) -> PredictionRecord:
        return PredictionRecord(model="m", task="er", instance_id=f"s#{ok}{emotion}", sample_id="s", scenario="couple",
                                row_index=1, gold={"emotion": "sad", "intensity": 5},
                                prediction={"emotion": "sad", "intensity": 5} if ok else None,
                                status="ok" if ok else "parse_error",
                                scores={"judge_emotion": emotion, "intensity": 5.0 if ok else 1.0},
                                judge={"judges": {"j": {"status": "ok" if ok else "minimum"}}})

    metrics = get_task("er").aggregate([er(True, 4.0), er(True, 5.0), er(False, 1.0)])
    assert metrics["judged"] == 2


def test_er_and_vp_bootstrap_take_the_vectorised_path_and_agree_with_aggregate():
    import random

    from rescue.report.bootstrap import Decomposed
    from rescue.report.columns import COMPARED, columns_for
    from rescue.report.recompute import best_statistic, column_statistic
    from rescue.tasks import get_task

    rng = random.Random(3)
    records = []
    for k in range(40):
        ok = rng.random() > 0.15
        emotion = float(rng.randint(1, 5))
        records.append(PredictionRecord(
            model="m", task="er", instance_id=f"g{k % 5}/s{k % 9}#row{k}", sample_id=f"g{k % 5}/s{k % 9}",
            scenario="couple" if k % 4 else "family", row_index=k + 1, gold={"emotion": "sad", "intensity": 5},
            prediction={"emotion": "sad", "intensity": rng.randint(0, 10)} if ok else None,
            status="ok" if ok else "parse_error",
            scores={"judge_emotion": emotion if ok else 1.0, "intensity": 3.0, "s_er": (emotion + 3) / 2 if ok else 1.0,
                    "bertscore_f1": rng.random() if ok else None}))
    task = get_task("er")
    columns = columns_for("er", COMPARED)
    fast = best_statistic("er", task.aggregate, columns, records)
    assert isinstance(fast, Decomposed)
    slow = column_statistic(task.aggregate, columns)
    for key, value in fast.evaluate(records).items():
        assert value == pytest.approx(slow(records)[key])
    intervals_fast = bootstrap_ci(records, fast, [c.id for c in columns], n_resamples=200, seed=5)
    intervals_slow = bootstrap_ci(records, slow, [c.id for c in columns], n_resamples=200, seed=5)
    for key in intervals_fast:
        assert intervals_fast[key].low == pytest.approx(intervals_slow[key].low)
        assert intervals_fast[key].high == pytest.approx(intervals_slow[key].high)


def test_a_marker_from_a_test_on_fewer_instances_says_how_many():
    from rescue.report.columns import COLUMNS
    from rescue.report.leaderboard import Cell, cell_parts

    column = next(c for c in COLUMNS if c.id == "stp.recall_at_1")
    cell = Cell(0.2926, 0.25, 0.33, significant=True, instances=458, mixed=True, paired_on=26)
    assert cell_parts(cell, column) == ("29.26†‡", "[25.00, 33.00]", "n=458, † on 26 shared")
    assert cell_parts(Cell(0.5, instances=10, significant=True, paired_on=10), column)[2] == ""
