"""BERTScore behaves like the rest of a run (issue #28): each distinct pair is scored once and kept in
``bertscore.sqlite``, so a rerun or a rescore computes only what is new; a run shows its progress; Ctrl-C during
BERTScore (a real SIGINT to a real ``rescue run``) stops the run at once with results.json marked incomplete and
the terminal saying the same. All against the packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from extras import requires_extra

from rescue.engine.runner import RunConfig, rescore, run
from rescue.scoring.bertscore import SCORE_CACHE, BertScoreConfig, BertScoreJob, PairScoreCache
from rescue.tasks import er, vp
from rescue.tasks.base import PredictionRecord

pytestmark = requires_extra("bertscore")


def _events(run_dir: Path, name: str) -> list[dict]:
    lines = (run_dir / "run.log").read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == name]


def _er_records(demo_samples, phrases: list[str]) -> list[PredictionRecord]:
    gold = er.TASK.build(demo_samples)[0].gold
    return [PredictionRecord(model="m", task="er", instance_id=f"s#row{i}", sample_id="s", scenario="couple",
                             row_index=i, gold=gold, prediction={"emotion": p, "intensity": 3}, status="ok")
            for i, p in enumerate(phrases)]


@pytest.mark.slow  # computes with the MiniLM in torch; the cache alone: the test below
def test_the_cache_keeps_each_pair_and_a_new_job_computes_only_new_pairs(tmp_path, demo_samples):
    config = BertScoreConfig.from_option(None)
    cache = PairScoreCache(tmp_path / SCORE_CACHE)
    first = _er_records(demo_samples, ["angry at him", "tired of the chores", "angry at him"])
    job = BertScoreJob([("er", first)], config, cache)
    assert (len(job.pairs), job.cached, len(job.todo)) == (2, 0, 2)  # the repeated phrase is one pair
    assert sum(job.chunks(size=1)) == 2
    job.finish()
    cache.close()

    cache = PairScoreCache(tmp_path / SCORE_CACHE)  # another process, later
    again = _er_records(demo_samples, ["angry at him", "tired of the chores", "hopeful about the weekend"])
    job = BertScoreJob([("er", again)], config, cache)
    assert (job.cached, [c for c, _ in job.todo]) == (2, ["hopeful about the weekend"])
    list(job.chunks())
    job.finish()
    assert [r.scores["bertscore_f1"] for r in again[:2]] == [r.scores["bertscore_f1"] for r in first[:2]]
    # Another layer is another score: nothing cached is read.
    other = BertScoreJob([("er", _er_records(demo_samples, ["angry at him"]))],
                         BertScoreConfig.from_option(None, num_layers=5), cache)
    assert other.cached == 0 and len(other.todo) == 1
    cache.close()


@pytest.mark.slow  # computes with the MiniLM in torch
def test_vp_pairs_are_shared_across_records_and_failures_need_no_model(tmp_path, demo_samples):
    gold = vp.TASK.build(demo_samples)[0].gold
    texts = vp.TASK.declaration.bertscore.texts(gold)
    records = [PredictionRecord(model=m, task="vp", instance_id="s#row1", sample_id="s", scenario="couple",
                                row_index=1, gold=gold, prediction=gold, status="ok") for m in ("a", "b")]
    records.append(PredictionRecord(model="c", task="vp", instance_id="s#row1", sample_id="s", scenario="couple",
                                    row_index=1, gold=gold, prediction=None, status="missing"))
    job = BertScoreJob([("vp", records)], BertScoreConfig.from_option(None), PairScoreCache(tmp_path / "b.sqlite"))
    assert len(job.pairs) == len(set(texts)) ** 2  # two models' identical answers: one grid
    list(job.chunks())
    job.finish()
    assert records[0].scores["bertscore_f1"] == pytest.approx(1.0, abs=1e-3)
    assert records[2].scores["bertscore_f1"] == 0.0


def test_the_cache_serves_a_later_job_and_only_new_pairs_are_left_to_compute(tmp_path, demo_samples):
    """The cache's bookkeeping without a model (torch costs seconds): what a job records is what a later job
    with the same backbone reads, and only pairs it never saw are left to compute."""
    config = BertScoreConfig.from_option(None)
    cache = PairScoreCache(tmp_path / SCORE_CACHE)
    first = _er_records(demo_samples, ["angry at him", "tired of the chores", "angry at him"])
    job = BertScoreJob([("er", first)], config, cache)
    assert (len(job.pairs), job.cached, len(job.todo)) == (2, 0, 2)  # the repeated phrase is one pair
    job.record(job.todo, [0.25, 0.75])  # as chunks() does with the scores it computed
    job.finish()
    assert [r.scores["bertscore_f1"] for r in first] == [0.25, 0.75, 0.25]
    cache.close()

    cache = PairScoreCache(tmp_path / SCORE_CACHE)  # another process, later
    again = _er_records(demo_samples, ["angry at him", "tired of the chores", "hopeful about the weekend"])
    job = BertScoreJob([("er", again)], config, cache)
    assert (job.cached, [c for c, _ in job.todo]) == (2, ["hopeful about the weekend"])
    other = BertScoreJob([("er", _er_records(demo_samples, ["angry at him"]))],
                         BertScoreConfig.from_option(None, num_layers=5), cache)
    assert other.cached == 0 and len(other.todo) == 1  # another layer is another score
    cache.close()

    gold = vp.TASK.build(demo_samples)[0].gold
    texts = vp.TASK.declaration.bertscore.texts(gold)
    records = [PredictionRecord(model=m, task="vp", instance_id="s#row1", sample_id="s", scenario="couple",
                                row_index=1, gold=gold, prediction=gold, status="ok") for m in ("a", "b")]
    assert len(BertScoreJob([("vp", records)], config).pairs) == len(set(texts)) ** 2  # two models: one grid


@pytest.mark.slow
def test_a_rerun_and_a_rescore_compute_no_pair_again(tmp_path):
    out = tmp_path / "run"
    config = dict(out=str(out), tasks=["er", "vp"], models=["baseline/majority"], quiet=True, limit_samples=1)
    first = run(RunConfig(**config))
    done = _events(out, "bertscore_done")[-1]
    assert done["computed"] > 0 and done["cached"] == 0 and (out / SCORE_CACHE).is_file()
    again = run(RunConfig(**config))
    done = _events(out, "bertscore_done")[-1]
    assert done["computed"] == 0 and done["cached"] == done["pairs"] > 0
    rescored = rescore(out, quiet=True)
    assert _events(out, "bertscore_done")[-1]["computed"] == 0
    scores = [o.results["models"]["baseline/majority"]["er"]["all"]["bertscore_f1"] for o in (first, again, rescored)]
    assert scores[0] == scores[1] == scores[2]


def _scores_saved(out: Path) -> int:
    import sqlite3

    try:
        with sqlite3.connect(f"file:{out / SCORE_CACHE}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT COUNT(*) FROM scores").fetchone()[0])
    except sqlite3.Error:  # not created yet
        return 0


@pytest.mark.slow
def test_ctrl_c_during_bertscore_stops_and_marks_the_run_incomplete(tmp_path):
    out = tmp_path / "run"
    args = [sys.executable, "-m", "rescue", "run", "--out", str(out), "--tasks", "er,vp"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        # Wait until BERTScore has saved its first chunk: the next one is being computed (in torch) now.
        for _ in range(3000):
            if process.poll() is not None or _scores_saved(out):
                break
            time.sleep(0.1)
        assert process.poll() is None, process.communicate()
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr  # no abort from the computation left running
    start, stopped = _events(out, "bertscore_start")[0], _events(out, "bertscore_interrupted")[0]
    assert 0 < stopped["computed"] < start["todo"]  # it stopped mid-phase, without finishing first
    assert _scores_saved(out) == stopped["computed"]
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["run"]["complete"] is False
    assert "interrupted during BERTScore" in results["run"]["stopped"]
    assert "bertscore_f1" not in results["models"]["baseline/majority"]["er"]["all"]
    # The terminal agrees with the file.
    assert "interrupted during BERTScore" in stderr and "marked incomplete" in stderr, stderr
    assert "Traceback" not in stderr and "terminate called" not in stderr
    assert _events(out, "done")[-1]["complete"] is False


def test_the_run_shows_a_bertscore_bar(tmp_path, demo_samples):
    from rescue.engine.progress import ProgressDisplay

    display = ProgressDisplay(quiet=False)
    display.console.record = True
    display.console.file = open(os.devnull, "w")  # noqa: SIM115 - closed below
    try:
        with display:
            bar = display.phase("BERTScore · 3 new pairs, 0 cached", 3)
            bar.advance(2)
        text = display.console.export_text()
    finally:
        display.console.file.close()
    assert "BERTScore · 3 new pairs, 0 cached" in text and "2/3" in text


def _spin() -> None:
    while True:
        pass


def _bertscores(out: Path) -> dict[str, float]:
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    return {f"{r['task']} {r['instance_id']}": r["scores"]["bertscore_f1"] for r in records}


@pytest.mark.slow  # two runs with the MiniLM in torch, one beside a busy process on every core
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a pool to narrow needs two cores")
def test_on_a_busy_machine_bertscore_narrows_its_threads_and_scores_the_same(tmp_path):
    """Issue 46 item 1: beside one busy process per core, BERTScore encodes with the cores left (one thread), says
    so in run.log, and every score is the one a quiet machine computes, to the last bit."""
    import multiprocessing

    clean = {k: v for k, v in os.environ.items() if k != "RESCUE_THREADS"}
    command = [sys.executable, "-m", "rescue", "run", "--model", "baseline/nearest", "--tasks", "er,vp", "--quiet"]
    quiet = subprocess.run([*command, "--out", str(tmp_path / "quiet")], env=clean, capture_output=True, text=True,
                           timeout=600)
    assert quiet.returncode == 0, quiet.stderr
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_spin, daemon=True) for _ in os.sched_getaffinity(0)]
    for worker in workers:
        worker.start()
    try:
        busy = subprocess.run([*command, "--out", str(tmp_path / "busy")], env=clean, capture_output=True,
                              text=True, timeout=900)
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join()
    assert busy.returncode == 0, busy.stderr
    narrowed = _events(tmp_path / "busy", "threads")
    assert narrowed and narrowed[0]["threads"] == 1 and narrowed[0]["stage"] == "bertscore", narrowed
    assert _bertscores(tmp_path / "busy") == _bertscores(tmp_path / "quiet")
