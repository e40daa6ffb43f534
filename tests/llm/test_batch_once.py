"""Never submit a batch twice (issue #33 item 2): uploads and creates are not retried blindly; each batch carries
metadata naming its run and chunk, and after an ambiguous failure (5xx, dropped connection, timeout, an answer
without an id) and before every create the endpoint's batches are listed (page by page) and ours adopted. Against
the scripted server's batch API with faults injected after the work was done, and kills at every step."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from batch_support import answer_of, batch_model, cached, question, run_batches

from rescue.llm._batch import LEDGER, BatchError, BatchLedger
from rescue.testing.openai_server import BatchFault, serve

N = 6
EVERY = 10**6


def _once_each(server, requests) -> None:
    """Nothing billed twice: every request ran in exactly one batch."""
    ran = [json.dumps(b["messages"], sort_keys=True) for b in server.batch_bodies]
    assert len(ran) == len(set(ran)) == len(requests)


AMBIGUOUS_CREATES = {
    "HTTP 500 after the batch was created": BatchFault("create", status=500),
    "HTTP 502 twice after creating": BatchFault("create", times=2, status=502),
    "connection dropped after creating": BatchFault("create", drop=True),
    "an answer without id": BatchFault("create", body=b'{"object": "batch", "status": "validating"}'),
    "an answer that is a list": BatchFault("create", body=b"[]"),
    "an answer that is not JSON": BatchFault("create", body=b"<html>502 Bad Gateway</html>"),
    "an answer cut short": BatchFault("create", cut=30),
    "an id of 5000 digits": BatchFault("create", body=b'{"id": ' + b"9" * 5000 + b"}"),
    "no answer before the timeout": BatchFault("create", hang=True),
}


AMBIGUOUS_UPLOADS = {
    "connection dropped after every upload": BatchFault("upload", times=EVERY, drop=True),
    "HTTP 500 after storing": BatchFault("upload", status=500),
    "an answer without id": BatchFault("upload", body=b'{"object": "file"}'),
    "an answer that is not JSON": BatchFault("upload", body=b"\xff\xfe"),
}


AMBIGUOUS = {**{f"create: {k}": v for k, v in AMBIGUOUS_CREATES.items()},
             **{f"upload: {k}": v for k, v in AMBIGUOUS_UPLOADS.items()}}


@pytest.mark.parametrize("variant", list(AMBIGUOUS))
def test_an_ambiguous_upload_or_create_adopts_what_it_made(tmp_path, variant):
    requests = [question(n) for n in range(N)]
    with serve(answer_of) as server:
        server.batch_behaviour.faults.append(AMBIGUOUS[variant])
        model = batch_model(server, tmp_path, timeout=2.0)
        outcome = run_batches(model, requests, tmp_path)
        assert len(server.batches) == 1 and len(server.uploads) == 1
        _once_each(server, requests)
    assert outcome.answered == N and all(cached(model, requests).values())
    [entry] = BatchLedger(tmp_path / LEDGER).entries
    assert entry.batch_id == next(iter(server.batches))


def test_every_batch_carries_metadata_naming_its_run_and_chunk(tmp_path):
    requests = [question(n) for n in range(N)]
    with serve(answer_of) as server:
        model = batch_model(server, tmp_path)
        run_batches(model, requests, tmp_path, max_lines=4)
        batches = list(server.batches.values())
    ledger = BatchLedger(tmp_path / LEDGER)
    assert len(batches) == 2
    assert {b["metadata"]["rescue_run"] for b in batches} == {ledger.run}
    assert [b["metadata"]["rescue_chunk"] for b in batches] == [e.chunk for e in ledger.entries]
    assert all(e.chunk for e in ledger.entries) and len({e.chunk for e in ledger.entries}) == 2


def test_many_chunks_with_ambiguous_creates_make_one_batch_each(tmp_path):
    requests = [question(n) for n in range(N)]
    with serve(answer_of) as server:
        server.batch_behaviour.faults.append(BatchFault("create", times=3, status=503))
        model = batch_model(server, tmp_path)
        outcome = run_batches(model, requests, tmp_path, max_lines=2)
        assert len(server.batches) == 3
        _once_each(server, requests)
    assert outcome.answered == N


NOTHING_MADE = {
    "creates refused": (BatchFault("create", times=EVERY, after=False, status=400), "HTTP 400"),
    "uploads refused": (BatchFault("upload", times=EVERY, after=False, status=413), "HTTP 413"),
}


@pytest.mark.parametrize("variant", list(NOTHING_MADE))
def test_a_chunk_nothing_was_made_for_goes_to_the_online_pass(tmp_path, variant):
    requests = [question(n) for n in range(N)]
    fault, said = NOTHING_MADE[variant]
    with serve(answer_of) as server:
        server.batch_behaviour.faults.append(fault)
        model = batch_model(server, tmp_path)
        warnings: list[str] = []
        outcome = run_batches(model, requests, tmp_path, warnings)
        assert server.batches == {} and len(server.uploads) == (0 if fault.route == "upload" else 1)
    assert outcome.failed == N and any("online" in w and said in w for w in warnings), warnings


async def _other_batches(server, count: int) -> None:
    """``count`` batches made by someone else (no metadata), over the first uploaded file."""
    file_id = next(iter(server.uploads))
    async with httpx.AsyncClient(base_url=server.base_url) as client:
        answers = await asyncio.gather(*(client.post("/batches", json={
            "input_file_id": file_id, "endpoint": "/v1/chat/completions"}) for _ in range(count)))
    assert all(a.status_code == 200 for a in answers)


# With 120 other batches made since, ours is on the second page of the list.
@pytest.mark.parametrize("others", [0, pytest.param(120, marks=pytest.mark.slow)])
def test_when_the_batches_cannot_be_listed_nothing_is_created_again_and_a_rerun_adopts(tmp_path, others):
    requests = [question(n) for n in range(N)]
    with serve(answer_of) as server:
        server.batch_behaviour.faults += [BatchFault("create", times=EVERY, status=500),
                                          BatchFault("list_batches", times=EVERY, status=500)]
        model = batch_model(server, tmp_path)
        with pytest.raises(BatchError, match="Rerun to look again"):
            run_batches(model, requests, tmp_path, settle=0.3)
        assert len(server.batches) == 1
        server.batch_behaviour.faults.clear()
        if others:
            asyncio.run(_other_batches(server, others))
        outcome = run_batches(model, requests, tmp_path)
        assert len(server.batches) == 1 + others and len(server.uploads) == 1
        _once_each(server, requests)
    assert outcome.answered == N and outcome.submitted == 0


@pytest.mark.parametrize("last_id", ['"same"', "null"])
def test_a_list_that_pages_forever_is_not_followed_forever(tmp_path, last_id):
    requests = [question(n) for n in range(N)]
    endless = ('{"object": "list", "data": [{"id": "same"}], "has_more": true, "last_id": %s}' % last_id).encode()
    with serve(answer_of) as server:
        server.batch_behaviour.faults += [BatchFault("create", status=500),
                                          BatchFault("list_batches", times=EVERY, body=endless)]
        model = batch_model(server, tmp_path)
        with pytest.raises(BatchError, match="without end"):
            run_batches(model, requests, tmp_path, settle=0.3)
        assert len(server.batches) == 1


# --- kills at every step, then the same command again ------------------------------------------------------------

PRICES = '["m"]\ninput = 2.0\noutput = 8.0\n\n["m2"]\ninput = 2.0\noutput = 8.0\n'


def _command(tmp_path, server):
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES, encoding="utf-8")
    return [sys.executable, "-m", "rescue", "run", "--model", "m", "--model", "m2", "--base-url", server.base_url,
            "--tasks", "itp", "--limit-samples", "1", "--out", str(tmp_path / "run"), "--no-bertscore", "--batch",
            "--batch-poll", "0.05", "--quiet", "--prices", str(prices), "--max-retries", "1"]


# Each model's upload (create) stored and its answer held back when the run is killed: a kill between recording a
# call and sending it is a call whose answer was lost, which a rerun waits for (test_batch_settle.py).
KILL_AT = {
    "after upload": (BatchFault("upload", times=2, hang=True), lambda server, run: len(server.uploads) >= 2),
    "after create": (BatchFault("create", times=2, hang=True), lambda server, run: len(server.batches) >= 2),
    "during poll": (None, lambda server, run: len(server.batches) == 2 and _ledger_ids(run) == 2),
    "while reading the output": (BatchFault("content", cut=900, hang=True),
                                 lambda server, run: _answers_stored(run) >= 1),
}


def _ledger_ids(run) -> int:
    try:
        return sum(1 for e in json.loads((run / LEDGER).read_text())["batches"] if e["batch_id"])
    except (OSError, ValueError, KeyError):
        return 0


def _answers_stored(run) -> int:
    import sqlite3

    try:
        with sqlite3.connect(run / "cache.sqlite", timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.mark.slow
@pytest.mark.parametrize("step", list(KILL_AT))
def test_a_run_killed_at_any_step_is_finished_by_a_rerun_without_a_second_batch(tmp_path, step):
    from _engine_support import itp_instances, oracle_answers
    from rescue.testing.openai_server import Reply, request_key

    answers = oracle_answers("itp", itp_instances(limit_samples=1))
    fault, ready = KILL_AT[step]
    run = tmp_path / "run"
    with serve(lambda body: Reply.text(answers[request_key(body)])) as server:
        server.batch_behaviour.polls = 10**9 if fault is None else 1
        if fault is not None:
            server.batch_behaviour.faults.append(fault)
        env = {**os.environ, "OPENAI_API_KEY": "test", "PYTHONPATH": os.pathsep.join(sys.path)}
        child = subprocess.Popen(_command(tmp_path, server), env=env, start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while not ready(server, run):
                assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
                assert time.monotonic() < deadline, f"never reached: {step}"
                time.sleep(0.05)
        finally:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            if child.stderr:
                child.stderr.close()
        server.batch_behaviour.polls = 1
        server.batch_behaviour.faults.clear()
        rerun = subprocess.run(_command(tmp_path, server), env=env, capture_output=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr.decode()
        # One batch per chunk (one chunk per model), each request run once, nothing online, one upload each.
        assert len(server.batches) == 2 and len(server.uploads) == 2, (server.batches, server.uploads)
        assert server.request_count == 0
        ran = [request_key(b) + b["model"] for b in server.batch_bodies]
        assert len(ran) == len(set(ran)) == 2 * len(answers)
    results = json.loads((run / "results.json").read_text())
    assert results["run"]["complete"]
    assert all(results["models"][m]["itp"]["all"]["f1"] == 1.0 for m in ("m", "m2"))


def test_rescue_run_stops_with_exit_3_when_it_cannot_tell_and_the_rerun_adopts(tmp_path):
    from _cli import invoke_main
    from batch_support import prices

    with serve(answer_of) as server:
        server.batch_behaviour.faults += [BatchFault("create", times=EVERY, status=500),
                                          BatchFault("list_batches", times=EVERY, status=500)]
        args = ["run", "--model", "m", "--base-url", server.base_url, "--tasks", "itp", "--limit-samples", "1",
                "--out", str(tmp_path / "run"), "--no-bertscore", "--batch", "--batch-poll", "0.01", "--quiet",
                "--prices", prices(tmp_path), "--batch-settle", "0.5"]
        stopped = invoke_main(args, env={"OPENAI_API_KEY": "test-key-of-some-length"})
        assert stopped.exit_code == 3 and "waiting for the batch of" in stopped.output
        assert "Traceback" not in stopped.output and server.request_count == 0 and len(server.batches) == 1
        server.batch_behaviour.faults.clear()
        invoke_main(args, env={"OPENAI_API_KEY": "test-key-of-some-length"})
        assert len(server.batches) == 1 and len(server.uploads) == 1
