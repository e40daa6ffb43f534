"""A run directory's old ledger and a shared cache (issue: never paid twice): a `batches.json` left in a run
directory by a `--batch` run without `--cache-dir` (killed while its batch ran, or finished) was not read by the
same run once it used `--cache-dir`, whose ledger lives beside the shared cache: the same requests were uploaded
and batched again, paid twice. Now that ledger is merged into the shared one under its lock (read as untrusted,
each entry at most once), then removed; its batches are adopted. Counted at the scripted server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from batch_support import (answer_of, batch_model, cached, kill_once_batch_is_made, oracle, question, run_batches,
                           run_config)

from rescue.engine.runner import run
from rescue.errors import BatchError, exit_code
from rescue.llm._batch import LEDGER, BatchLedger, held_ledger, run_in_batches
from rescue.testing.openai_server import serve


def _ledger(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.slow
def test_a_batch_left_running_in_the_run_folder_is_adopted_by_the_run_with_a_shared_cache(tmp_path):
    answers, script = oracle()
    with serve(script) as server:
        server.batch_behaviour.polls = 10**9
        kill_once_batch_is_made(tmp_path, server)  # the first run, without --cache-dir: its batch runs on
        assert len(server.batches) == len(server.uploads) == 1
        old = _ledger(tmp_path / "run" / LEDGER)
        server.batch_behaviour.polls = 1
        outcome = run(run_config(tmp_path, server, cache_dir=str(tmp_path / "cache")))
        # Before: a second upload and a second batch over the same requests (each billed twice).
        assert len(server.batches) == len(server.uploads) == 1
        assert server.request_count == 0 and len(server.batch_bodies) == len(answers)
    assert outcome.complete and outcome.results["models"]["m"]["itp"]["all"]["f1"] == 1.0
    assert not (tmp_path / "run" / LEDGER).exists()  # merged, then removed
    shared = _ledger(tmp_path / "cache" / LEDGER)["batches"]
    assert [e["batch_id"] for e in shared] == [old["batches"][0]["batch_id"]]
    assert shared[0]["run"] == old["run"] and shared[0]["collected"]
    log = [json.loads(line) for line in (tmp_path / "run" / "run.log").read_text().splitlines()]
    assert any(e["event"] == "batch_ledger_merged" for e in log)


@pytest.mark.slow
def test_a_finished_batch_of_the_run_folder_is_read_again_into_the_shared_cache_not_made_again(tmp_path):
    answers, script = oracle()
    with serve(script) as server:
        first = run(run_config(tmp_path, server))  # without --cache-dir: answers in the run directory's cache
        assert first.complete and len(server.batches) == 1
        again = run(run_config(tmp_path, server, cache_dir=str(tmp_path / "cache")))
        assert len(server.batches) == len(server.uploads) == 1 and server.request_count == 0
    assert again.complete and again.results["models"]["m"]["itp"]["all"]["f1"] == 1.0
    assert not (tmp_path / "run" / LEDGER).exists()
    assert [e["collected"] for e in _ledger(tmp_path / "cache" / LEDGER)["batches"]] == [True]


@pytest.mark.slow
def test_a_malformed_run_folder_ledger_stops_the_run_naming_file_and_field_and_sends_nothing(tmp_path):
    _, script = oracle()
    with serve(script) as server:
        server.batch_behaviour.polls = 10**9
        kill_once_batch_is_made(tmp_path, server)
        bad = tmp_path / "run" / LEDGER
        data = _ledger(bad)
        data["batches"][0]["batch_id"] = "../../../etc/passwd"
        bad.write_text(json.dumps(data))
        with pytest.raises(BatchError) as caught:
            run(run_config(tmp_path, server, cache_dir=str(tmp_path / "cache")))
        assert len(server.batches) == len(server.uploads) == 1 and server.request_count == 0
    assert exit_code(caught.value) == 2
    assert str(bad) in str(caught.value) and "batches[0].batch_id" in str(caught.value)
    assert _ledger(bad) == data  # kept as it was: nothing lost
    assert not (tmp_path / "cache" / LEDGER).exists() or not _ledger(tmp_path / "cache" / LEDGER)["batches"]


def _finished_ledger(server, tmp_path: Path, folder: str, numbers: range) -> Path:
    """A ledger in ``folder`` whose batch answered questions ``numbers`` (a run of its own)."""
    (tmp_path / folder).mkdir()
    model = batch_model(server, tmp_path / folder)
    run_batches(model, [question(n) for n in numbers], tmp_path / folder)
    return tmp_path / folder / LEDGER


def test_a_merge_killed_before_the_removal_adds_nothing_twice(tmp_path):
    with serve(answer_of) as server:
        left = _finished_ledger(server, tmp_path, "old", range(3))
        copy = left.read_bytes()
        (tmp_path / "cache").mkdir()
        shared = BatchLedger(tmp_path / "cache" / LEDGER)
        assert shared.merge(left) == 1 and not left.exists()
        left.write_bytes(copy)  # as if killed between the shared ledger's write and the removal
        again = BatchLedger(tmp_path / "cache" / LEDGER)
        assert again.merge(left) == 0 and not left.exists()
        assert len(_ledger(tmp_path / "cache" / LEDGER)["batches"]) == 1
        assert len(server.batches) == 1


def test_a_malformed_ledger_is_not_merged_and_kept(tmp_path):
    (tmp_path / "cache").mkdir()
    left = tmp_path / LEDGER
    for text, where in (('{"run": "r", "batches": [{"model": 1}]}', "batches[0].model"),
                        ('{"run": "../x", "batches": []}', "run"), ("{not json", str(left))):
        left.write_text(text)
        with pytest.raises(BatchError) as caught:
            BatchLedger(tmp_path / "cache" / LEDGER).merge(left)
        assert str(left) in str(caught.value) and where in str(caught.value)
        assert left.read_text() == text and not (tmp_path / "cache" / LEDGER).exists()


def test_two_runs_racing_to_merge_one_run_folder_ledger_take_it_once(tmp_path):
    with serve(answer_of) as server:
        left = _finished_ledger(server, tmp_path, "old", range(3))
    said: list[str] = []

    async def race() -> list[int]:
        async def one() -> int:
            async with held_ledger(tmp_path / "cache", said.append, left, said.append) as ledger:
                await asyncio.sleep(0.2)  # the other waits for the lock meanwhile
                return len(ledger.entries)

        return list(await asyncio.gather(one(), one()))

    assert asyncio.run(race()) == [1, 1]
    assert len(_ledger(tmp_path / "cache" / LEDGER)["batches"]) == 1 and not left.exists()
    assert sum("are now in" in s for s in said) == 1 and sum("waiting for it" in s for s in said) == 1


def test_a_run_folder_ledger_for_other_requests_is_merged_and_ours_batched_apart(tmp_path):
    with serve(answer_of) as server:
        left = _finished_ledger(server, tmp_path, "old", range(3))
        model = batch_model(server, tmp_path / "cache-dir-run")
        ours = [question(n) for n in range(3, 6)]

        async def phase() -> None:
            async with held_ledger(tmp_path / "cache", lambda s: None, left) as ledger:
                await run_in_batches(model, ours, ledger, poll_interval=0.01, settle=5.0)

        asyncio.run(phase())
        assert len(server.batches) == 2 and len(server.uploads) == 2  # the old one, and ours: never adopted for ours
        assert server.request_count == 0
        assert cached(model, ours) == {0: "answer 3", 1: "answer 4", 2: "answer 5"}
        entries = _ledger(tmp_path / "cache" / LEDGER)["batches"]
        assert len(entries) == 2 and [e["collected"] for e in entries] == [False, True]
        assert entries[0]["run"] and entries[0]["run"] != _ledger(tmp_path / "cache" / LEDGER)["run"]
        # Its batch is left to the run that asks its requests (before, read here: its answers went nowhere and
        # it was marked read): that run adopts it, without a batch of its own.
        theirs = [question(n) for n in range(3)]

        async def later() -> None:
            async with held_ledger(tmp_path / "cache", lambda s: None, left) as ledger:
                await run_in_batches(model, theirs, ledger, poll_interval=0.01, settle=5.0)

        asyncio.run(later())
        assert len(server.batches) == 2 and server.request_count == 0
        assert cached(model, theirs) == {0: "answer 0", 1: "answer 1", 2: "answer 2"}
        assert all(e["collected"] for e in _ledger(tmp_path / "cache" / LEDGER)["batches"])
