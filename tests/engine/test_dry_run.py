"""``rescue run --dry-run``: the judge's requests and cost are counted with the models'."""

from __future__ import annotations

from pathlib import Path

from rescue.data.loading import load_samples
from rescue.engine.config import RunConfig
from rescue.engine.dryrun import CHARS_PER_TOKEN, estimate_run
from rescue.scoring.judge import JUDGE_MAX_TOKENS, Turn, judge_prompt
from rescue.tasks import get_task


def test_the_judge_is_asked_once_per_graded_instance_of_each_model(tmp_path: Path):
    prices = tmp_path / "prices.toml"
    prices.write_text('["judge/x"]\ninput = 1.0\noutput = 2.0\n["m/*"]\ninput = 0.0\noutput = 0.0\n')
    config = RunConfig(out=str(tmp_path / "run"), models=["m/a", "m/b", "m/c"], tasks=["itp", "er", "vp"],
                       judges=["judge/x"], prices=str(prices), bertscore=False,
                       base_url="http://127.0.0.1:9/v1")  # a run refuses these ids without an endpoint
    estimate = estimate_run(config)
    (judge,) = estimate.judges
    er = get_task("er").build(load_samples(None))
    assert [t.task for t in judge.tasks] == ["er", "vp"]  # ITP has no judge
    assert judge.tasks[0].requests == len(er) and judge.models == 3
    expected_tokens = sum(-(-len(judge_prompt("er", "likert", Turn.of(i), i.gold, i.gold)) // CHARS_PER_TOKEN)
                          for i in er)
    assert judge.tasks[0].text_tokens == expected_tokens
    assert judge.tasks[0].max_output_tokens == len(er) * JUDGE_MAX_TOKENS
    tokens_in = sum(t.input_tokens for t in judge.tasks)
    tokens_out = sum(t.max_output_tokens for t in judge.tasks)
    assert judge.cost_per_model == round((tokens_in * 1.0 + tokens_out * 2.0) / 1e6, 4)
    assert judge.cost_at_most == round(judge.cost_per_model * 3, 4)


def test_a_judge_without_a_price_says_so(tmp_path: Path):
    config = RunConfig(out=str(tmp_path / "run"), models=["baseline/majority"], tasks=["vp"],
                       judges=["nowhere/judge"], bertscore=False, base_url="http://127.0.0.1:9/v1")
    (judge,) = estimate_run(config).judges
    assert judge.requests_per_model > 0 and judge.cost_per_model is None and judge.cost_at_most is None


def test_no_judge_no_judge_estimate(tmp_path: Path):
    assert estimate_run(RunConfig(out=str(tmp_path / "run"), tasks=["er"], bertscore=False)).judges == []
