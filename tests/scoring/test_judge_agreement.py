"""Judge validation: human ratings vs a run's judge scores, and agreement among judges."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from task_factories import record_for
from typer.testing import CliRunner

from rescue.scoring.judge_agreement import (
    RatingsError,
    alpha,
    inter_judge_alpha,
    judge_agreement,
    pair_statistics,
    read_ratings,
)
from rescue.scoring.judge import judge_records
from rescue.tasks import er
from rescue.tasks.base import PredictionRecord
from rescue.testing.openai_server import Reply, serve


def test_perfect_agreement():
    stats = pair_statistics([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])
    assert stats["exact_agreement"] == 1.0 and stats["exact_matches"] == 5 and stats["mae"] == 0.0
    assert stats["spearman"] == pytest.approx(1.0) and stats["pearson"] == pytest.approx(1.0)
    assert stats["cohen_kappa_quadratic"] == pytest.approx(1.0)
    assert stats["krippendorff_alpha"] == pytest.approx(1.0)


def test_the_papers_headline_numbers_are_reproduced_from_pairs():
    # 200 pairs, 159 exact matches and the rest one point apart: MAE = 41 / 200 = 0.205.
    human = [((i % 5) + 1) for i in range(200)]
    judge = list(human)
    for i in range(41):
        judge[i] = human[i] + 1 if human[i] < 5 else human[i] - 1
    stats = pair_statistics(human, judge)
    assert stats["pairs"] == 200 and stats["exact_matches"] == 159
    assert stats["exact_agreement"] == pytest.approx(159 / 200)
    assert stats["mae"] == pytest.approx(41 / 200)
    assert 0.8 < stats["cohen_kappa_quadratic"] < 1 and 0.8 < stats["krippendorff_alpha"] < 1


def test_undefined_statistics_are_none_not_numbers():
    stats = pair_statistics([3, 3, 3], [2, 3, 4])
    assert stats["spearman"] is None and stats["pearson"] is None  # a constant side has no correlation
    assert pair_statistics([], [])["mae"] is None
    assert pair_statistics([4.5, 3.0], [4.0, 3.0])["cohen_kappa_quadratic"] is None  # a mean of judges
    assert alpha([[1, 2, 3]]) is None  # one rater
    assert alpha([[1, None], [None, 2]]) is None  # no unit rated twice


def _csv(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_ratings_file_errors_name_file_line_and_field(tmp_path):
    with pytest.raises(RatingsError, match=r"ratings\.csv:1: header: missing column\(s\) score"):
        read_ratings(_csv(tmp_path / "ratings.csv", "instance_id,rater\na,b\n"))
    bad = _csv(tmp_path / "bad.csv", "instance_id,rater,score\ns#row1,ann,4\ns#row2,ann,high\ns#row1,ann,5\n,bob,3\n")
    with pytest.raises(RatingsError) as error:
        read_ratings(bad)
    message = str(error.value)
    assert "bad.csv:3: score: 'high' is not a number" in message
    assert "bad.csv:4: rater: 'ann' already rated 's#row1' on line 2" in message
    assert "bad.csv:5: instance_id: empty" in message
    with pytest.raises(RatingsError, match="not found"):
        read_ratings(tmp_path / "absent.csv")


@pytest.fixture()
def judged_run(demo_samples, tmp_path) -> tuple[Path, list[PredictionRecord]]:
    """A run directory whose ER predictions were graded by two judges over HTTP (the scripted server)."""
    from rescue.llm._reliable import ReliableModel
    from rescue.engine.resolve import resolve_model

    instances = er.TASK.build(demo_samples)[:6]
    records = []
    for n, instance in enumerate(instances):
        emotion = instance.gold["emotion"] if n % 2 == 0 else "bored"
        records.append(record_for(instance, {"emotion": emotion, "intensity": 5}))

    def script(body):
        data = json.loads(body["messages"][0]["content"].split("Instance:\n", 1)[1])
        score = 5 if data["predicted_emotion"] == data["gold_emotion"] else 2
        if body["model"] == "judge-b" and score == 2:
            score = 3
        return Reply.json({"emotion_score": score})

    async def grade(base_url: str) -> None:
        judges = [ReliableModel(resolve_model(name, base_url=base_url)) for name in ("judge-a", "judge-b")]
        try:
            await judge_records(list(zip(instances, records)), judges=judges, task_name="er")
        finally:
            for judge in judges:
                await judge.aclose()

    with serve(script) as server:
        asyncio.run(grade(server.base_url))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "predictions.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    return run_dir, records


def test_inter_judge_alpha_from_a_run(judged_run):
    _, records = judged_run
    value = inter_judge_alpha(records, "judge_emotion")
    assert value is not None and 0 < value < 1  # they agree on the exact ones, differ by one elsewhere
    assert inter_judge_alpha(records, "judge") is None


def test_human_ratings_against_the_judges(judged_run, tmp_path):
    _, records = judged_run
    lines = ["instance_id,rater,score"]
    for n, record in enumerate(records):
        lines.append(f"{record.instance_id},ann,{5 if n % 2 == 0 else 2}")  # agrees with judge-a
        lines.append(f"{record.instance_id},bob,{5 if n % 2 == 0 else 3}")  # agrees with judge-b
    lines.append("nowhere#row1,ann,4")
    report = judge_agreement(records, read_ratings(_csv(tmp_path / "r.csv", "\n".join(lines) + "\n")))
    block = report["tasks"]["er"]
    assert block["judge_score"] == "judge_emotion" and block["ratings"] == 12 and block["raters"] == ["ann", "bob"]
    a = block["judges"]["judge-a"]
    assert a["pairs"] == 12 and a["exact_matches"] == 9 and a["mae"] == pytest.approx(3 / 12)
    assert a["per_rater"]["ann"]["exact_agreement"] == 1.0
    assert block["judges"]["judge-b"]["per_rater"]["bob"]["mae"] == 0.0
    assert block["judges"]["mean of judges"]["cohen_kappa_quadratic"] is None  # 2.5 is not a grade
    assert block["human_alpha"] is not None
    assert report["unmatched_ratings"] == 1


def test_ratings_that_match_several_models_are_refused(judged_run, tmp_path):
    _, records = judged_run
    other = [r.model_copy(update={"model": "other"}) for r in records]
    ratings = read_ratings(_csv(tmp_path / "r.csv", f"instance_id,rater,score\n{records[0].instance_id},ann,4\n"))
    with pytest.raises(RatingsError, match="several models"):
        judge_agreement(records + other, ratings)
    assert judge_agreement(records + other, ratings, model="m")["tasks"]["er"]["ratings"] == 1


def test_the_command(judged_run, tmp_path):
    from rescue.cli import app

    run_dir, records = judged_run
    ratings = _csv(tmp_path / "r.csv", "instance_id,rater,score\n" + "".join(
        f"{r.instance_id},ann,{5 if n % 2 == 0 else 2}\n" for n, r in enumerate(records)))
    out = tmp_path / "agreement.json"
    result = CliRunner().invoke(app, ["judge-agreement", str(run_dir), "--ratings", str(ratings), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "ER: human vs judge" in result.output and "judge-a" in result.output
    saved = json.loads(out.read_text())
    assert saved["tasks"]["er"]["judges"]["judge-a"]["exact_agreement"] == 1.0
    result = CliRunner().invoke(app, ["judge-agreement", str(run_dir), "--ratings", str(ratings), "--task", "vp"])
    assert isinstance(result.exception, RatingsError)
