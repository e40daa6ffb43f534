"""A model behind the scripted server's batch API, its requests and the batch phase run over them, for the
batch-API tests (tests/llm/test_batch_*.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _engine_support import itp_instances, oracle_answers

from rescue.engine.progress import RunLog
from rescue.engine.runner import RunConfig
from rescue.llm._batch import LEDGER, BatchLedger, BatchOutcome, run_in_batches
from rescue.llm._cache import ResponseCache
from rescue.llm._client import GenerationSettings, OpenAIModel
from rescue.llm._providers import Endpoint
from rescue.llm._reliable import ReliableModel
from rescue.llm._types import ChatRequest
from rescue.testing.openai_server import Reply, message_text, request_key

PRICES = '["m"]\ninput = 2.0\noutput = 8.0\n\n["judge-a"]\ninput = 1.0\noutput = 4.0\n'


def prices(tmp_path: Path) -> str:
    path = tmp_path / "prices.toml"
    path.write_text(PRICES, encoding="utf-8")
    return str(path)


def run_config(tmp_path: Path, server: Any, out: str = "run", **overrides: Any) -> RunConfig:
    """A --batch run of model ``m`` on one sample's ITP instances against ``server``."""
    options: dict[str, Any] = dict(
        out=str(tmp_path / out), models=["m"], tasks=["itp"], base_url=server.base_url, quiet=True, bertscore=False,
        limit_samples=1, batch=True, batch_poll=0.01, prices=prices(tmp_path), max_retries=1, timeout=30.0)
    options.update(overrides)
    return RunConfig(**options)


def _recorded(ledger: Path) -> bool:
    try:
        return any(e["batch_id"] for e in json.loads(ledger.read_text())["batches"])
    except (OSError, ValueError, KeyError):
        return False


def kill_once_batch_is_made(tmp_path: Path, server: Any, *args: str) -> None:
    """A real ``rescue run --batch`` (the same run as :func:`run_config`, plus ``args``) in a process of its own,
    killed (SIGKILL) once ``batches.json`` names the batch it created; the server's batches should not end meanwhile
    (``server.batch_behaviour.polls`` high)."""
    env = {**os.environ, "OPENAI_API_KEY": "test", "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-m", "rescue", "run", "--model", "m", "--base-url", server.base_url, "--tasks", "itp",
         "--limit-samples", "1", "--out", str(tmp_path / "run"), "--no-bertscore", "--batch", "--batch-poll",
         "0.05", "--quiet", "--prices", prices(tmp_path), *args], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        # batches.json names the run before anything is sent; wait for the batch itself in it.
        while not _recorded(tmp_path / "run" / "batches.json") and child.poll() is None:
            assert time.monotonic() < deadline, "the batch was never recorded"
            time.sleep(0.05)
    finally:
        with contextlib.suppress(ProcessLookupError):  # a run that ended by itself (the caller's asserts say so)
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def oracle() -> tuple[dict[str, str], Any]:
    """The right answer of every ITP request of :func:`run_config`, and a script giving it."""
    answers = oracle_answers("itp", itp_instances(limit_samples=1))
    return answers, (lambda body: Reply.text(answers[request_key(body)]))


def er_script(body: dict[str, Any]) -> Reply:
    """A model that answers every ER checkpoint "uneasy" at 5, and a judge that grades every answer 4 (and 3)."""
    text = message_text(body)
    if "You are grading" in text:
        return Reply.json({"emotion_score": 4, "score": 3})
    checkpoints = json.loads(text.rsplit("Checkpoints: ", 1)[1])
    return Reply.json({"predictions": [{"checkpoint_id": c["checkpoint_id"], "emotion": "uneasy", "intensity": 5}
                                       for c in checkpoints]})


def question(n: int) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": f"question {n}"}], max_tokens=20)


def answer_of(body: dict[str, Any]) -> Reply:
    """The scripted answer to :func:`question` ``n``: ``answer n``."""
    return Reply.text("answer " + message_text(body).split()[-1])


def batch_model(server: Any, tmp_path: Path, name: str = "test/model", timeout: float = 30.0) -> ReliableModel:
    endpoint = Endpoint(name, "test-model", server.base_url, None)
    return ReliableModel(OpenAIModel(endpoint, GenerationSettings(timeout=timeout)),
                         cache=ResponseCache(tmp_path / "cache.sqlite"), log=RunLog(tmp_path / "run.log"))


def run_batches(model: ReliableModel, requests: list[ChatRequest], tmp_path: Path, warnings: list[str] | None = None,
                **options: Any) -> BatchOutcome:
    """The batch phase over ``requests``, its ledger in ``tmp_path``; warnings collected into ``warnings``. An
    ambiguous upload or create is waited for 5 s unless ``settle`` says otherwise."""
    options.setdefault("poll_interval", 0.01)
    options.setdefault("settle", 5.0)
    sink = warnings if warnings is not None else []
    return asyncio.run(run_in_batches(model, requests, BatchLedger(tmp_path / LEDGER), on_warning=sink.append,
                                      **options))


def cached(model: ReliableModel, requests: list[ChatRequest]) -> dict[int, str | None]:
    """Request number -> the answer stored in the cache (None when none is)."""
    assert model.cache is not None
    found = {}
    for n, request in enumerate(requests):
        key = model.key(request)
        assert key is not None
        answer = model.cache.get(key)
        found[n] = None if answer is None else answer.text
    return found


def log_events(tmp_path: Path, event: str) -> list[dict[str, Any]]:
    return [e for e in (json.loads(line) for line in (tmp_path / "run.log").read_text().splitlines())
            if e["event"] == event]
