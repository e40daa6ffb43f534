"""baseline/supervised's answers are pinned (issue 47 item 3): whatever computes its features, folds and fit, a
run answers what it answered before scikit-learn was taken back.

tests/pins/supervised_answers.json holds the answers `rescue run --model baseline/supervised --no-bertscore`
sent at 971cf7e (the fit rescue wrote out itself): every answer on the bundled demo data, and on the real samples
(``../shared``, or ``$RESCUE_REAL_DATA``) a ``count:sha256`` per task and sample of the sorted
``[instance suffix, answer]`` pairs, so a change names the sample. The pin is a record of what was published: it
is never written again to make a change pass.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from _cli import invoke_main

PIN = Path(__file__).resolve().parents[1] / "pins" / "supervised_answers.json"


def _answers(run: Path) -> dict[str, dict[str, Any]]:
    """task -> instance id -> the answer (parsed prediction) the run's predictions.jsonl holds."""
    answers: dict[str, dict[str, Any]] = {}
    for line in (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        assert record["status"] == "ok", record
        answers.setdefault(record["task"], {})[record["instance_id"]] = record["prediction"]
    return answers


def _digests(answers: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    """The pin's form of the real samples' answers: per task and sample, ``count:sha256`` of the sorted pairs."""
    pairs: dict[str, dict[str, list[list[Any]]]] = {}
    for task, by_instance in answers.items():
        for instance_id, answer in by_instance.items():
            sample_id, _, suffix = instance_id.partition("#")
            pairs.setdefault(task, {}).setdefault(sample_id, []).append([suffix, answer])
    return {task: {sample: f"{len(found)}:" + hashlib.sha256(json.dumps(
        sorted(found), separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
                   for sample, found in samples.items()} for task, samples in pairs.items()}


def _run(tmp_path: Path, *data: str) -> dict[str, dict[str, Any]]:
    result = invoke_main(["run", "--model", "baseline/supervised", "--no-bertscore", "--quiet",
                          "--out", str(tmp_path / "run"), *data])
    assert result.exit_code == 0, result.output
    return _answers(tmp_path / "run")


def test_the_demo_answers_are_the_pinned_ones(tmp_path):
    pinned = json.loads(PIN.read_text(encoding="utf-8"))["demo"]
    answers = _run(tmp_path)
    assert set(answers) == set(pinned)
    for task, expected in pinned.items():
        changed = {k: (expected.get(k), answers[task].get(k)) for k in expected.keys() | answers[task].keys()
                   if expected.get(k) != answers[task].get(k)}
        assert not changed, f"{task}: {len(changed)} answers changed (pinned, now): {dict(list(changed.items())[:5])}"


@pytest.mark.slow
def test_the_real_samples_answers_are_the_pinned_ones(tmp_path, real_data_path):
    pinned = json.loads(PIN.read_text(encoding="utf-8"))["real"]
    now = _digests(_run(tmp_path, "--data", str(real_data_path)))
    changed = [f"{task} {sample}" for task in pinned for sample in pinned[task] | now.get(task, {})
               if pinned[task].get(sample) != now.get(task, {}).get(sample)]
    assert set(now) == set(pinned) and not changed, f"answers changed for {len(changed)} task/sample: {changed[:10]}"
