"""Never paid twice across time (issue #42 item 1): a create (or upload) whose answer was lost after the provider
stored it, then a list that does not show it yet (eventually consistent), made rescue create a second batch. Now
the ambiguity is recorded in batches.json with the time it began, nothing is uploaded or created again for that
chunk until the list shows ours (adopted), the list is read with backoff for the --batch-settle window (a rerun
waits out the rest of the same window), and past it the run stops with exit 3 saying what it waits for. Ids read
from batches.json or an endpoint are checked as ids and escaped in URLs. Real `rescue run` processes against the
scripted server, kills while waiting."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from batch_support import answer_of, batch_model, cached, log_events, oracle, question, run_batches

from rescue.llm._batch import LEDGER, BatchError, BatchLedger
from rescue.llm._batch_http import BatchEndpoint, id_path, is_id
from rescue.testing.openai_server import BatchFault, serve

N = 6
EVERY = 10**6
ENV = {**os.environ, "OPENAI_API_KEY": "test-key-of-some-length", "PYTHONPATH": os.pathsep.join(sys.path)}


def _command(tmp_path, server, out="run", *extra):
    from batch_support import prices

    return [sys.executable, "-m", "rescue", "run", "--model", "m", "--base-url", server.base_url, "--tasks", "itp",
            "--limit-samples", "1", "--out", str(tmp_path / out), "--no-bertscore", "--batch", "--batch-poll", "0.02",
            "--quiet", "--prices", prices(tmp_path), "--max-retries", "1", "--timeout", "5", *extra]


def _run(tmp_path, server, *extra, out="run"):
    return subprocess.run(_command(tmp_path, server, out, *extra), env=ENV, capture_output=True, timeout=240)


def _ledger(tmp_path, out="run"):
    return json.loads((tmp_path / out / LEDGER).read_text())["batches"]


def _once_each(server, count):
    ran = [json.dumps(b["messages"], sort_keys=True) for b in server.batch_bodies]
    assert len(ran) == len(set(ran)) == count


# --- the fault, through the real command ----------------------------------------------------------------

def test_a_create_stored_then_500_and_a_list_empty_20_times_adopts_the_one_batch(tmp_path):
    answers, script = oracle()
    with serve(script) as server:
        server.batch_behaviour.faults += [BatchFault("create", status=500), BatchFault.lagging("list_batches", 20)]
        done = _run(tmp_path, server, "--batch-settle", "120")
        assert done.returncode == 0, done.stderr.decode()
        # Before: a second batch was created (the list showed none), the ledger kept only the second.
        assert len(server.batches) == 1 and len(server.uploads) == 1
        _once_each(server, len(answers))
        assert server.request_count == 0  # nothing asked online either
        assert server.batch_behaviour.faults[1].calls == 20  # every empty list was read, then ours adopted
    [entry] = _ledger(tmp_path)
    assert entry["batch_id"] == next(iter(server.batches)) and entry["collected"] and not entry["unsettled"]
    assert "may have happened unseen" in done.stderr.decode()
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["models"]["m"]["itp"]["all"]["f1"] == 1.0


def test_an_upload_stored_then_500_and_a_lagging_file_list_uploads_once(tmp_path):
    answers, script = oracle()
    with serve(script) as server:
        server.batch_behaviour.faults += [BatchFault("upload", status=500), BatchFault.lagging("list_files", 20)]
        done = _run(tmp_path, server, "--batch-settle", "120")
        assert done.returncode == 0, done.stderr.decode()
        assert len(server.uploads) == 1 and len(server.batches) == 1
        _once_each(server, len(answers))


# --- the same, in the library, over every ambiguous answer ------------------------------------------------------

LAGGING = {
    "create: HTTP 500 after storing": BatchFault("create", status=500),
    "create: connection dropped after storing": BatchFault("create", drop=True),
    "create: an answer without id": BatchFault("create", body=b'{"object": "batch"}'),
    "create: an id that is a path": BatchFault("create", body=b'{"id": "../../../etc/passwd", "status": "validating"}'),
    "create: an id of 10,000 characters": BatchFault("create", body=b'{"id": "' + b"b" * 10_000 + b'", "status": "x"}'),
    "create: no answer before the timeout": BatchFault("create", hang=True),
    "upload: HTTP 502 after storing": BatchFault("upload", status=502),
    "upload: an id with a space": BatchFault("upload", body=b'{"id": "file 1", "object": "file"}'),
}


@pytest.mark.parametrize("variant", list(LAGGING))
def test_after_any_ambiguous_call_only_the_list_is_read_until_it_shows_ours(tmp_path, variant):
    requests = [question(n) for n in range(N)]
    fault = LAGGING[variant]
    lists = "list_files" if fault.route == "upload" else "list_batches"
    with serve(answer_of) as server:
        server.batch_behaviour.faults += [fault, BatchFault.lagging(lists, 5)]
        model = batch_model(server, tmp_path, timeout=2.0)
        outcome = run_batches(model, requests, tmp_path, settle=60)
        assert len(server.batches) == 1 and len(server.uploads) == 1
        _once_each(server, N)
        assert not any("etc/passwd" in path or "%2e" in path.lower() for _, path in server.paths)
    assert outcome.answered == N and all(cached(model, requests).values())
    [entry] = BatchLedger(tmp_path / LEDGER).entries
    assert entry.batch_id == next(iter(server.batches)) and entry.unsettled == ""
    steps = [e["step"] for e in log_events(tmp_path, "batch_step")]
    assert "settle_wait" in steps and ("batch_adopted" in steps or "file_adopted" in steps)


# --- the window: over, resumed by a rerun, killed while waiting ---------------------------------------------------

def test_past_the_window_the_run_stops_with_exit_3_saying_what_it_waits_for(tmp_path):
    with serve(oracle()[1]) as server:
        # Nothing stored, 500: rescue cannot tell it from a create that was stored; it never creates again.
        server.batch_behaviour.faults.append(BatchFault("create", times=EVERY, after=False, status=500))
        started = time.monotonic()
        stopped = _run(tmp_path, server, "--batch-settle", "1.5")
        waited = time.monotonic() - started
        assert stopped.returncode == 3, stopped.stderr.decode()
        message = stopped.stderr.decode()
        assert "waiting for the batch of" in message and "in the endpoint's batches (GET /batches)" in message
        assert "HTTP 500" in message and "1.5 s" in message and "Nothing was created twice" in message
        assert str(tmp_path / "run" / LEDGER) in message and "Traceback" not in message
        assert server.batch_behaviour.faults[0].calls == 1 and server.batches == {}  # one create, never two
        assert waited >= 1.5
        [entry] = _ledger(tmp_path)
        assert entry["unsettled"] == "create" and entry["unsettled_since"] > 0 and entry["input_file_id"]
        since = entry["unsettled_since"]
        # A rerun after the window: one look, exit 3 again at once, the same moment named, still no create.
        again = _run(tmp_path, server, "--batch-settle", "1.5")
        assert again.returncode == 3 and "1 looks in this run" in again.stderr.decode()
        assert server.batch_behaviour.faults[0].calls == 1
        assert _ledger(tmp_path)[0]["unsettled_since"] == since


def test_a_rerun_adopts_the_batch_once_the_list_shows_it_even_after_the_window(tmp_path):
    answers, script = oracle()
    with serve(script) as server:
        server.batch_behaviour.faults += [BatchFault("create", status=500),
                                          BatchFault.lagging("list_batches", EVERY)]
        assert _run(tmp_path, server, "--batch-settle", "0.5").returncode == 3
        assert len(server.batches) == 1
        server.batch_behaviour.faults.clear()  # the list caught up
        done = _run(tmp_path, server, "--batch-settle", "0.5")
        assert done.returncode == 0, done.stderr.decode()
        assert len(server.batches) == 1 and len(server.uploads) == 1
        _once_each(server, len(answers))


@pytest.mark.slow
@pytest.mark.parametrize("list_then", ["caught up", "still lagging past the window"])
def test_a_run_killed_while_it_waits_is_resumed_by_a_rerun_from_the_same_moment(tmp_path, list_then):
    answers, script = oracle()
    with serve(script) as server:
        server.batch_behaviour.faults += [BatchFault("create", status=500),
                                          BatchFault.lagging("list_batches", EVERY)]
        child = subprocess.Popen(_command(tmp_path, server, "run", "--batch-settle", "8"), env=ENV,
                                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while not any(e.get("step") == "settle_wait" for e in _events(tmp_path)):
                assert child.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
        finally:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        [entry] = _ledger(tmp_path)
        since = entry["unsettled_since"]
        assert entry["unsettled"] == "create" and len(server.batches) == 1
        if list_then == "caught up":
            server.batch_behaviour.faults.clear()
            done = _run(tmp_path, server, "--batch-settle", "8")
            assert done.returncode == 0, done.stderr.decode()
            assert len(server.batches) == 1
            _once_each(server, len(answers))
            return
        time.sleep(max(0.0, since + 8 - time.time()))  # the window began in the killed run and is over now
        again = _run(tmp_path, server, "--batch-settle", "8")
        assert again.returncode == 3 and "1 looks in this run" in again.stderr.decode()
        assert len(server.batches) == 1 and _ledger(tmp_path)[0]["unsettled_since"] == since


def _events(tmp_path):
    try:
        lines = (tmp_path / "run" / "run.log").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            found.append(json.loads(line))
        except ValueError:
            pass  # the line being written
    return found


# --- ids: from batches.json and from the endpoint ---------------------------------------------------------------

HOSTILE_IDS = {
    "a path up": "../../../etc/passwd",
    "a path up, short": "../x",
    "escaped dots": "%2e%2e",
    "a space": "batch 1",
    "10,000 characters": "b" * 10_000,
    "a number": 5,
    "null": None,
    "a control character": "batch\n1",
    "a query": "batch?x=1",
}


@pytest.mark.parametrize("field", ["batch_id", "input_file_id"])
@pytest.mark.parametrize("name", list(HOSTILE_IDS))
def test_a_ledger_id_that_is_no_id_stops_the_run_before_any_request(tmp_path, name, field):
    from _cli import invoke_main
    from batch_support import prices

    run = tmp_path / "run"
    run.mkdir()
    entry = {"model": "m", "purpose": "predict", "batch_id": "batch_1", "input_file_id": "file-1",
             "keys": ["k"], "chunk": "c", field: HOSTILE_IDS[name]}
    (run / LEDGER).write_text(json.dumps({"run": "r", "started": 1.0, "batches": [entry]}), encoding="utf-8")
    with serve(answer_of) as server:
        args = ["run", "--model", "m", "--base-url", server.base_url, "--tasks", "itp", "--limit-samples", "1",
                "--out", str(run), "--no-bertscore", "--batch", "--batch-poll", "0.01", "--quiet",
                "--prices", prices(tmp_path)]
        stopped = invoke_main(args, env={"OPENAI_API_KEY": "test-key-of-some-length"})
        assert stopped.exit_code == 2, stopped.output
        assert f"batches[0].{field}" in stopped.output and str(run / LEDGER) in stopped.output
        assert "Traceback" not in stopped.output and len(stopped.output) < 2000
        # Nothing sent to the batch routes, with or without the key.
        assert not any(path.startswith(("/v1/batches", "/v1/files")) for _, path in server.paths), server.paths


def test_ids_are_checked_and_escaped_before_they_reach_a_url(tmp_path):
    assert id_path("batches", "batch_abc-1") == "batches/batch_abc-1"
    # A resource name is one segment, its "/" escaped, as the openai client sends it (never another route).
    assert id_path("files", "files/abc.v2", "content") == "files/files%2Fabc.v2/content"
    assert id_path("batches", "batches/x:1") == "batches/batches%2Fx:1"
    for hostile in ["../x", "a/../b", "%2e%2e", "a b", ".", "..", "x/", "/x", "b" * 300, "", "a?b", "a#b", "é"]:
        assert not is_id(hostile), hostile
        with pytest.raises(BatchError, match="not a batch or file id"):
            id_path("batches", hostile)
    with serve(answer_of) as server:
        model = batch_model(server, tmp_path)
        api = BatchEndpoint(model.inner)  # type: ignore[arg-type]

        async def ask() -> None:
            try:
                with pytest.raises(BatchError):
                    await api.status("../../../etc/passwd")
                with pytest.raises(BatchError):
                    async for _ in api.content("../../etc/passwd"):
                        pass
            finally:
                await api.aclose()

        import asyncio

        asyncio.run(ask())
        assert server.paths == []

        async def resource_names() -> None:  # checked ids are sent, each as the one segment id_path shows
            try:
                with pytest.raises(BatchError):  # the scripted server has no such batch or file: 404
                    await api.status("batches/b-1")
                with pytest.raises(BatchError):
                    async for _ in api.content("files/f:2"):
                        pass
            finally:
                await api.aclose()

        api = BatchEndpoint(model.inner)  # type: ignore[arg-type]
        asyncio.run(resource_names())
        # As the lock's openai sends them (one segment, "/" escaped); openai before 3 sent the "/" as it is.
        assert server.paths in ([("GET", "/v1/batches/batches%2Fb-1"), ("GET", "/v1/files/files%2Ff:2/content")],
                                [("GET", "/v1/batches/batches/b-1"), ("GET", "/v1/files/files/f:2/content")])


ENDPOINT_IDS = {
    "an output file id that is a path": {"output_file_id": "../../../etc/passwd"},
    "an error file id with a query": {"error_file_id": "x?purpose=all"},
    "an output file id of 10,000 characters": {"output_file_id": "f" * 10_000},
}


@pytest.mark.parametrize("variant", list(ENDPOINT_IDS))
def test_a_status_naming_a_file_that_is_no_id_is_never_fetched(tmp_path, variant):
    requests = [question(n) for n in range(N)]
    replace = ENDPOINT_IDS[variant]

    def rewrite(body: bytes) -> bytes:
        batch = json.loads(body)
        if batch.get("status") == "completed":
            batch.update(replace)
        return json.dumps(batch).encode()

    with serve(answer_of) as server:
        server.batch_behaviour.faults.append(BatchFault("status", times=EVERY, body=rewrite))
        model = batch_model(server, tmp_path)
        warnings: list[str] = []
        outcome = run_batches(model, requests, tmp_path, warnings)
        assert all(path.startswith("/v1/") and ".." not in path and "?" not in path for _, path in server.paths)
        assert len(server.batches) == 1
    assert outcome.failed == N and any("online" in w for w in warnings)
    [entry] = BatchLedger(tmp_path / LEDGER).entries
    assert not entry.collected  # a rerun polls it again


def test_a_listed_batch_with_a_hostile_id_is_never_adopted(tmp_path):
    requests = [question(n) for n in range(N)]

    def hostile(body: bytes) -> bytes:
        page = json.loads(body)
        for batch in page["data"]:
            batch["id"] = "../../../etc/passwd"
        return json.dumps(page).encode()

    with serve(answer_of) as server:
        server.batch_behaviour.faults += [BatchFault("create", status=500),
                                          BatchFault("list_batches", times=EVERY, body=hostile)]
        model = batch_model(server, tmp_path)
        with pytest.raises(BatchError, match="waiting for the batch of"):
            run_batches(model, requests, tmp_path, settle=0.5)
        assert len(server.batches) == 1
        assert not any("etc/passwd" in path for _, path in server.paths)


@pytest.mark.parametrize("arrived", [False, True])
def test_an_upload_never_listed_in_the_window_is_uploaded_again_and_only_the_copy_rescue_holds_is_used(
        tmp_path, arrived):
    requests = [question(n) for n in range(N)]
    with serve(answer_of) as server:
        server.batch_behaviour.faults += [BatchFault("upload", after=arrived, status=500),
                                          BatchFault.lagging("list_files", EVERY)]
        model = batch_model(server, tmp_path)
        warnings: list[str] = []
        outcome = run_batches(model, requests, tmp_path, warnings, settle=0.5)
        assert len(server.uploads) == (2 if arrived else 1) and len(server.batches) == 1
        [batch] = server.batches.values()
        assert batch["input_file_id"] == list(server.uploads)[-1]  # the copy whose id rescue holds
        _once_each(server, N)
    assert outcome.answered == N and any("uploaded again" in w for w in warnings)
