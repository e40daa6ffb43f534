"""The report's vectorised statistics for the closed tasks: used on real runs, and equal to the slow path.

``best_statistic`` falls back to the task's own ``aggregate`` (one call per replicate) whenever the vectorised
form disagrees with it, so a broken fast path costs only speed and no number shows it. These tests pin that
the fast path is chosen on real baseline runs (failures included) and that it gives the same replicates and
intervals as the slow path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rescue.cli import app
from rescue.report.bootstrap import Decomposed, bootstrap_ci, paired_bootstrap
from rescue.report.columns import COLUMNS, columns_for
from rescue.report.runs import read_predictions
from rescue.report.recompute import best_statistic, column_statistic, in_scope
from rescue.tasks import get_task
from rescue.tasks.base import PredictionRecord

CLOSED = ("itp", "rpp", "stp", "ssp")
SCOPES = ("all", "couple", "family")


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> dict[str, list[PredictionRecord]]:
    """Per model: every record of an offline run on the demo data, and a copy with every fifth one failed."""
    out: Path = tmp_path_factory.mktemp("fast") / "run"
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--model", "baseline/majority", "--model",
                                      "baseline/uniform", "--tasks", ",".join(CLOSED), "--no-bertscore", "--quiet"])
    assert result.exit_code == 0, result.output
    loaded = read_predictions(out / "predictions.jsonl")
    by_model = {model: [r for r in loaded if r.model == model] for model in ("baseline/majority", "baseline/uniform")}
    by_model["failing"] = [
        r.model_copy(update={"model": "failing", "prediction": None, "status": "parse_error"}) if k % 5 == 0 else
        r.model_copy(update={"model": "failing"})
        for k, r in enumerate(by_model["baseline/uniform"])
    ]
    return by_model


def _task(records: list[PredictionRecord], task: str, scope: str) -> list[PredictionRecord]:
    return in_scope([r for r in records if r.task == task], scope)


def _statistics(task: str, records: list[PredictionRecord]):
    columns = columns_for(task)
    slow = column_statistic(get_task(task).aggregate, columns)
    return best_statistic(task, get_task(task).aggregate, columns, records), slow, [c.id for c in columns]


@pytest.mark.parametrize("task", CLOSED)
def test_the_fast_path_is_chosen_on_real_runs(records, task):
    for model, model_records in records.items():
        for scope in SCOPES:
            chosen = _task(model_records, task, scope)
            assert chosen, (model, scope)
            fast, _, _ = _statistics(task, chosen)
            assert isinstance(fast, Decomposed), (model, task, scope)
    # The leaderboard asks with its own columns (no ITP accuracy); the fast path must serve those too.
    chosen = _task(records["baseline/uniform"], task, "all")
    assert isinstance(best_statistic(task, get_task(task).aggregate, columns_for(task, COLUMNS), chosen), Decomposed)


@pytest.mark.parametrize("task", CLOSED)
def test_fast_and_slow_paths_agree_on_every_resample(records, task):
    chosen = _task(records["failing"], task, "all")
    fast, slow, keys = _statistics(task, chosen)
    assert isinstance(fast, Decomposed)
    samples = sorted({r.sample_id for r in chosen})
    rng = np.random.default_rng(0)
    # Random multisets of whole conversations, as the bootstrap draws them (repeats included).
    for _ in range(30):
        drawn = rng.choice(samples, size=len(samples), replace=True)
        subset = [r for sample in drawn for r in chosen if r.sample_id == sample]
        expected = slow(subset)
        observed = fast.evaluate(subset)
        for key in keys:
            assert observed[key] == pytest.approx(expected[key], abs=1e-12), (task, key, list(drawn))
    intervals_fast = bootstrap_ci(chosen, fast, keys, n_resamples=100, seed=4)
    intervals_slow = bootstrap_ci(chosen, slow, keys, n_resamples=100, seed=4)
    for key in keys:
        assert intervals_fast[key].low is not None
        assert (intervals_fast[key].low, intervals_fast[key].high) == pytest.approx(
            (intervals_slow[key].low, intervals_slow[key].high))
        assert intervals_fast[key].resamples == intervals_slow[key].resamples == 100


@pytest.mark.parametrize("task", CLOSED)
def test_fast_and_slow_paired_comparisons_agree(records, task):
    left, right = _task(records["baseline/majority"], task, "all"), _task(records["failing"], task, "all")
    fast, slow, keys = _statistics(task, left + right)
    assert isinstance(fast, Decomposed)
    by_fast = paired_bootstrap(left, right, fast, keys, n_resamples=100, seed=2)
    by_slow = paired_bootstrap(left, right, slow, keys, n_resamples=100, seed=2)
    for key in keys:
        f, s = by_fast[key], by_slow[key]
        assert (f.a, f.b, f.diff, f.low, f.high, f.p_value) == pytest.approx((s.a, s.b, s.diff, s.low, s.high, s.p_value))


def test_fast_path_values_by_hand():
    # Gold ranked second in two records, absent in one, a failure in the fourth: R@1 0, MRR (1/2 + 1/2) / 4.
    def rec(k: int, prediction: list[str] | None) -> PredictionRecord:
        return PredictionRecord(model="m", task="stp", instance_id=f"s{k}#row1", sample_id=f"s{k}", scenario="couple",
                                row_index=1, gold="a", prediction=prediction,
                                status="ok" if prediction else "parse_error")

    records = [rec(0, ["b", "a"]), rec(1, ["c", "a", "b"]), rec(2, ["b", "c"]), rec(3, None)]
    fast, slow, _ = _statistics("stp", records)
    assert isinstance(fast, Decomposed)
    assert fast.evaluate(records) == {"stp.recall_at_1": 0.0, "stp.mrr": 0.25} == slow(records)
