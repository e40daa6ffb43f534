"""The judge tested like an annotator (issue 24, item 6): the alternative annotator test on synthetic raters
whose answer is known, the length-bias check, the same-family warning and the judge prompt's hash."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from rescue.metrics.agreement import alt_test
from rescue.scoring.judge_agreement import judge_agreement, length_bias, model_family, read_ratings, self_preference
from rescue.tasks.base import JudgeGrade, JudgeResults, PredictionRecord


def _raters(items: int, raters: int, noise: float, seed: int = 0) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    rng = np.random.default_rng(seed)
    truth = {f"i{k}": float(rng.integers(1, 6)) for k in range(items)}
    humans = {f"h{r}": {i: float(np.clip(round(t + rng.normal(0, noise)), 1, 5)) for i, t in truth.items()}
              for r in range(raters)}
    return truth, humans


def test_a_judge_that_knows_the_truth_passes_and_a_random_one_fails():
    truth, humans = _raters(60, 4, noise=1.0)
    oracle = alt_test(truth, humans, epsilon=0.2)
    assert oracle["passed"] is True and oracle["winning_rate"] == 1.0 and oracle["raters_tested"] == 4
    assert all(v["test"] == "t-test" for v in oracle["per_rater"].values())  # 60 items: the t-test
    assert oracle["advantage_probability"] > 0.8
    rng = np.random.default_rng(5)
    random_judge = {i: float(rng.integers(1, 6)) for i in truth}
    coin = alt_test(random_judge, humans, epsilon=0.2)
    assert coin["passed"] is False and coin["winning_rate"] == 0.0
    # Below 30 items the Wilcoxon signed-rank test is used; the p-values are BY-corrected (never smaller).
    small = alt_test(truth, {r: dict(list(h.items())[:20]) for r, h in humans.items()}, epsilon=0.2)
    assert all(v["test"] == "wilcoxon" and v["p_adjusted"] >= v["p_value"] for v in small["per_rater"].values())


def test_epsilon_decides_for_a_judge_a_little_worse_than_a_human():
    truth, humans = _raters(200, 4, noise=0.7, seed=1)
    rng = np.random.default_rng(2)
    worse = {i: float(np.clip(round(t + rng.normal(0, 1.1)), 1, 5)) for i, t in truth.items()}
    lenient, strict = alt_test(worse, humans, epsilon=0.3), alt_test(worse, humans, epsilon=0.0)
    assert lenient["passed"] is True and strict["passed"] is False
    assert lenient["advantage_probability"] == strict["advantage_probability"]


def test_raters_with_too_few_shared_items_are_left_out():
    both = {"a": 3.0, "b": 4.0}
    result = alt_test({"a": 3.0, "b": 4.0}, {"x": both, "z": both, "y": {"a": 3.0}})
    assert result["raters_skipped"] == {"y": 1} and result["raters_tested"] == 2


def _record(n: int, score: float, prediction: str, gold: str, model: str = "openai/gpt-4o") -> PredictionRecord:
    return PredictionRecord(model=model, task="er", instance_id=f"s/{n}#row{n}", sample_id=f"s/{n}", scenario="couple",
                            row_index=n, gold={"emotion": gold}, prediction={"emotion": prediction}, status="ok",
                            scores={"judge_emotion": score},
                            judge=JudgeResults(judges={"openai/gpt-5.4": JudgeGrade(status="ok", scores={"judge_emotion": score})}))


def test_length_bias_within_gold_strata():
    rng = np.random.default_rng(3)
    biased, fair = [], []
    for n in range(60):
        gold = " ".join(["word"] * (1 + n % 6))
        words = int(rng.integers(1, 12))
        biased.append(_record(n, float(min(5, 1 + words // 2)), " ".join(["w"] * words), gold))
        fair.append(_record(n, float(rng.integers(1, 6)), " ".join(["w"] * words), gold))
    flagged = length_bias(biased, "judge_emotion", "openai/gpt-5.4")
    assert flagged["warning"] is True and flagged["rho"] > 0.9 and len(flagged["strata"]) == 3
    calm = length_bias(fair, "judge_emotion", "openai/gpt-5.4")
    assert calm["warning"] is False and abs(calm["rho"]) < 0.3


def test_a_judge_of_an_evaluated_models_family_is_warned_about():
    assert model_family("openai/gpt-5.4") == model_family("gpt-4o") == "OpenAI"
    assert model_family("dashscope/qwen3-max") == "Qwen" and model_family("baseline/majority") is None
    assert self_preference(["openai/gpt-5.4"], ["openai/gpt-4o", "deepseek/deepseek-v4"])[0].startswith(
        "judge openai/gpt-5.4 and evaluated model(s) openai/gpt-4o are all OpenAI models")
    assert self_preference(["openai/gpt-5.4"], ["deepseek/deepseek-v4"]) == []


def test_judge_agreement_reports_the_alt_test_length_bias_and_family(tmp_path):
    truth, humans = _raters(40, 3, noise=1.0, seed=4)
    records = [_record(n, truth[f"i{n}"], "calm " * (n % 4 + 1), "upset") for n in range(40)]
    lines = ["instance_id,rater,score"] + [f"s/{n}#row{n},{rater},{int(scores[f'i{n}'])}"
                                            for rater, scores in humans.items() for n in range(40)]
    path = tmp_path / "ratings.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = judge_agreement(records, read_ratings(path), epsilon=0.15)
    stats = report["tasks"]["er"]["judges"]["openai/gpt-5.4"]
    assert stats["alt_test"]["passed"] is True and stats["alt_test"]["epsilon"] == 0.15
    assert stats["length_bias"]["records"] == 40
    assert report["warnings"] and "self-preference" in report["warnings"][0]
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    from rescue.cli import app

    result = CliRunner().invoke(app, ["judge-agreement", str(run), "--ratings", str(path), "--epsilon", "0.1"])
    assert result.exit_code == 0, result.output
    assert "alternative annotator test (ε=0.1) passes" in result.output and "self-preference" in result.output


def test_results_record_the_judge_prompt_hash():
    from rescue.scoring.judge import prompt_hashes, rubric_for

    hashes = prompt_hashes("likert")
    assert set(hashes) == {"er", "vp"} and all(len(h) == 64 for h in hashes.values())
    assert hashes != prompt_hashes("authors")
    import hashlib

    assert hashes["er"] == hashlib.sha256(rubric_for("er").prompts["likert"].encode()).hexdigest()
    json.dumps(hashes)
