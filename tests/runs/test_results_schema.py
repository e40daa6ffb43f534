"""results.json through its typed models: what rescue writes reads back unchanged, and readers see types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rescue.engine.config import RunConfig
from rescue.runs.results import RunResults, ScopeMetrics
from rescue.runs.folder import RunDirError, read_results
from rescue.engine.runner import run
from rescue.report.runs import load_run


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("typed") / "run"
    outcome = run(RunConfig(out=str(out), models=["baseline/majority"], tasks=["itp", "rpp", "stp"],
                            bertscore=False, quiet=True))
    assert outcome.complete
    return out


def test_what_rescue_writes_reads_back_unchanged(demo_run: Path):
    written = json.loads((demo_run / "results.json").read_text(encoding="utf-8"))
    typed = read_results(demo_run / "results.json")
    assert json.loads(typed.to_json_text()) == written
    # Scripts read models[m][task][scope][metric]: the file keeps tasks beside usage, cost and failure reasons.
    assert list(written["models"]["baseline/majority"]) == ["usage", "cost", "failure_reasons", "itp", "rpp", "stp"]


def test_metrics_are_typed_per_task_and_scope(demo_run: Path):
    typed = read_results(demo_run / "results.json")
    entry = typed.models["baseline/majority"]
    pooled = entry.scope("itp")
    assert isinstance(pooled, ScopeMetrics) and pooled.instances > 0 and pooled.failures == 0
    assert pooled.value("f1") == typed.metrics("baseline/majority", "itp")["f1"]
    assert set(entry.tasks) == {"itp", "rpp", "stp"} and entry.scope("er") is None
    assert all(isinstance(s, ScopeMetrics) for s in entry.tasks["rpp"].samples.values())
    assert typed.config.used.data_sha256 == typed.data.sha256  # type: ignore[union-attr]
    assert typed.config.used.context_size.keys() == {"itp", "rpp", "stp"}


def test_an_absent_scenario_stays_absent():
    typed = RunResults.model_validate({"config": {}, "models": {"m": {"itp": {"all": {"instances": 3, "f1": 0.5}}}}})
    dumped = json.loads(typed.to_json_text())["models"]["m"]["itp"]
    assert "couple" not in dumped and "family" not in dumped and dumped["all"] == {"instances": 3, "failures": 0,
                                                                                  "f1": 0.5}


def test_an_ill_typed_metric_names_its_field_as_in_the_file(tmp_path: Path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"config": {}, "models": {"m": {"itp": {"all": {"instances": "many"}}}}}))
    with pytest.raises(RunDirError, match=r"results.json: field models\.m\.itp\.all\.instances: "):
        read_results(path)


def test_a_hand_written_bertscore_option_is_not_read_as_a_backbone():
    typed = RunResults.model_validate({"config": {"bertscore": True}, "models": {}})
    assert typed.config.bertscore is None and typed.config.bertscore_enabled is True
    assert RunConfig.from_json({**typed.config.as_dict(), "out": "x"}, "results.json").bertscore is True


def test_the_report_reads_runs_through_the_models(demo_run: Path):
    system = load_run(demo_run)[0]
    assert system.config.mode == "dialogue" and system.config.used.parse == "strict"
    assert system.results.scope("stp", "all") is not None
    assert system.tasks == ["itp", "rpp", "stp"]


def _record_line(judge: object) -> str:
    return json.dumps({"model": "m", "task": "er", "instance_id": "s#row1", "sample_id": "s", "scenario": "couple",
                       "row_index": 1, "gold": {"emotion": "hurt", "intensity": 5}, "status": "ok", "judge": judge})


def test_judge_grades_are_typed_and_a_bad_one_names_its_line_and_field(tmp_path: Path):
    from rescue.runs.folder import read_predictions
    from rescue.tasks.base import JudgeGrade

    path = tmp_path / "predictions.jsonl"
    good = {"scale": "likert", "judges": {"j": {"status": "ok", "scores": {"judge_emotion": 4}, "attempts": 1}}}
    path.write_text(_record_line(good) + "\n" + _record_line({"judges": {"j": {"status": "great"}}}) + "\n")
    with pytest.raises(RunDirError, match=r"predictions.jsonl:2: field judge\.judges\.j\.status: "):
        read_predictions(path)
    path.write_text(_record_line(good) + "\n")
    (record,) = read_predictions(path)
    assert record.judge is not None and isinstance(record.judge.judges["j"], JudgeGrade)
    assert record.judge.own_scores("judge_emotion") == {"j": 4.0}
    record.judge = {"judges": {"j": {"status": "minimum", "scores": {"judge_emotion": 1}}}}  # type: ignore[assignment]
    assert record.judge.judges["j"].graded and record.judge.own_scores("judge_emotion") == {}


def test_an_all_baseline_run_is_not_called_online_and_old_files_still_read(demo_run: Path, tmp_path: Path):
    """results.json said "offline": false for a run of offline baselines: the field meant "rescored from the cache"
    and is named so now (issue 35); a results.json written before reads with its value."""
    written = json.loads((demo_run / "results.json").read_text(encoding="utf-8"))
    assert "offline" not in written["run"] and written["run"]["rescored"] is False
    for old_value in (True, False):
        old = dict(written, run={k: v for k, v in written["run"].items() if k != "rescored"} | {"offline": old_value})
        path = tmp_path / f"{old_value}.json"
        path.write_text(json.dumps(old), encoding="utf-8")
        typed = read_results(path)
        assert typed.run is not None and typed.run.rescored is old_value
        assert "offline" not in json.loads(typed.to_json_text())["run"]
