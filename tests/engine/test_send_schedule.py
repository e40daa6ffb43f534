"""The send schedule (issue #34 item 2 and "identical requests"): one chain per sample in row order (providers'
prompt caches), chains longer than their share of the slots cut into consecutive segments, free slots to the
chains with the most requests left, and each distinct request body sent once in a run."""

from __future__ import annotations

import asyncio
import json
import threading

from _engine_support import oracle_answers, until_in_flight

from rescue.data.loading import demo_path, load_samples
from rescue.engine.plan import chain_share, send_chains
from rescue.engine.runner import RunConfig, run
from rescue.llm._limiter import AdaptiveLimiter
from rescue.tasks import get_task
from rescue.tasks.base import RenderOptions
from rescue.testing.openai_server import Reply, request_key, serve


def _itp(samples):
    return get_task("itp").build(samples)


def _chain_rows(chain):
    return [b[0].row_index for b in chain]


# --- the limiter ------------------------------------------------------------------------------------------


def test_a_free_slot_goes_to_the_highest_priority_then_first_come():
    async def go():
        limiter = AdaptiveLimiter(1)
        order: list[str] = []
        await limiter.acquire()

        async def wait(name: str, priority: int):
            async with limiter.slot(priority):
                order.append(name)

        waiting = [asyncio.ensure_future(wait(n, p)) for n, p in
                   [("short", 1), ("long", 9), ("mid", 4), ("long-later", 9), ("none", 0)]]
        await asyncio.sleep(0)
        limiter.release()
        await asyncio.gather(*waiting)
        assert limiter.in_flight == 0
        return order

    assert asyncio.run(go()) == ["long", "long-later", "mid", "short", "none"]


def test_a_cancelled_waiter_leaves_no_slot_behind():
    async def go():
        limiter = AdaptiveLimiter(1)
        await limiter.acquire()
        gone = asyncio.ensure_future(limiter.acquire(5))
        kept = asyncio.ensure_future(limiter.acquire(1))
        await asyncio.sleep(0)
        gone.cancel()
        limiter.release()
        await kept
        assert limiter.in_flight == 1
        limiter.release()
        assert limiter.in_flight == 0

    asyncio.run(go())


def test_a_longer_retry_after_during_a_pause_still_wakes_the_waiters():
    async def go():
        limiter = AdaptiveLimiter(2, cooldown=0.01)
        limiter.on_rate_limit(0.05)
        waiter = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0.01)
        limiter.on_rate_limit(0.1)  # the pause grows while a request waits
        await asyncio.wait_for(waiter, 60)  # a hang fails; a loaded machine's stall does not
        assert limiter.in_flight == 1

    asyncio.run(go())


# --- the chains -------------------------------------------------------------------------------------------


def test_chains_come_longest_first_each_one_sample_in_row_order():
    batches = [[i] for i in _itp(load_samples(None))]
    chains = send_chains(batches, concurrency=2, share=10_000)
    assert [len(c) for c in chains] == sorted((len(c) for c in chains), reverse=True)
    for chain in chains:
        assert len({b[0].sample_id for b in chain}) == 1
        assert _chain_rows(chain) == sorted(_chain_rows(chain))
    assert sorted(id(b) for c in chains for b in c) == sorted(id(b) for b in batches)


def test_a_chain_longer_than_its_share_is_cut_into_near_equal_consecutive_segments():
    batches = [[i] for i in _itp(load_samples(None))]
    longest = max(len([b for b in batches if b[0].sample_id == s]) for s in {b[0].sample_id for b in batches})
    share = chain_share([len(batches)], concurrency=4)
    chains = send_chains(batches, concurrency=4)
    assert max(len(c) for c in chains) <= share < longest
    by_sample: dict[str, list[int]] = {}
    for chain in chains:
        assert len({b[0].sample_id for b in chain}) == 1
        by_sample.setdefault(chain[0][0].sample_id, []).extend(_chain_rows(chain))
    for sample, rows in by_sample.items():  # the segments of one sample are consecutive runs of its rows
        segments = sorted((_chain_rows(c) for c in chains if c[0][0].sample_id == sample), key=lambda r: r[0])
        assert [r for s in segments for r in s] == sorted(rows)
        assert max(map(len, segments)) - min(map(len, segments)) <= 1


def test_the_share_counts_every_task_of_the_model():
    assert chain_share([552, 676, 458, 458], 32) == 67  # the benchmark's run: RPP's 72-request chains are cut
    assert chain_share([10], 32) == 1 and chain_share([], 4) == 1


# --- a run ------------------------------------------------------------------------------------------------


def _row_of(instances) -> dict[str, tuple[str, int]]:
    task = get_task("itp")
    return {request_key({"messages": task.render([i], RenderOptions())}): (i.sample_id, i.row_index)
            for i in instances}


def test_a_run_keeps_each_segment_in_row_order_and_starts_with_the_longest_chains(tmp_path):
    samples = load_samples(None)
    instances = _itp(samples)
    answers, row_of = oracle_answers("itp", instances), _row_of(instances)
    lock = threading.Lock()
    order: list[tuple[str, int]] = []

    async def script(body):
        with lock:
            order.append(row_of[request_key(body)])
        # The first request waits for the second: on a loaded machine the first chain's answer and next row could
        # otherwise reach the server before the second chain's first row.
        await until_in_flight(server, 2)
        await asyncio.sleep(0.01)
        return Reply.text(answers[request_key(body)])

    with serve(script) as server:
        outcome = run(RunConfig(out=str(tmp_path / "run"), models=["m"], tasks=["itp"], base_url=server.base_url,
                                quiet=True, bertscore=False, concurrency=2))
    assert outcome.complete
    chains = send_chains([[i] for i in instances], 2, chain_share([len(instances)], 2))
    first = {(c[0][0].sample_id, c[0][0].row_index) for c in chains[:2]}
    assert set(order[:2]) == first  # the two longest chains go first
    for chain in chains:  # each segment's rows reach the server in row order
        rows = [(b[0].sample_id, b[0].row_index) for b in chain]
        assert [o for o in order if o in set(rows)] == rows


def test_identical_bodies_in_a_run_are_sent_once(tmp_path):
    # Two samples that open alike (a copy under another id): every prompt of the copy is one of the original's.
    lines = demo_path().read_text(encoding="utf-8").splitlines()
    twin = json.loads(lines[0])
    twin["sample_id"] = twin["sample_id"] + "_twin"
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join([*lines, json.dumps(twin)]) + "\n", encoding="utf-8")
    instances = _itp(load_samples(data))
    answers = oracle_answers("itp", instances)

    with serve(lambda body: Reply.text(answers[request_key(body)]), latency=0.02) as server:
        outcome = run(RunConfig(out=str(tmp_path / "run"), data=str(data), models=["m"], tasks=["itp"],
                                base_url=server.base_url, quiet=True, bertscore=False, concurrency=8))
        bodies = [json.dumps(b["messages"], sort_keys=True) for b in server.bodies]
    assert outcome.complete and all(r.ok for r in outcome.records)
    assert len(bodies) == len(set(bodies)) == len(answers) < len(instances)
    usage = outcome.results["models"]["m"]["usage"]["itp"]
    assert usage["requests"] == len(bodies) and usage["cache_hits"] == len(instances) - len(bodies)
