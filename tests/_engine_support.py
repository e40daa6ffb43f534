"""Helpers for the engine and run tests: an oracle script for the scripted OpenAI-compatible server.

The oracle knows, for every request the runner can send (each batch and each single instance), the answer a
perfect model would give (the task's own ``format_answer`` with the gold values), keyed like the server keys
requests: by the hash of the messages. Tests then check real metrics computed from real HTTP answers.
"""

from __future__ import annotations

import json
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
    deadline = time.monotonic() + 60
    while server.request_count == 0:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    return process
