"""Never paid twice across runs (issue #42 item 2): two `rescue run` processes with different --out and the same
--cache-dir, at once, each uploaded and created a batch for the same requests (and online, each sent every request).
Whatever shares a cache shares its batch ledger (CACHE/batches.json) and its lock: the second run waits for the
first's batch phase (and says so), then reads its answers from the cache or adopts the batch it left; online, each
request is claimed in the shared cache before it is sent, and a run that finds a request claimed by a live process
waits for its answer. Real processes against the scripted server, counted at the server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from batch_support import oracle, prices

from rescue.testing.openai_server import serve

ENV = {**os.environ, "OPENAI_API_KEY": "test-key-of-some-length", "PYTHONPATH": os.pathsep.join(sys.path)}


def _command(tmp_path: Path, server, out: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "rescue", "run", "--model", "m", "--base-url", server.base_url, "--tasks", "itp",
            "--limit-samples", "1", "--out", str(tmp_path / out), "--cache-dir", str(tmp_path / "cache"),
            "--no-bertscore", "--quiet", "--prices", prices(tmp_path), "--max-retries", "1", "--timeout", "60",
            *extra]


def _start(tmp_path: Path, server, out: str, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(_command(tmp_path, server, out, *extra), env=ENV, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _events(log: Path, event: str) -> list[dict]:
    try:
        lines = log.read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # the line being written
        if entry.get("event") == event:
            found.append(entry)
    return found


def _until(condition, *children: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        for child in children:
            if child.poll() is not None:
                raise AssertionError(child.stderr.read().decode() if child.stderr else "exited")
        assert time.monotonic() < deadline, "never reached"
        time.sleep(0.05)


def _finish(child: subprocess.Popen[bytes]) -> tuple[int, str]:
    _, err = child.communicate(timeout=180)
    return child.returncode, err.decode()


def _f1(tmp_path: Path, out: str) -> float:
    return json.loads((tmp_path / out / "results.json").read_text())["models"]["m"]["itp"]["all"]["f1"]


def _once_each(server, count: int) -> None:
    ran = [json.dumps(b["messages"], sort_keys=True) for b in server.batch_bodies]
    assert len(ran) == len(set(ran)) == count


def _kill(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    if child.stderr:
        child.stderr.close()


@contextlib.contextmanager
def _runs(tmp_path: Path, server, release: threading.Event | None = None) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start runs (``start(out, *options)``) that are all killed, however the test ends; ``release`` is set first."""
    started: list[subprocess.Popen[bytes]] = []

    def start(out: str, *extra: str) -> subprocess.Popen[bytes]:
        started.append(_start(tmp_path, server, out, *extra))
        return started[-1]

    try:
        yield start
    finally:
        if release is not None:
            release.set()
        for child in started:
            _kill(child)


@pytest.mark.slow
def test_two_batch_runs_sharing_a_cache_at_once_make_one_batch_and_the_second_says_it_waits(tmp_path):
    answers, script = oracle()
    with serve(script) as server:
        server.batch_behaviour.polls = 10**9  # the first run's batch runs until the second waits for it
        with _runs(tmp_path, server) as start:
            first = start("a", "--batch", "--batch-poll", "0.05")
            _until(lambda: len(server.batches) >= 1, first)
            second = start("b", "--batch", "--batch-poll", "0.05")
            _until(lambda: _events(tmp_path / "b" / "run.log", "batch_wait"), first, second)
            server.batch_behaviour.polls = 1  # the batch ends at its next poll
            (code_a, err_a), (code_b, err_b) = _finish(first), _finish(second)
        assert code_a == 0 and code_b == 0, err_a + err_b
        # Before: two uploads, two batches, every request billed twice.
        assert len(server.batches) == 1 and len(server.uploads) == 1
        _once_each(server, len(answers))
        assert server.request_count == 0
    assert "is sending the batches of the cache" in err_b and "waiting for it" in err_b
    assert _f1(tmp_path, "a") == _f1(tmp_path, "b") == 1.0
    assert (tmp_path / "cache" / "batches.json").is_file() and not (tmp_path / "a" / "batches.json").exists()


@pytest.mark.slow
def test_when_the_first_run_is_killed_the_waiting_one_adopts_its_batch(tmp_path):
    answers, script = oracle()
    with serve(script) as server:
        server.batch_behaviour.polls = 10**9
        with _runs(tmp_path, server) as start:
            first = start("a", "--batch", "--batch-poll", "0.05")
            _until(lambda: len(server.batches) >= 1 and _events(tmp_path / "a" / "run.log", "batch_step"), first)
            second = start("b", "--batch", "--batch-poll", "0.05")
            _until(lambda: _events(tmp_path / "b" / "run.log", "batch_wait"), first, second)
            _kill(first)
            server.batch_behaviour.polls = 1
            code_b, err_b = _finish(second)
        assert code_b == 0, err_b
        assert len(server.batches) == 1 and len(server.uploads) == 1
        _once_each(server, len(answers))
        assert server.request_count == 0
    assert _f1(tmp_path, "b") == 1.0


def _held(script):
    """``script`` whose answers wait until the returned event is set (the runs are then surely both asking)."""
    release = threading.Event()

    async def held(body):
        while not release.is_set():
            await asyncio.sleep(0.02)
        return script(body)

    return held, release


@pytest.mark.slow
def test_two_online_runs_sharing_a_cache_send_each_request_once(tmp_path):
    answers, script = oracle()
    held, release = _held(script)
    with serve(held) as server:
        with _runs(tmp_path, server, release) as start:
            first = start("a", "--concurrency", "2")
            _until(lambda: server.request_count >= 1, first)
            second = start("b", "--concurrency", "2")
            _until(lambda: _events(tmp_path / "b" / "run.log", "claim_wait"), first, second)
            release.set()
            (code_a, err_a), (code_b, err_b) = _finish(first), _finish(second)
        assert code_a == 0 and code_b == 0, err_a + err_b
        # Before: the second run sent every request the first had in flight (or not yet answered) again.
        sent = [json.dumps(body["messages"], sort_keys=True) for body in server.bodies]
        assert len(sent) == len(set(sent)) == len(answers)
    assert _f1(tmp_path, "a") == _f1(tmp_path, "b") == 1.0
    waits = _events(tmp_path / "b" / "run.log", "claim_wait")
    assert waits and all(w["pid"] == first.pid for w in waits)


@pytest.mark.slow
def test_the_claims_of_a_killed_run_are_taken_over(tmp_path):
    answers, script = oracle()
    held, release = _held(script)
    with serve(held) as server:
        with _runs(tmp_path, server, release) as start:
            first = start("a", "--concurrency", "4")
            _until(lambda: server.request_count >= 4, first)
            _kill(first)  # its requests in flight: claimed, never answered
            release.set()
            second = start("b", "--concurrency", "4")
            code_b, err_b = _finish(second)
        assert code_b == 0, err_b
        # What the killed run had in flight is asked again (its answers were lost), everything else once.
        sent = [json.dumps(body["messages"], sort_keys=True) for body in server.bodies]
        assert len(set(sent)) == len(answers) and len(sent) == len(answers) + 4
    assert _f1(tmp_path, "b") == 1.0


@pytest.mark.slow
def test_an_online_run_waits_for_what_a_batch_run_sharing_the_cache_has_in_its_batch(tmp_path):
    answers, script = oracle()
    with serve(script) as server:
        server.batch_behaviour.polls = 10**9
        with _runs(tmp_path, server) as start:
            first = start("a", "--batch", "--batch-poll", "0.05")
            _until(lambda: len(server.batches) >= 1, first)
            second = start("b")  # online, the same requests
            _until(lambda: _events(tmp_path / "b" / "run.log", "claim_wait"), first, second)
            server.batch_behaviour.polls = 1
            (code_a, err_a), (code_b, err_b) = _finish(first), _finish(second)
        assert code_a == 0 and code_b == 0, err_a + err_b
        assert server.request_count == 0 and len(server.batches) == 1  # nothing online: the batch answered all
        _once_each(server, len(answers))
    assert "is asking requests of this run now" in err_b
    assert _f1(tmp_path, "a") == _f1(tmp_path, "b") == 1.0


def test_the_claims_of_a_run_that_died_unreaped_are_taken_over(tmp_path):
    """A killed run whose parent has not reaped it yet (a zombie: its pid and start time still in /proc) holds
    nothing: its flock is already gone, so a run sharing the cache goes on, and found its claims live before."""
    from rescue.llm._cache import ResponseCache

    code = ("import os, sys; from rescue.llm._cache import ResponseCache; "
            "cache = ResponseCache(sys.argv[1]); assert cache.claim('k') is None; os._exit(0)")
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "cache.sqlite")])
    try:
        deadline = time.monotonic() + 60
        while Path(f"/proc/{child.pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z":
            assert time.monotonic() < deadline, "the child did not end"
            time.sleep(0.02)
        cache = ResponseCache(tmp_path / "cache.sqlite")
        assert cache.claim("k") is None  # taken over: before, the zombie's claim was live until it was reaped
    finally:
        child.wait()
