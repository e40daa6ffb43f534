"""BERTScore with the real packaged all-MiniLM-L6-v2 weights, through the same code path as any backbone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from extras import needs_extra, requires_extra

from rescue.scoring.bertscore import (
    AUTHORS_MODEL,
    PACKAGED_MODEL,
    BertScoreConfig,
    BertScoreError,
    bertscore_f1,
    match_viewpoints,
    packaged_model_dir,
    score_bertscore,
)
from rescue.tasks import er, vp
from rescue.tasks.base import PredictionRecord


@pytest.fixture(scope="module")
def config() -> BertScoreConfig:
    needs_extra("bertscore")
    return BertScoreConfig.from_option(None)


def test_the_default_is_the_packaged_minilm(config):
    assert (packaged_model_dir() / "model.safetensors").is_file()
    assert config.model == PACKAGED_MODEL and config.num_layers == 6 and not config.rescale_with_baseline
    described = config.describe()
    assert described["model"] == PACKAGED_MODEL
    assert described["num_layers"] == 6 and described["rescale_with_baseline"] is False
    assert described["weights_version"] and described["bert_score_version"]
    assert "/" not in described["source"]  # no machine path goes into results.json


@pytest.mark.slow  # imports torch and bert-score (seconds of CPU)
@requires_extra("bertscore")
def test_the_authors_backbone_is_a_hub_name_with_bert_scores_layer():
    config = BertScoreConfig.from_option(AUTHORS_MODEL)
    assert config.model == config.model_path == AUTHORS_MODEL
    assert config.resolved_layers() == 5  # bert-score's tuned layer for distilbert-base-uncased


@pytest.mark.slow  # loads the MiniLM in torch (seconds of CPU)
def test_identical_is_one_and_a_paraphrase_beats_an_unrelated_phrase(config):
    gold = "feels dismissed and frustrated by her partner"
    identical, paraphrase, unrelated = bertscore_f1(
        [gold, "frustrated and brushed off by his wife", "the train leaves at seven tomorrow"], [gold] * 3, config
    )
    assert identical == pytest.approx(1.0, abs=1e-4)
    assert paraphrase > unrelated + 0.2
    assert 0 < unrelated < paraphrase < identical


LONG = ("she describes at great length how the years of arguments about money, the children, the in-laws and his "
        "work schedule have worn her down until she no longer recognises herself")
# Short candidates against longer references: some candidate tokens have only negative cosines with the
# reference, which bert-score's padded batch matching turned into 0 (0.0050 higher for the first pair).
PAIRS = [("ok", "he feels deeply hurt, abandoned and unseen by his wife"), ("N/A", "angry"),
         ("calm", "furious and betrayed"), ("happy", "sad")]


@pytest.mark.slow  # loads the MiniLM in torch three times, and bert-score's own scorer
def test_a_pair_scores_the_same_alone_and_in_any_batch(config):
    from bert_score import BERTScorer

    alone = [bertscore_f1([c], [r], config)[0] for c, r in PAIRS]
    # bert-score itself, one pair per call (no padding in its matching), is the reference value.
    reference = BERTScorer(model_type=config.model_path, num_layers=config.num_layers, lang="en", device="cpu")
    for (candidate, gold), value in zip(PAIRS, alone):
        assert value == pytest.approx(float(reference.score([candidate], [gold])[2][0]), abs=1e-6)
    candidates, references = [c for c, _ in PAIRS], [r for _, r in PAIRS]
    batches = [
        (candidates + [LONG], references + [LONG + " again and again"]),  # beside a long sentence
        ([LONG, *reversed(candidates)], ["x", *reversed(references)]),  # other order, other neighbours
        (candidates * 3, references * 3),  # repeats
    ]
    for size in (1, 2, 16):  # outermost: each batch size is another loaded scorer (the cache holds two)
        for cands, refs in batches:
            scored = dict(zip(zip(cands, refs), bertscore_f1(cands, refs, BertScoreConfig(
                model=config.model, model_path=config.model_path, num_layers=config.num_layers, batch_size=size))))
            for pair, value in zip(PAIRS, alone):
                assert scored[pair] == pytest.approx(value, abs=1e-6), (pair, size)


def test_results_record_the_bertscore_library_versions(config):
    described = config.describe()
    for key in ("bert_score_version", "transformers_version", "torch_version"):
        assert described[key], key


def test_empty_text_scores_zero_without_loading_anything():
    assert bertscore_f1(["", "x"], ["gold", ""], BertScoreConfig(model="never-loaded", model_path="/nonexistent")) == [0.0, 0.0]


def test_viewpoint_matching_is_one_to_one_over_the_larger_side():
    assert match_viewpoints([[0.9, 0.1], [0.2, 0.8]]) == pytest.approx(0.85)
    # Three predictions for two gold views: the extra one counts 0.
    assert match_viewpoints([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]]) == pytest.approx((0.9 + 0.8) / 3)
    # One prediction cannot match two gold views.
    assert match_viewpoints([[0.9, 0.9]]) == pytest.approx(0.45)
    assert match_viewpoints([]) == 0.0


def _record(task: str, gold, prediction, status: str = "ok") -> PredictionRecord:
    return PredictionRecord(model="m", task=task, instance_id="s#row1", sample_id="s", scenario="couple",
                            row_index=1, gold=gold, prediction=prediction, status=status)


@pytest.mark.slow  # loads the MiniLM in torch (seconds of CPU)
def test_score_bertscore_fills_er_and_vp_records(config, demo_samples):
    er_gold = er.TASK.build(demo_samples)[0].gold
    er_records = [
        _record("er", er_gold, {"emotion": er_gold["emotion"], "intensity": 3}),
        _record("er", er_gold, {"emotion": "the train leaves at seven", "intensity": 3}),
        _record("er", er_gold, None, status="missing"),
    ]
    score_bertscore(er_records, config, task_name="er")
    exact, unrelated, missing = (r.scores["bertscore_f1"] for r in er_records)
    assert exact == pytest.approx(1.0, abs=1e-4) and 0 < unrelated < exact and missing == 0.0

    vp_gold = next(i.gold for i in vp.TASK.build(demo_samples) if len(i.gold) >= 1)
    same = [{k: v[k] for k in ("source", "target", "viewpoint")} for v in vp_gold]
    vp_records = [
        _record("vp", vp_gold, same),
        _record("vp", vp_gold, same + [{"source": "A", "target": "B", "viewpoint": "the train leaves at seven"}]),
        _record("vp", vp_gold, None, status="parse_error"),
    ]
    score_bertscore(vp_records, config, task_name="vp")
    full, padded, failed = (r.scores["bertscore_f1"] for r in vp_records)
    assert full == pytest.approx(1.0, abs=1e-4)
    assert padded < full  # an extra, unmatched viewpoint costs
    assert failed == 0.0
    er_aggregate = er.TASK.aggregate(er_records)
    assert er_aggregate["bertscore_f1"] == pytest.approx((exact + unrelated + 0.0) / 3)


@pytest.mark.slow  # imports torch and bert-score (seconds of CPU)
@requires_extra("bertscore")
def test_an_unloadable_local_model_says_why_and_what_to_do(tmp_path):
    config = BertScoreConfig.from_option(str(tmp_path), num_layers=5)
    assert config.source == "local folder" and config.model == tmp_path.name
    with pytest.raises(BertScoreError, match="cannot load the BERTScore model") as error:
        bertscore_f1(["a"], ["b"], config)
    assert "--bertscore-model" in str(error.value)


@pytest.mark.slow  # imports torch and bert-score (seconds of CPU)
@requires_extra("bertscore")
def test_rescaling_without_a_baseline_fails_before_loading_the_model(tmp_path):
    # bert-score ships baselines for hub names only: a local folder has none (this was bert-score's bare
    # ValueError, after the model had loaded).
    config = BertScoreConfig.from_option(str(tmp_path), num_layers=5, rescale=True)
    with pytest.raises(BertScoreError, match="no rescaling baseline"):
        bertscore_f1(["a"], ["b"], config)


@pytest.mark.slow  # loads the MiniLM in torch (seconds of CPU)
def test_the_rescaling_baseline_is_the_one_bert_score_reads(config):
    import bert_score
    from bert_score import BERTScorer

    from rescue.scoring.bertscore import _baseline_f1

    table = Path(bert_score.__file__).parent / "rescale_baseline" / "en" / f"{AUTHORS_MODEL}.tsv"
    for layers in (4, 5):
        scorer = BERTScorer(model_type=config.model_path, num_layers=layers, lang="en", rescale_with_baseline=True,
                            baseline_path=str(table), device="cpu")
        assert _baseline_f1(config, AUTHORS_MODEL, layers) == float(scorer.baseline_vals[2])


def test_option_errors():
    with pytest.raises(BertScoreError, match="no baseline"):
        BertScoreConfig.from_option(None, rescale=True)
    with pytest.raises(BertScoreError, match="6 layers"):
        BertScoreConfig.from_option("packaged", num_layers=12)


def test_a_local_folder_needs_its_layer(tmp_path):
    with pytest.raises(BertScoreError, match="--bertscore-layers"):
        BertScoreConfig.from_option(str(tmp_path))


@pytest.mark.slow
def test_an_unreachable_hub_model_fails_with_advice():
    # A fresh process: the hub's offline switch is read when huggingface_hub is first imported.
    code = (
        "from rescue.scoring.bertscore import *\n"
        "try:\n    bertscore_f1(['a'], ['b'], BertScoreConfig.from_option('distilbert-base-uncased'))\n"
        "except BertScoreError as e:\n    print('ERROR', e)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert "ERROR cannot load the BERTScore model 'distilbert-base-uncased'" in result.stdout
    assert "--bertscore-model DIR --bertscore-layers N" in result.stdout


def test_importing_the_module_does_not_import_torch():
    code = "import sys, rescue.scoring.bertscore, rescue.scoring.judge, rescue.scoring.judge_agreement; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.stdout.strip() == "False", result.stderr


# Sentences of many token lengths, so that the batches are many and the workers share them.
MANY = [f"{'we keep fighting about the dishes and ' * (k % 5)}she feels unseen {k}" for k in range(24)]
GOLDS = ["he feels deeply hurt, abandoned and unseen by his wife", "angry", "calm and heard at last"] * 8

BY_POOL = ("import json, sys\n"
           "from rescue.threads import fit_threads\nfit_threads()\n"
           "from rescue.scoring.bertscore import BertScoreConfig, bertscore_f1\n"
           "cands, refs = json.loads(sys.stdin.read())\n"
           "print(json.dumps(bertscore_f1(cands, refs, BertScoreConfig.from_option(None))))\n")


@pytest.mark.slow  # loads the MiniLM in torch, here and in two child processes
def test_the_scores_do_not_depend_on_the_threads(config):
    """To the last bit, whatever the number of workers or the size of torch's pool the process started with:
    a verifier or a busy machine computes the run's own numbers (a pool split each product and moved 30 of the
    demo's 40 ER/VP scores by up to 1.2e-7 between one thread and two)."""
    import json

    one, four = (bertscore_f1(MANY, GOLDS, config, workers=n) for n in (1, 4))
    assert one == four
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS") and k != "RESCUE_THREADS"}
    for threads in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", BY_POOL], input=json.dumps([MANY, GOLDS]), text=True,
                              capture_output=True, env={**clean, "RESCUE_THREADS": threads}, timeout=300)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == one, threads


@pytest.mark.slow
def test_encoding_gives_torch_its_pool_back(config):
    import torch

    before = torch.get_num_threads()
    bertscore_f1(MANY[:4], GOLDS[:4], config, workers=2)
    assert torch.get_num_threads() == before
