"""Runs to submit, made for real: a scripted model with a judge (both real HTTP servers on 127.0.0.1), the offline
baselines, and people's answers exported as a run. Shared by tests/submissions (issue #44) and the leaderboard."""

from __future__ import annotations

import hashlib
import json
import random
import zipfile
from pathlib import Path
from typing import Any

from _cli import invoke_main

from rescue.data.loading import load_samples
from rescue.data.reading import demo_path
from rescue.tasks import TASKS
from rescue.testing import Reply, serve
from rescue.testing.oracle import OracleScript

TASK_LIST = ",".join(TASKS)
JUDGE_RATING = {"emotion_score": 4, "score": 4, "source_target_score": 2, "viewpoint_score": 3, "verdict": "pass",
                "notes": "close to the reference"}


def two_samples(folder: Path) -> Path:
    """Two demo samples (a couple and a family) in a file of their own: quick, and every task has instances."""
    lines = demo_path().read_text(encoding="utf-8").splitlines(keepends=True)
    path = folder / "two.jsonl"
    path.write_text(lines[0] + lines[-1], encoding="utf-8")
    return path


class MostlyRight:
    """A model that answers as the oracle except on one request in three, where it answers nothing usable: its
    scores are neither 0 nor 1, so a verifier that re-scores wrongly cannot agree by chance."""

    def __init__(self, oracle: OracleScript, name: str = "scripted-model-v2", salt: str = ""):
        self.oracle = oracle
        self.name = name
        self.salt = salt  # another salt: another third of the requests answered badly (another model's answers)

    def __call__(self, body: dict[str, Any]) -> Reply:
        digest = hashlib.sha256((self.salt + json.dumps(body["messages"], sort_keys=True)).encode()).digest()
        reply = self.oracle(body) if digest[0] % 3 else Reply.json({"predictions": []})
        if isinstance(reply, str):
            reply = Reply.text(reply)
        elif isinstance(reply, dict):
            reply = Reply.json(reply)
        reply.served_model = self.name  # what the provider says it served
        return reply


def model_run(folder: Path, data: Path, *, model: str = "scripted-model", served: str = "scripted-model-v2",
              tasks: str = TASK_LIST, extra: tuple[str, ...] = (), salt: str = "") -> Path:
    """``rescue run`` of a scripted model judged by a scripted judge, on ``data``; the run folder."""
    samples = load_samples(data)
    oracle = OracleScript(samples, [TASKS[name] for name in tasks.split(",")], batch_size=1)
    out = folder / f"run-{model.replace('/', '-')}"
    with serve(MostlyRight(oracle, served, salt)) as server, serve(Reply.json(JUDGE_RATING)) as judge:
        made = invoke_main(["run", "--model", model, "--base-url", server.base_url, "--judge", "judge-model",
                            "--judge-base-url", judge.base_url, "--data", str(data), "--tasks", tasks,
                            "--no-bertscore", "--out", str(out), "-q", *extra], env={"OPENAI_API_KEY": "test"})
    assert made.exit_code == 0, made.output
    return out


def baseline_run(folder: Path, data: Path) -> Path:
    """``rescue run`` of every offline baseline on ``data``; the run folder."""
    out = folder / "run-baselines"
    made = invoke_main(["run", "--data", str(data), "--tasks", TASK_LIST, "--no-bertscore", "--out", str(out), "-q"])
    assert made.exit_code == 0, made.output
    return out


def human_run(folder: Path, data: Path) -> Path:
    """Two people answer a benchmark project in the review tool (its real app), exported as a run."""
    from bench_helpers import ScanningClient, answer_queue, bench_app, make_bench

    bench = make_bench(folder / "bench", data)
    app = bench_app(bench, bench / "review.db", people=["ann", "bob"])
    answer_queue(ScanningClient(app, "ann"), random.Random(5))
    answer_queue(ScanningClient(app, "bob"), random.Random(6), limit=12)
    app.state.engine.dispose()
    out = folder / "run-people"
    made = invoke_main(["review", "export", str(bench), "--as-run", str(out), "--no-bertscore"])
    assert made.exit_code == 0, made.output
    return out


def submit(run: Path, out: Path, *extra: str) -> Path:
    """``rescue submit RUN --out OUT``; the bundle."""
    made = invoke_main(["submit", str(run), "--out", str(out), "--submitter", "test lab", *extra])
    assert made.exit_code == 0, made.output
    return out


def members(bundle: Path) -> dict[str, bytes]:
    """Every member of a bundle, by name, in the archive's order."""
    with zipfile.ZipFile(bundle) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def rewrite(bundle: Path, out: Path, changed: dict[str, bytes], *, rehash: bool) -> Path:
    """A copy of ``bundle`` with ``changed`` members; ``rehash``: the manifest's hashes updated to match (the
    forger's move), else left as they were."""
    parts = members(bundle)
    parts.update(changed)
    if rehash:
        manifest = json.loads(parts["manifest.json"])
        for name, data in parts.items():
            if name != "manifest.json" and name in manifest["files"]:
                manifest["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
        parts["manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return out
