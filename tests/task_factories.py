"""Small synthetic samples and record helpers for the task tests (not a test module)."""

from __future__ import annotations

from typing import Any

from rescue.data.models import Sample
from rescue.tasks.base import Instance, Prediction, PredictionRecord, make_record
from rescue.tasks.batching import group_batches


def make_sample(
    rows: list[dict[str, Any]],
    *,
    scenario: str = "couple",
    participants: tuple[str, ...] = ("Ann", "Ben"),
    sample_id: str = "pair/s1",
) -> Sample:
    """A release-format sample; each row dict needs ``speaker`` and may set any row field."""
    full = []
    for index, row in enumerate(rows, start=1):
        record = {
            "row_index": index,
            "start_time": float(index),
            "end_time": index + 0.5,
            "primary_speaker": row["speaker"],
            "dialogue_cleaned": row.get("text", f"utterance number {index}"),
        }
        record.update({k: v for k, v in row.items() if k not in ("speaker", "text")})
        full.append(record)
    return Sample.model_validate(
        {"sample_id": sample_id, "scenario": scenario, "participants": list(participants), "rows": full}
    )


def strategy(kind: str, *target: str) -> dict[str, Any]:
    return {"provider": "Therapist", "strategy_type": kind, "target": list(target), "strategy_content": "..."}


def record_for(instance: Instance, prediction: Any, *, status: str | None = None, model: str = "m",
               **fields: Any) -> PredictionRecord:
    """The prediction record of ``instance`` as predictions.jsonl holds it, without scores unless given
    (``status`` defaults to ok for a prediction, parse_error for None)."""
    return PredictionRecord(
        model=model, task=instance.task, instance_id=instance.instance_id, sample_id=instance.sample_id,
        scenario=instance.scenario, row_index=instance.row_index, gold=instance.gold, prediction=prediction,
        status=status or ("ok" if prediction is not None else "parse_error"), **fields,
    )


def to_records(task: Any, instances: list[Instance], predictions: dict[str, Prediction]) -> list[PredictionRecord]:
    """Prediction records as the runner writes them, with per-instance scores."""
    return [make_record(task, "test", i, predictions[i.instance_id]) for i in instances]


def batches(instances: list[Instance], size: int) -> list[list[Instance]]:
    """Consecutive instances of one sample, at most ``size`` per batch: the package's grouping."""
    return group_batches(instances, size)
