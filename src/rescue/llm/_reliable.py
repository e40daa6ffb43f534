"""The layer every model is called through: cache, resume, retries, adaptive concurrency, failure and cost budgets.

:class:`ReliableModel` itself implements :class:`~rescue.llm.Model`, so the evaluation runner, the judge
and pre-annotation use one wrapper (usually made by :meth:`rescue.llm.ModelSession.wrap`). Per request it:

1. answers from the cache when the same request (endpoint, model, messages, settings) was answered before;
2. returns a refusal recorded by an earlier run without asking again, unless ``retry_errors`` (a refusal is an
   answer); a request error recorded earlier is not an answer, so the request is always sent again; a request
   identical to one in flight waits for that one's answer instead of being sent beside it;
3. otherwise asks, inside the model's :class:`AdaptiveLimiter`, retrying transient failures (429, 5xx,
   timeouts, empty answers) with exponential backoff and jitter, never shorter than the endpoint's
   Retry-After and never longer than ``retry_after_cap``; every retry is logged with model, request ids and
   error class;
4. masks every configured key in the answer and error text (:func:`rescue.llm.scrub`), then stores
   the answer (or the final failure) before returning it, so a killed run loses only requests in flight.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NotRequired, Protocol, TypedDict, TypeVar

from rescue.data.shapes import JsonObject  # open here: a model's cache settings, whose keys the model chooses
from rescue.data.text import without_lone_surrogates
from rescue.llm import _secrets as secrets
from rescue.llm._cache import RequestRecord, ResponseCache, UnreadableEntry, request_key
from rescue.llm._client import FatalError, TransientError
from rescue.llm._cost import PriceTable
from rescue.llm._limiter import AdaptiveLimiter
from rescue.llm._limits import DEFAULT_RETRY_AFTER_CAP
from rescue.llm._types import (
    ChatAnswer,
    ChatRequest,
    Model,
    Usage,
    UsageCount,
    key_messages,
    require_model,
)

NOT_CACHED = "not in the cache (rescore asks no model)"
NOT_REQUESTED_BUDGET = "not requested: --max-cost reached (rerun to continue)"
# A Retry-After above the cap this many times for one request: the request fails instead of waiting again.
CAPPED_WAITS_BEFORE_GIVING_UP = 2


class EventLog(Protocol):
    """Where the layer writes retries, failures and notices: ``event(name, **fields)`` (``run.log`` is one)."""

    def event(self, event: str, **fields: Any) -> None:
        """Record one event with its fields."""


class NullLog:
    """An event log that records nothing."""

    def event(self, event: str, **fields: Any) -> None:
        """Record nothing."""
        return None


class CallCounts(TypedDict):
    """One model's requests for one purpose and task, as results.json records them (``models[m].usage[task]``)."""

    requests: int
    cache_hits: int
    retries: int
    failures: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    image_tokens: int
    video_tokens: int
    usage_unknown: int
    reasoning_tokens: int
    budget_exhausted: int
    cached_input_share: float | None
    # Only when some answers came through a batch API (--batch): runs without it read as before.
    batch_answers: NotRequired[int]
    batch_input_tokens: NotRequired[int]
    batch_output_tokens: NotRequired[int]


@dataclass
class CallStats(UsageCount):
    """What one model did for one (purpose, tag): requests made, answers reused, tokens (``usage``: every answer
    used, cached ones included; ``batch_usage``: those of the batch API), retries."""

    requests: int = 0  # new requests that got an answer or a final failure (not counting retries)
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0  # final failures: request_error, refused or budget_exhausted
    budget_exhausted: int = 0  # of the failures: answers whose budget ran out before any answer (thinking)
    answered: int = 0  # of the requests: those answered (each kept in the cache, when there is one)
    # Their cost, each answer at the rates of the hour it was answered (time-of-day prices) or of the batch API
    # it came through; None: no price.
    cost: float | None = 0.0

    def count(self, usage: Usage, prices: PriceTable | None, model: str, answered_at: object = None,
              batch: bool = False) -> None:
        """Add one answer's usage (and batch usage), and its cost when the model has a price."""
        self.add(usage, batch=batch)
        if prices is None or self.cost is None:
            self.cost = None
            return
        stamp = answered_at if isinstance(answered_at, (int, float)) else time.time()
        spent = prices.cost(model, usage, datetime.fromtimestamp(stamp, timezone.utc), batch=batch)
        self.cost = None if spent is None else self.cost + spent

    def as_dict(self) -> CallCounts:
        """The counts as JSON (requests, cache hits, retries, failures, tokens, cost)."""
        counts: CallCounts = {
            "requests": self.requests,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "failures": self.failures,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "cached_input_tokens": self.usage.cached_input_tokens,
            # Parts of input_tokens, where the provider reports them (video mode's frames and clips).
            "image_tokens": self.usage.image_tokens,
            "video_tokens": self.usage.video_tokens,
            # Answers kept whose usage block could not be read: their tokens (and cost) are not counted.
            "usage_unknown": self.usage.unknown,
            # Part of output_tokens: spent thinking, priced as output.
            "reasoning_tokens": self.usage.reasoning_tokens,
            "budget_exhausted": self.budget_exhausted,
            # Of the prompt tokens, the share the provider served from its prompt cache (answers' usage).
            "cached_input_share": None if not self.usage.input_tokens else
            round(self.usage.cached_input_tokens / self.usage.input_tokens, 4),
        }
        if self.batch_answers:
            counts["batch_answers"] = self.batch_answers
            counts["batch_input_tokens"] = self.batch_usage.input_tokens
            counts["batch_output_tokens"] = self.batch_usage.output_tokens
        return counts


_T = TypeVar("_T")


class Budget:
    """What the models of one process may still spend: ``--max-cost`` dollars across all of them (None: no
    limit), and nothing at all once the run is stopping (:meth:`stop`: Ctrl-C or SIGTERM)."""

    def __init__(self, max_cost: float | None, prices: PriceTable):
        self.max_cost = max_cost
        self.prices = prices
        self.spent = 0.0
        self.stopped: str | None = None  # why no request is sent any more (a signal), once it is so
        self._stopping: asyncio.Future[None] | None = None

    def stop(self, reason: str) -> None:
        """From now on no request is sent, and those in flight are dropped (:meth:`unless_stopped`)."""
        self.stopped = self.stopped or reason
        if self._stopping is not None and not self._stopping.done():
            self._stopping.set_result(None)

    async def unless_stopped(self, work: Awaitable[_T]) -> tuple[_T | None, bool]:
        """``work``'s result and True; or None and False once the run stops first (``work`` is then cancelled).
        An answer that arrives together with the stop is kept: what was received is never lost."""
        loop = asyncio.get_running_loop()
        if self._stopping is None or self._stopping.get_loop() is not loop:  # one budget may outlive a loop
            self._stopping = loop.create_future()
            if self.stopped is not None:
                self._stopping.set_result(None)
        task = asyncio.ensure_future(work)
        try:
            await asyncio.wait((task, self._stopping), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():
                task.cancel()
        if task.done() and not task.cancelled():
            return task.result(), True
        await asyncio.gather(task, return_exceptions=True)  # its cancellation has run (a client closed)
        return None, False

    def charge(self, model: str, usage: Usage, *, batch: bool = False) -> None:
        """Add what ``usage`` of ``model`` cost now to the money spent."""
        cost = self.prices.cost(model, usage, datetime.now(timezone.utc), batch=batch)
        if cost is not None:
            self.spent += cost

    @property
    def exhausted(self) -> bool:
        """Whether the spending cap (--max-cost) is reached."""
        return self.max_cost is not None and self.spent >= self.max_cost


def _not_requested(reason: str) -> ChatAnswer:
    return ChatAnswer(None, "request_error", f"not requested: {reason}", meta={"not_requested": True})


def _scrubbed(answer: ChatAnswer) -> ChatAnswer:
    # A lone surrogate (a JSON escape like \ud800) cannot be stored or written as UTF-8; replaced here, it never
    # reaches the cache, predictions.jsonl or a draft as something that breaks every later run.
    if answer.text:
        answer.text = secrets.scrub(without_lone_surrogates(answer.text))
    if answer.error:
        answer.error = secrets.scrub(without_lone_surrogates(answer.error))
    if isinstance(answer.meta.get("reasoning"), str):
        answer.meta["reasoning"] = secrets.scrub(without_lone_surrogates(answer.meta["reasoning"]))
    return answer


class ReliableModel:
    """A model with the response cache, the concurrency limiter, retries and the failure and cost budgets around it."""

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
        log: EventLog | None = None,
        on_retry: Callable[[ChatRequest], None] | None = None,
        notice: Callable[[str], None] | None = None,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        retry_after_cap: float = DEFAULT_RETRY_AFTER_CAP,
        offline: bool = False,
    ):
        self.inner = require_model(inner)
        self.name = inner.name
        self.cache = cache
        self.limiter = limiter
        self.max_retries = max_retries
        self.retry_errors = retry_errors
        self.max_failures = max_failures
        self.budget = budget
        self.log: EventLog = log or NullLog()
        self.on_retry = on_retry
        self.notice = notice
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retry_after_cap = retry_after_cap
        self.offline = offline  # answer from the cache only (rescore): a miss is a failure, nothing is sent
        self.fatal: str | None = None  # set once the endpoint cannot answer at all; later requests are not sent
        self.stats: dict[tuple[str, str], CallStats] = {}
        self._total_failures = 0
        self._capped_noticed = False
        self._usage_noticed = False
        self._claim_noticed = False
        self._in_flight: dict[str, asyncio.Event] = {}  # cache key -> set when that request's answer is in

    @property
    def _prices(self) -> PriceTable | None:
        return None if self.budget is None else self.budget.prices

    # The Model protocol, passed through: a wrapped model is still the same model.
    @property
    def cache_identity(self) -> str | None:
        """The inner model's cache identity."""
        return self.inner.cache_identity

    @property
    def max_concurrency(self) -> int | None:
        """The inner model's own concurrency cap, if any."""
        return self.inner.max_concurrency

    def cache_settings(self) -> JsonObject:
        """The inner model's cache settings."""
        return dict(self.inner.cache_settings())

    def stats_for(self, purpose: str, tag: str) -> CallStats:
        """The call statistics of one (purpose, tag), made on first use."""
        key = (purpose, tag)
        if key not in self.stats:
            self.stats[key] = CallStats()
        return self.stats[key]

    def _settings(self, request: ChatRequest) -> JsonObject:
        # A first asking (repeat 0) keys as it always did: caches from before --judge-repeats stay valid.
        repeat = {"repeat": request.repeat} if request.repeat else {}
        return {**self.cache_settings(), **request.overrides(), "request_max_tokens": request.max_tokens, **repeat}

    def key(self, request: ChatRequest) -> str | None:
        """The request's cache key, or None when this model is not cached."""
        identity = self.cache_identity
        if self.cache is None or identity is None:
            return None
        return request_key(identity, self._settings(request), request.messages)

    def forget(self, request: ChatRequest) -> None:
        """Remove the stored answer to ``request``: one its caller refused after the model layer took it (a
        transcript with no speech), so that the next run asks again instead of reading it back."""
        key = self.key(request)
        if key is not None:
            assert self.cache is not None
            self.cache.forget(key)

    async def complete(self, request: ChatRequest) -> ChatAnswer:
        """The answer to ``request``: from the cache, a failure recorded earlier, or the model (with retries);
        a request the run may no longer send (offline, a dead endpoint, a spent budget) is not sent.

        A request identical to one in flight (the same cache key) waits for it and then reads its answer from
        the cache, as it would had it come later: each distinct request is sent once. Samples that open with
        the same row render the same first prompt, and every chain starts at once."""
        key = self.key(request)
        if key is None or request.fresh:
            return await self._complete(request, key)
        while (pending := self._in_flight.get(key)) is not None:
            await pending.wait()
        done = self._in_flight[key] = asyncio.Event()
        try:
            return await self._complete(request, key)
        finally:
            del self._in_flight[key]
            done.set()

    async def _complete(self, request: ChatRequest, key: str | None) -> ChatAnswer:
        stats = self.stats_for(request.purpose, request.tag)
        if key is not None and not request.fresh:
            stored = self._stored(request, key, stats)
            if stored is not None:
                return stored
        withheld = self._withheld(key)
        if withheld is not None:
            stats.failures += 1
            return withheld
        if key is None or request.fresh:
            return await self._answer(request, key, stats)
        assert self.cache is not None
        elsewhere = await self._claimed(request, key, stats)
        if elsewhere is not None:
            return elsewhere
        try:
            answer = await self._answer(request, key, stats)
        except BaseException:
            self.cache.release(key)
            raise
        if answer.meta.get("not_requested"):  # stored answers and failures released the claim in their commit
            self.cache.release(key)
        return answer

    async def _claimed(self, request: ChatRequest, key: str, stats: CallStats) -> ChatAnswer | None:
        """None once this process holds ``key``'s claim in the shared cache; while another live process holds
        it (a run sharing the cache asks the same request now), wait, then take what it got: its answer, its
        failure, or the claim when it stopped without either."""
        assert self.cache is not None
        since, pause, said = time.time(), 0.05, False
        while (holder := self.cache.claim(key)) is not None:
            if not said:
                said = True
                self.log.event("claim_wait", model=self.name, purpose=request.purpose, instances=list(request.ids),
                               pid=holder.pid, host=holder.host)
                if not self._claim_noticed:
                    self._claim_noticed = True
                    self._say(f"{self.name}: process {holder.pid} sharing the cache {self.cache.path} is asking "
                              "requests of this run now; waiting for its answers instead of sending them again")
            if self.budget is None:
                await asyncio.sleep(pause)
            else:
                await self.budget.unless_stopped(asyncio.sleep(pause))
            pause = min(1.0, pause * 2)
            stored = self._stored(request, key, stats)
            if stored is not None:
                return stored
            failure = self.cache.failed_since(key, since)
            if failure is not None:  # a request error the other process gave up on: this run's answer too
                stats.failures += 1
                return ChatAnswer(None, failure[0], f"{failure[1]} [asked by process {holder.pid} sharing the cache]",  # type: ignore[arg-type]
                                  meta={"recorded": True})
            withheld = self._not_sent()
            if withheld is not None:
                stats.failures += 1
                return withheld
        return None

    async def _answer(self, request: ChatRequest, key: str | None, stats: CallStats) -> ChatAnswer:
        """The model's answer to ``request``, asked now (with retries), counted, charged and stored."""
        answer = _scrubbed(await self._ask(request, stats))
        if not answer.meta.get("not_requested"):
            stats.requests += 1
        if answer.meta.get("usage_unknown"):
            self._usage_unknown(request, answer)
        if answer.status == "ok":
            stats.answered += 1
            self._charge(stats, answer)
            if key is not None:
                assert self.cache is not None
                self.cache.put(key, model=self.name, endpoint=str(self.cache_identity), purpose=request.purpose,
                               request=self._request_record(request), answer=answer)
            return answer
        stats.failures += 1
        if answer.meta.get("not_requested"):
            return answer
        return self._failed(request, key, answer, stats)

    def _stored(self, request: ChatRequest, key: str, stats: CallStats) -> ChatAnswer | None:
        """The cached answer, or the failure recorded earlier (other than a request error, which is asked
        again; with --retry-errors every one is); None: ask the model."""
        assert self.cache is not None
        try:
            cached = self.cache.get(key)
        except UnreadableEntry as exc:
            cached = None
            self.log.event("cache_unreadable", model=self.name, purpose=request.purpose,
                           instances=list(request.ids), error=str(exc), then="asked again")
        if cached is not None:
            stats.cache_hits += 1
            stats.count(cached.usage, self._prices, self.name, cached.meta.get("answered_at"),
                        batch=bool(cached.meta.get("batch")))
            return cached
        recorded = None if self.retry_errors else self.cache.get_failure(key)
        if recorded is None or recorded[0] == "request_error":
            return None
        stats.failures += 1
        status, error = recorded
        if status == "budget_exhausted":
            stats.budget_exhausted += 1
        return ChatAnswer(None, status, f"{error} [recorded earlier; --retry-errors asks again]",  # type: ignore[arg-type]
                          meta={"recorded": True})

    def _withheld(self, key: str | None) -> ChatAnswer | None:
        """Why a request that is not in the cache is not sent: offline, a dead endpoint, a spent budget, a run
        that is stopping."""
        if self.offline and key is not None:
            return ChatAnswer(None, "request_error", NOT_CACHED, meta={"not_requested": True})
        return self._not_sent()

    def _not_sent(self) -> ChatAnswer | None:
        """Why a request is not sent now (a dead endpoint, a spent budget, a run that is stopping), or None."""
        if self.fatal is not None:
            return _not_requested(self.fatal)
        if self.budget is not None and self.budget.stopped is not None:
            return _not_requested(self.budget.stopped)
        if self.budget is not None and self.budget.exhausted:
            return ChatAnswer(None, "request_error", NOT_REQUESTED_BUDGET, meta={"not_requested": True})
        return None

    def _usage_unknown(self, request: ChatRequest, answer: ChatAnswer) -> None:
        self.log.event("usage_unknown", model=self.name, purpose=request.purpose, instances=list(request.ids),
                       error=answer.meta["usage_unknown"])
        if not self._usage_noticed:
            self._usage_noticed = True
            self._say(f"{self.name}: an answer's usage block could not be read ({answer.meta['usage_unknown']}); "
                      "the answer is kept, its tokens are counted as unknown and the cost is incomplete")

    def _charge(self, stats: CallStats, answer: ChatAnswer) -> None:
        stats.count(answer.usage, self._prices, self.name)
        if self.budget is not None:
            self.budget.charge(self.name, answer.usage)

    def _failed(self, request: ChatRequest, key: str | None, answer: ChatAnswer, stats: CallStats) -> ChatAnswer:
        """A final failure the model gave: counted, charged, recorded in the cache and the log; past
        --max-failures request errors, the model's remaining requests are not sent."""
        if answer.status == "budget_exhausted":
            stats.budget_exhausted += 1
        self._charge(stats, answer)
        if key is not None:
            assert self.cache is not None
            self.cache.put_failure(key, model=self.name, status=answer.status, error=answer.error)
        self.log.event("failure", model=self.name, purpose=request.purpose, status=answer.status,
                       error_class=answer.meta.get("error_class") or answer.error.split(":", 1)[0],
                       instances=list(request.ids), error=answer.error)
        if answer.status == "request_error":
            self._total_failures += 1
            if self.max_failures is not None and self._total_failures > self.max_failures and self.fatal is None:
                self.fatal = f"more than {self.max_failures} failed requests (--max-failures)"
                self.log.event("fail_fast", model=self.name, reason=self.fatal)
        return answer

    def _request_record(self, request: ChatRequest) -> RequestRecord:
        return {"messages": key_messages(request.messages), "max_tokens": request.max_tokens,
                "settings": {**self.cache_settings(), **request.overrides()}}

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry ``attempt`` (0-based): exponential backoff with jitter, never shorter
        than the endpoint's Retry-After (capped at ``retry_after_cap``). A Retry-After of 0 still backs off."""
        delay: float = min(self.backoff_max, self.backoff_base * 2**attempt) * (0.5 + random.random())
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.retry_after_cap))
        return delay

    def _say(self, message: str) -> None:
        self.log.event("notice", model=self.name, message=message)
        if self.notice is not None:
            self.notice(message)

    async def _call(self, request: ChatRequest) -> ChatAnswer:
        """The inner model's answer; dropped (not requested) when the run stops while it is asked."""
        if self.budget is None:
            return await self._call_inner(request)
        answer, answered = await self.budget.unless_stopped(self._call_inner(request))
        if not answered or answer is None:
            return _not_requested(str(self.budget.stopped))
        return answer

    async def _call_inner(self, request: ChatRequest) -> ChatAnswer:
        try:
            answer = await self.inner.complete(request)
        except (TransientError, FatalError):
            raise
        except Exception as exc:  # noqa: BLE001 - a model of your own that raises fails its request, not the run
            return ChatAnswer(None, "request_error", f"model_error: {type(exc).__name__}: {exc}",
                              meta={"error_class": "model_error"})
        if not isinstance(answer, ChatAnswer):
            return ChatAnswer(None, "request_error", f"model_error: complete() returned a {type(answer).__name__}, "
                              "not a ChatAnswer", meta={"error_class": "model_error"})
        if answer.status == "ok" and not (answer.text or "").strip():
            # Any model's empty answer is a fault of the model, not an answer to parse: ask again.
            raise TransientError("empty_answer", "the answer has no content")
        return answer

    async def _ask(self, request: ChatRequest, stats: CallStats) -> ChatAnswer:
        """The model's answer, asked again on transient faults with backoff (at most ``max_retries`` times); a
        fatal fault stops the model's remaining requests."""
        last: TransientError | None = None
        capped = [0]  # answers whose Retry-After was over the cap, for this request
        for attempt in range(self.max_retries + 1):
            try:
                answer, sent = await self._once(request)
            except TransientError as exc:
                last = exc
                wait, given_up = self._wait_for(exc, capped)
                if given_up is not None:
                    return given_up
                if attempt == self.max_retries:
                    break
                await self._retry(request, stats, exc, attempt, wait)
                continue
            except FatalError as exc:
                return self._fatal(exc)
            if not sent:
                return answer
            if self.limiter is not None and answer.status == "ok":
                self.limiter.on_success()
            answer.meta["attempts"] = attempt + 1
            return answer
        assert last is not None
        return ChatAnswer(None, "request_error",
                          f"{last.kind}: {last} (gave up after {self.max_retries + 1} attempts)",
                          meta={"error_class": last.kind})

    async def _once(self, request: ChatRequest) -> tuple[ChatAnswer, bool]:
        """One attempt, through the limiter when there is one, and whether it was sent: not once the endpoint
        is known dead or the budget is spent."""
        withheld = self._not_sent()
        if withheld is not None:
            return withheld, False
        if self.limiter is None:
            return await self._sent(request)
        async with self.limiter.slot(request.priority):
            # Requests that waited for a slot must not go out once the endpoint is known dead, the budget is
            # spent or the run is stopping.
            withheld = self._not_sent()
            if withheld is not None:
                return withheld, False
            return await self._sent(request)

    async def _sent(self, request: ChatRequest) -> tuple[ChatAnswer, bool]:
        answer = await self._call(request)
        return answer, not answer.meta.get("not_requested")

    def _wait_for(self, exc: TransientError, capped: list[int]) -> tuple[float | None, ChatAnswer | None]:
        """The endpoint's Retry-After, capped at ``retry_after_cap``; past CAPPED_WAITS_BEFORE_GIVING_UP capped
        waits, the failure that gives up on the request."""
        wait = exc.retry_after
        if wait is not None and wait > self.retry_after_cap:
            capped[0] += 1
            message = (f"{self.name}: the endpoint asked to wait {wait:g} s (Retry-After); waiting at most "
                       f"{self.retry_after_cap:g} s (--retry-after-cap)")
            if capped[0] >= CAPPED_WAITS_BEFORE_GIVING_UP:
                self._say(message + f"; gave up on this request after {capped[0]} such answers")
                return wait, ChatAnswer(None, "request_error",
                                        secrets.scrub(f"{exc.kind}: Retry-After {wait:g} s is over the cap of "
                                                      f"{self.retry_after_cap:g} s, {capped[0]} times: {exc}"),
                                        meta={"error_class": "retry_after_cap"})
            if not self._capped_noticed:
                self._capped_noticed = True
                self._say(message)
            wait = self.retry_after_cap
        if self.limiter is not None and exc.kind == "rate_limit":
            self.limiter.on_rate_limit(wait)
        return wait, None

    async def _retry(self, request: ChatRequest, stats: CallStats, exc: TransientError, attempt: int,
                     wait: float | None) -> None:
        delay = self.backoff(attempt, wait)
        stats.retries += 1
        self.log.event("retry", model=self.name, purpose=request.purpose, instances=list(request.ids),
                       error_class=exc.kind, error=secrets.scrub(str(exc)), attempt=attempt + 1,
                       wait_s=round(delay, 3))
        if self.on_retry is not None:
            self.on_retry(request)
        if self.budget is None:
            await asyncio.sleep(delay)
        else:  # a run that stops does not wait out a backoff: the next attempt is then not sent
            await self.budget.unless_stopped(asyncio.sleep(delay))

    def _fatal(self, exc: FatalError) -> ChatAnswer:
        reason = secrets.scrub(f"{exc.kind}: {exc}")
        if self.fatal is None:
            self.fatal = reason
            self.log.event("fatal", model=self.name, error_class=exc.kind, error=reason)
        return ChatAnswer(None, "request_error", reason, meta={"error_class": exc.kind})

    async def aclose(self) -> None:
        """Close the inner model."""
        await self.inner.aclose()
