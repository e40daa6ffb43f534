"""Helpers for the engine and run tests: an oracle script for the scripted OpenAI-compatible server.

The oracle knows, for every request the runner can send (each batch and each single instance), the answer a
perfect model would give (the task's own ``format_answer`` with the gold values), keyed like the server keys
requests: by the hash of the messages. Tests then check real metrics computed from real HTTP answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rescue.tasks import get_task
from rescue.tasks.base import Instance, RenderOptions
from rescue.testing.openai_server import Reply, request_key
from rescue.testing.oracle import OracleScript


def oracle_answers(task_name: str, instances: list[Instance], batch_size: int = 1,
                   options: RenderOptions | None = None) -> dict[str, str]:
    """request key -> perfect answer, for every batch the runner forms at ``batch_size`` and every single
    instance (the package's oracle, without its fallback answer for unknown requests)."""
    return OracleScript.for_instances(get_task(task_name), instances, batch_size, options).answers


def oracle_script(answers: dict[str, str]):
    def script(body: dict[str, Any]) -> Reply:
        answer = answers.get(request_key(body))
        if answer is None:
            return Reply.error(400, "oracle: unknown request", type="invalid_request_error")
        return Reply.text(answer)

    return script


def complete_all(model, requests) -> list:
    """Send ``requests`` to ``model`` side by side in a fresh event loop, then close the model."""
    import asyncio

    async def go():
        try:
            return await asyncio.gather(*(model.complete(r) for r in requests))
        finally:
            await model.aclose()

    return asyncio.run(go())


def itp_instances(limit_samples: int | None = None) -> list[Instance]:
    from rescue.data.loading import load_samples

    samples = load_samples(None)
    if limit_samples:  # the samples `--limit-samples N` takes (stratified by default), so the oracle knows them
        from rescue.data.loading import choose_samples

        samples = choose_samples(samples, limit_samples, "stratified")
    return get_task("itp").build(samples)


def read_jsonl(path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def start_slow_run(server, out):
    """``rescue run`` of ITP (one sample, one request at a time) as a child process, returned once it holds
    ``out`` and is asking ``server``: a run directory another process is writing now."""
    import os
    import subprocess
    import sys
    import time

    process = subprocess.Popen([sys.executable, "-m", "rescue", "run", "--model", "m", "--base-url", server.base_url,
                                "--tasks", "itp", "--limit-samples", "1", "--out", str(out), "--quiet",
                                "--no-bertscore", "--concurrency", "1"],
                               env={**os.environ, "OPENAI_API_KEY": "k"}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while server.request_count == 0:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    return process


def saved_answers(cache: Path) -> int:
    """How many answers the response cache file ``cache`` (a run's or a build's ``cache.sqlite``) holds now, read
    while another process may be writing it; 0 before it exists."""
    import sqlite3

    if not cache.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def settled_count(server, quiet_s: float = 0.5, limit_s: float = 30.0) -> int:
    """The server's request count once it has stopped changing. A run that is killed or stopped drops its requests
    in flight; the server may still read one of them after the run has ended, and counting it as the rerun's made
    the rerun look as if it asked more than there are instances (seen once in a loaded CI run: 32 for 30)."""
    import time

    deadline = time.monotonic() + limit_s
    count, since = server.request_count, time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = server.request_count
        if now != count or server.in_flight:
            count, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
    return count


async def until_in_flight(server, count: int, limit_s: float = 30.0) -> None:
    """For a script: wait until the server has had ``count`` requests in flight at once (or ``limit_s`` passed).
    The first requests meet however slowly a loaded machine sends them; left to a fixed latency, a client slower
    to send the next request than the server took to answer one kept them from ever meeting."""
    import asyncio
    import time

    deadline = time.monotonic() + limit_s
    while server.max_in_flight < count and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


def held_script(answer, release, *, after: int = 0, hold=lambda body: True):
    """A script for the scripted server: ``after`` answers, then every request ``hold`` picks waits until the
    ``release`` event is set, so a run is mid-way however late a loaded machine lets the test look."""
    import asyncio
    import itertools

    asked = itertools.count()

    async def script(body):
        if hold(body) and next(asked) >= after:
            while not release.is_set():
                await asyncio.sleep(0.01)
        return answer(body)

    return script
