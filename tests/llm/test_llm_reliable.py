"""The cache/retry/limiter layer over real HTTP: every fault ends in an answer or a recorded failure, nothing lost."""

from __future__ import annotations

import asyncio
import json
import time

from _engine_support import complete_all, until_in_flight

from rescue.llm._cache import ResponseCache
from rescue.llm._client import GenerationSettings, OpenAIModel
from rescue.llm._limiter import AdaptiveLimiter
from rescue.engine.progress import RunLog
from rescue.llm._providers import Endpoint
from rescue.llm._reliable import ReliableModel
from rescue.llm._types import ChatRequest
from rescue.testing.openai_server import Reply, fail_first, serve


def _request(n: int = 0) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": f"question {n}"}], max_tokens=20)


def _reliable(server, tmp_path, **options) -> ReliableModel:
    endpoint = Endpoint("test/model", "test-model", server.base_url, None)
    inner = OpenAIModel(endpoint, GenerationSettings(timeout=options.pop("timeout", 30.0)))
    options.setdefault("cache", ResponseCache(tmp_path / "cache.sqlite"))
    options.setdefault("limiter", AdaptiveLimiter(options.pop("concurrency", 4)))
    options.setdefault("backoff_base", 0.01)
    options.setdefault("log", RunLog(tmp_path / "run.log"))
    return ReliableModel(inner, **options)


def _run(model: ReliableModel, requests: list[ChatRequest]):
    return complete_all(model, requests)


def _log(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "run.log").read_text().splitlines()]


def test_server_errors_are_retried_and_logged(tmp_path):
    with serve(fail_first(2, Reply.server_error(500), Reply.json({"ok": 1}))) as server:
        model = _reliable(server, tmp_path)
        [answer] = _run(model, [_request()])
        assert server.request_count == 3
    assert answer.status == "ok" and answer.meta["attempts"] == 3
    retries = [e for e in _log(tmp_path) if e["event"] == "retry"]
    assert [e["error_class"] for e in retries] == ["server_error", "server_error"]
    assert all(e["model"] == "test/model" for e in retries)
    assert model.stats_for("predict", "-").retries == 2


def test_retry_after_is_honoured(tmp_path):
    with serve(fail_first(1, Reply.rate_limited(1.0), Reply.json({"ok": 1}))) as server:
        model = _reliable(server, tmp_path)
        start = time.monotonic()
        [answer] = _run(model, [_request()])
        elapsed = time.monotonic() - start
        times = [r.received_at for r in server.requests]
    assert answer.status == "ok"
    assert times[1] - times[0] >= 0.95
    assert elapsed >= 0.95
    assert model.limiter.limit < model.limiter.maximum  # shrank on the 429


def test_timeouts_are_retried(tmp_path):
    with serve(fail_first(1, Reply.hang(), Reply.json({"ok": 1}))) as server:
        [answer] = _run(_reliable(server, tmp_path, timeout=0.3), [_request()])
    assert answer.status == "ok"


def test_cache_answers_without_a_request(tmp_path):
    with serve(Reply.json({"ok": 1})) as server:
        _run(_reliable(server, tmp_path), [_request(1), _request(2)])
        assert server.request_count == 2
        again = _reliable(server, tmp_path)
        answers = _run(again, [_request(1), _request(2), _request(3)])
        assert server.request_count == 3  # only the new question
    assert [a.meta.get("cached", False) for a in answers] == [True, True, False]
    assert again.stats_for("predict", "-").cache_hits == 2


def test_request_error_is_not_an_answer_a_rerun_asks_again(tmp_path):
    with serve(Reply.server_error(500)) as server:
        [answer] = _run(_reliable(server, tmp_path, max_retries=2), [_request()])
        assert answer.status == "request_error" and "gave up after 3 attempts" in answer.error
        assert server.request_count == 3
        server.script = Reply.json({"ok": 1})
        # No --retry-errors needed: a request error recorded earlier is asked again by a plain rerun.
        [fixed] = _run(_reliable(server, tmp_path, max_retries=2), [_request()])
        assert fixed.status == "ok" and server.request_count == 4
    cache = ResponseCache(tmp_path / "cache.sqlite")
    assert cache.counts() == {"answers": 1, "failures": 0}


def test_recorded_refusal_is_final_unless_retry_errors(tmp_path):
    with serve(Reply.content_filter()) as server:
        [answer] = _run(_reliable(server, tmp_path), [_request()])
        assert answer.status == "refused" and server.request_count == 1
        [again] = _run(_reliable(server, tmp_path), [_request()])
        assert again.status == "refused" and "--retry-errors" in again.error
        assert server.request_count == 1  # a refusal is an answer: the rerun does not ask again
        server.script = Reply.json({"ok": 1})
        [fixed] = _run(_reliable(server, tmp_path, retry_errors=True), [_request()])
        assert fixed.status == "ok" and server.request_count == 2


def test_refusal_is_recorded_as_such(tmp_path):
    with serve(Reply.content_filter()) as server:
        [answer] = _run(_reliable(server, tmp_path), [_request()])
        assert server.request_count == 1  # a refusal is not retried
    assert answer.status == "refused"
    assert ResponseCache(tmp_path / "cache.sqlite").counts() == {"answers": 0, "failures": 1}


def test_fatal_error_stops_asking(tmp_path):
    with serve(Reply.json({}), api_key="right") as server:
        endpoint = Endpoint("test/model", "test-model", server.base_url, None, "wrong")
        model = ReliableModel(OpenAIModel(endpoint), cache=ResponseCache(tmp_path / "c.sqlite"),
                              limiter=AdaptiveLimiter(1))
        answers = _run(model, [_request(i) for i in range(5)])
        assert server.request_count == 1
    assert all(a.status == "request_error" for a in answers)
    assert model.fatal is not None and "http_401" in model.fatal


def test_concurrency_is_used_and_capped(tmp_path):
    async def eight_at_once(body):
        # Eight meet however slowly a loaded machine sends them (0.2 s latency alone left it to chance); after
        # that each waits 0.2 s, so a ninth let through would be seen too.
        await until_in_flight(server, 8)
        return Reply.json({"ok": 1})

    with serve(eight_at_once, latency=0.2) as server:
        answers = _run(_reliable(server, tmp_path, concurrency=8), [_request(i) for i in range(32)])
        # Eight at once seen by the server: used (not one after another) and capped. No wall-clock bound: it
        # failed on a loaded machine while the behaviour was right.
        assert server.max_in_flight == 8
    assert all(a.status == "ok" for a in answers)


def test_limiter_halves_on_rate_limit_and_grows_back():
    async def go():
        # A cooldown a loaded machine cannot outlast between two statements (0.05 s could pass there, and the
        # second 429 then counted as a new burst).
        limiter = AdaptiveLimiter(16, cooldown=0.5)
        limiter.on_rate_limit(None)
        assert limiter.limit == 8
        limiter.on_rate_limit(None)  # a burst of 429s within the cooldown counts once
        assert limiter.limit == 8
        await asyncio.sleep(0.51)
        for _ in range(3):
            limiter.on_success()
        assert limiter.limit == 11
        limiter.on_rate_limit(0.2)
        start = time.monotonic()
        async with limiter:
            waited = time.monotonic() - start
        assert waited >= 0.19  # Retry-After pauses new requests

    asyncio.run(go())


# --- identical requests in flight (issue #34, "identical requests") ----------------------------------------


def test_identical_requests_in_flight_are_sent_once_and_share_the_answer(tmp_path):
    with serve(Reply.json({"ok": 1}), latency=0.1) as server:
        model = _reliable(server, tmp_path, concurrency=8)
        answers = _run(model, [_request(1), _request(2), _request(1), _request(1), _request(2)])
        assert server.request_count == 2  # one per distinct body
    assert all(a.status == "ok" and a.text == '{"ok": 1}' for a in answers)
    stats = model.stats_for("predict", "-")
    assert stats.requests == 2 and stats.cache_hits == 3
    assert stats.usage.input_tokens == sum(a.usage.input_tokens for a in answers)  # each use counted, as a hit is


def test_requests_that_differ_in_a_keyed_setting_are_not_shared(tmp_path):
    with serve(Reply.json({"ok": 1}), latency=0.1) as server:
        model = _reliable(server, tmp_path, concurrency=8)
        plain, hotter = _request(1), _request(1)
        hotter.temperature = 0.7
        budget = ChatRequest(messages=plain.messages, max_tokens=20, budget_factor=2.0)
        _run(model, [plain, hotter, budget])
        assert server.request_count == 3


def test_a_refusal_in_flight_is_shared_a_request_error_is_asked_again(tmp_path):
    with serve(Reply.content_filter(), latency=0.1) as server:
        answers = _run(_reliable(server, tmp_path), [_request(1), _request(1)])
        assert server.request_count == 1 and [a.status for a in answers] == ["refused", "refused"]
    with serve(Reply.server_error(500), latency=0.05) as server:
        # A request error is no answer (a rerun asks it again): the waiting twin is sent once the first gave up.
        answers = _run(_reliable(server, tmp_path / "e", max_retries=1), [_request(1), _request(1)])
        assert server.request_count == 4 and [a.status for a in answers] == ["request_error"] * 2
        assert server.max_in_flight == 1


def test_fresh_requests_are_never_shared(tmp_path):
    with serve(Reply.json({"ok": 1}), latency=0.1) as server:
        fresh = [ChatRequest(messages=_request(1).messages, max_tokens=20, fresh=True) for _ in range(2)]
        _run(_reliable(server, tmp_path), fresh)
        assert server.request_count == 2


def test_a_cancelled_request_lets_its_waiting_twin_go(tmp_path):
    with serve(Reply.json({"ok": 1}), latency=0.3) as server:
        model = _reliable(server, tmp_path)

        async def go():
            first = asyncio.ensure_future(model.complete(_request(1)))
            await asyncio.sleep(0.05)
            second = asyncio.ensure_future(model.complete(_request(1)))
            await asyncio.sleep(0.05)
            first.cancel()
            try:
                return await second
            finally:
                await model.aclose()

        answer = asyncio.run(go())
        # The twin was sent once the first was cancelled (the first may not have reached the server by then).
        assert answer.status == "ok" and server.request_count in (1, 2)
        assert server.requests[-1].body["messages"] == _request(1).messages
