"""The layer every remote model is called through: cache, resume, retries, adaptive concurrency, cost budget.

:class:`ReliableModel` itself implements :class:`~rescue.engine.types.Model`, so the runner and the judges use
one wrapper for prediction and judge models alike. Per request it:

1. answers from the cache when the same request (endpoint, model, messages, settings) was answered before;
2. returns a failure recorded by an earlier run without asking again, unless ``retry_errors``;
3. otherwise asks, inside the model's :class:`AdaptiveLimiter`, retrying transient failures (429 honouring
   Retry-After, 5xx, timeouts) with exponential backoff and jitter; every retry is logged with model,
   instances and error class, and shown in the progress display;
4. stores the answer (or the final failure) before returning it, so a killed run loses only requests in flight.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rescue.engine.cache import ResponseCache, request_key
from rescue.engine.client import FatalError, TransientError
from rescue.engine.cost import PriceTable, add_usage
from rescue.engine.limiter import AdaptiveLimiter
from rescue.engine.progress import RunLog
from rescue.engine.types import ChatAnswer, ChatRequest, Model, Usage
from rescue.tasks.base import Instance, Task

NOT_CACHED = "not in the cache (rescore asks no model)"
NOT_REQUESTED_BUDGET = "not requested: --max-cost reached (rerun to continue)"


@dataclass
class CallStats:
    """What one model did for one task (or judging): requests made, answers reused, tokens, retries."""

    requests: int = 0  # new HTTP requests that got an answer or a final failure (not counting retries)
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0  # final failures: request_error or refused
    usage: Usage = field(default_factory=Usage)  # tokens of every answer used, cached ones included

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "failures": self.failures,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "cached_input_tokens": self.usage.cached_input_tokens,
        }


class Budget:
    """``--max-cost``: dollars this process may spend across all models; None: no limit."""

    def __init__(self, max_cost: float | None, prices: PriceTable):
        self.max_cost = max_cost
        self.prices = prices
        self.spent = 0.0

    def charge(self, model: str, usage: Usage) -> None:
        cost = self.prices.cost(model, usage)
        if cost is not None:
            self.spent += cost

    @property
    def exhausted(self) -> bool:
        return self.max_cost is not None and self.spent >= self.max_cost


def _instance_ids(batch: list[Instance]) -> list[str]:
    return [i.instance_id for i in batch]


class ReliableModel:
    def __init__(
        self,
        inner: Model,
        *,
        cache: ResponseCache | None = None,
        limiter: AdaptiveLimiter | None = None,
        max_retries: int = 5,
        retry_errors: bool = False,
        max_failures: int | None = None,
        budget: Budget | None = None,
        log: RunLog | None = None,
        on_retry: Callable[[ChatRequest], None] | None = None,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        offline: bool = False,
    ):
        self.inner = inner
        self.name = inner.name
        self.cache = cache
        self.limiter = limiter
        self.max_retries = max_retries
        self.retry_errors = retry_errors
        self.max_failures = max_failures
        self.budget = budget
        self.log = log or RunLog(None)
        self.on_retry = on_retry
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.offline = offline  # answer from the cache only (rescore): a miss is a failure, nothing is sent
        self.fatal: str | None = None  # set once the endpoint cannot answer at all; later requests are not sent
        self.stats: dict[tuple[str, str], CallStats] = {}
        self._total_failures = 0

    def prepare(self, task: Task, instances: list[Instance]) -> None:
        # Offline, a remote or local model is never contacted (a local one would start its server here).
        if self.offline and getattr(self.inner, "cache_identity", None) is not None:
            return
        self.inner.prepare(task, instances)

    def stats_for(self, purpose: str, task: str) -> CallStats:
        key = (purpose, task)
        if key not in self.stats:
            self.stats[key] = CallStats()
        return self.stats[key]

    def _key(self, request: ChatRequest) -> str | None:
        identity = getattr(self.inner, "cache_identity", None)
        if self.cache is None or identity is None:
            return None
        settings = {**self.inner.cache_settings(), "request_max_tokens": request.max_tokens}  # type: ignore[attr-defined]
        return request_key(identity, settings, request.messages)

    async def complete(self, request: ChatRequest) -> ChatAnswer:
        stats = self.stats_for(request.purpose, request.task.name if request.task is not None else "-")
        key = self._key(request)
        if key is not None:
            assert self.cache is not None
            cached = self.cache.get(key)
            if cached is not None:
                stats.cache_hits += 1
                add_usage(stats.usage, cached.usage)
                return cached
            recorded = None if self.retry_errors else self.cache.get_failure(key)
            if recorded is not None:
                stats.failures += 1
                status, error = recorded
                return ChatAnswer(None, status, f"{error} [recorded earlier; --retry-errors asks again]",  # type: ignore[arg-type]
                                  meta={"recorded": True})
        if self.offline and key is not None:
            stats.failures += 1
            return ChatAnswer(None, "request_error", NOT_CACHED, meta={"not_requested": True})
        if self.fatal is not None:
            stats.failures += 1
            return ChatAnswer(None, "request_error", f"not requested: {self.fatal}", meta={"not_requested": True})
        if self.budget is not None and self.budget.exhausted:
            stats.failures += 1
            return ChatAnswer(None, "request_error", NOT_REQUESTED_BUDGET, meta={"not_requested": True})
        answer = await self._ask(request, stats)
        if not answer.meta.get("not_requested"):
            stats.requests += 1
        if answer.status == "ok":
            add_usage(stats.usage, answer.usage)
            if self.budget is not None:
                self.budget.charge(self.name, answer.usage)
            if key is not None:
                assert self.cache is not None
                self.cache.put(key, model=self.name, endpoint=self.inner.cache_identity,  # type: ignore[attr-defined]
                               purpose=request.purpose, request=self._request_record(request), answer=answer)
            return answer
        stats.failures += 1
        if answer.meta.get("not_requested"):
            return answer
        add_usage(stats.usage, answer.usage)
        if key is not None:
            assert self.cache is not None
            self.cache.put_failure(key, model=self.name, status=answer.status, error=answer.error)
        self.log.event("failure", model=self.name, purpose=request.purpose, status=answer.status,
                       instances=_instance_ids(request.batch), error=answer.error)
        if answer.status == "request_error":
            self._total_failures += 1
            if self.max_failures is not None and self._total_failures > self.max_failures and self.fatal is None:
                self.fatal = f"more than {self.max_failures} failed requests (--max-failures)"
                self.log.event("fail_fast", model=self.name, reason=self.fatal)
        return answer

    def _request_record(self, request: ChatRequest) -> dict[str, Any]:
        return {"messages": request.messages, "max_tokens": request.max_tokens,
                "settings": self.inner.cache_settings()}  # type: ignore[attr-defined]

    async def _ask(self, request: ChatRequest, stats: CallStats) -> ChatAnswer:
        last: TransientError | None = None
        for attempt in range(self.max_retries + 1):
            if self.fatal is not None:
                return ChatAnswer(None, "request_error", f"not requested: {self.fatal}", meta={"not_requested": True})
            try:
                if self.limiter is None:
                    answer = await self.inner.complete(request)
                else:
                    async with self.limiter:
                        # Requests that waited for a slot must not go out once the endpoint is known dead
                        # or the budget is spent.
                        if self.fatal is not None:
                            return ChatAnswer(None, "request_error", f"not requested: {self.fatal}",
                                              meta={"not_requested": True})
                        if self.budget is not None and self.budget.exhausted:
                            return ChatAnswer(None, "request_error", NOT_REQUESTED_BUDGET,
                                              meta={"not_requested": True})
                        answer = await self.inner.complete(request)
            except TransientError as exc:
                last = exc
                if self.limiter is not None and exc.kind == "rate_limit":
                    self.limiter.on_rate_limit(exc.retry_after)
                if attempt == self.max_retries:
                    break
                delay = exc.retry_after if exc.retry_after is not None else min(
                    self.backoff_max, self.backoff_base * 2**attempt) * (0.5 + random.random())
                stats.retries += 1
                self.log.event("retry", model=self.name, purpose=request.purpose,
                               instances=_instance_ids(request.batch), error_class=exc.kind,
                               error=str(exc), attempt=attempt + 1, wait_s=round(delay, 3))
                if self.on_retry is not None:
                    self.on_retry(request)
                await asyncio.sleep(delay)
                continue
            except FatalError as exc:
                if self.fatal is None:
                    self.fatal = f"{exc.kind}: {exc}"
                    self.log.event("fatal", model=self.name, error_class=exc.kind, error=str(exc))
                return ChatAnswer(None, "request_error", f"{exc.kind}: {exc}")
            if self.limiter is not None and answer.status == "ok":
                self.limiter.on_success()
            answer.meta["attempts"] = attempt + 1
            return answer
        assert last is not None
        return ChatAnswer(None, "request_error",
                          f"{last.kind}: {last} (gave up after {self.max_retries + 1} attempts)")

    async def aclose(self) -> None:
        closer = getattr(self.inner, "aclose", None)
        if closer is not None:
            await closer()
