"""The bootstrap's ``--seed``: the same seed repeats every draw, a different seed draws differently.

A bootstrap that ignores its seed (always drawing with seed 0) passes a test that only repeats one seed,
so each level that carries the seed — the public bootstrap functions and ``rescue report --seed`` — is
checked both ways.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue.cli import app
from rescue.report.bootstrap import bootstrap_ci, paired_bootstrap
from rescue.tasks.base import PredictionRecord


def _record(sample: str, row: int, hit: bool, *, scenario: str, model: str = "m") -> PredictionRecord:
    return PredictionRecord(model=model, task="rpp", instance_id=f"{sample}#row{row}", sample_id=sample,
                            scenario=scenario, row_index=row, gold="a", prediction=["a" if hit else "b"], status="ok")


def _accuracy(records: list[PredictionRecord]) -> dict[str, float]:
    return {"acc": sum(r.prediction == [r.gold] for r in records) / len(records)}


# Twelve conversations (each its own group) of different lengths and accuracies, so that replicate values
# are nearly all distinct and two different draws cannot give the same percentiles by accident.
RECORDS = [
    _record(f"g{k}/s{k}", row, (row * (k + 3)) % 7 < k % 5 + 2, scenario="couple" if k < 8 else "family")
    for k in range(12)
    for row in range(1, 4 + 2 * k)
]
OTHER = [
    _record(r.sample_id, r.row_index, r.row_index % 3 != 0, scenario=r.scenario, model="other") for r in RECORDS
]


def _interval(seed: int) -> tuple[float | None, float | None]:
    interval = bootstrap_ci(RECORDS, _accuracy, ["acc"], n_resamples=200, seed=seed)["acc"]
    return interval.low, interval.high


def _paired(seed: int) -> tuple[float | None, float | None, float | None]:
    result = paired_bootstrap(RECORDS, OTHER, _accuracy, ["acc"], n_resamples=200, seed=seed)["acc"]
    return result.low, result.high, result.p_value


def test_bootstrap_interval_repeats_with_a_seed_and_moves_with_another():
    assert _interval(1) == _interval(1)
    assert _interval(1) != _interval(2)
    assert len({_interval(seed) for seed in (0, 1, 2, 3)}) == 4


def test_paired_bootstrap_repeats_with_a_seed_and_moves_with_another():
    assert _paired(5) == _paired(5)
    assert len({_paired(seed) for seed in (0, 5, 6)}) == 3


def _leaderboard_intervals(report: Path) -> dict[tuple[str, str, str], tuple[str, str]]:
    with (report / "leaderboard.csv").open(encoding="utf-8") as handle:
        return {(r["system"], r["scope"], r["metric"]): (r["ci_low"], r["ci_high"]) for r in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def uniform_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "uniform"
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--model", "baseline/uniform", "--quiet",
                                      "--tasks", "itp,rpp", "--no-bertscore"])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow
def test_report_seed_option_reaches_the_leaderboard_intervals(uniform_run, tmp_path):
    # The demo data has three couple conversations: with many replicates the percentiles of different draws
    # often coincide, with 20 they interpolate between the extreme replicates and move with the draw.
    def intervals(seed: int, name: str) -> dict[tuple[str, str, str], tuple[str, str]]:
        out = tmp_path / name
        result = CliRunner().invoke(app, ["report", str(uniform_run), "--out", str(out), "--bootstrap", "20",
                                          "--seed", str(seed), "--no-html", "--no-figures"])
        assert result.exit_code == 0, result.output
        return _leaderboard_intervals(out)

    first, again = intervals(1, "a"), intervals(1, "b")
    assert first == again
    assert first[("baseline/uniform", "all", "RPP Acc")][0]  # there are intervals to compare
    for seed in (2, 3):
        assert intervals(seed, f"seed{seed}") != first
