"""A session: what every caller of models shares — one cache, one cost budget and price table, one log,
and per model its concurrency limiter, retries and failure budget.

The evaluation runner, the judge, ``rescue build``'s pre-annotation and video mode all call models through
one::

    from rescue.llm import ChatRequest, ImagePart, Message, ModelSession, TextPart, resolve_model

    async with ModelSession(cache="runs/x/cache.sqlite", concurrency=8, max_cost=2.0) as session:
        model = session.wrap(resolve_model("openai/gpt-4o-mini"))
        answer = await model.complete(ChatRequest(
            [Message("user", [TextPart("What is shown?"), ImagePart.from_file("frame.png")])], max_tokens=200))
        print(answer.text, session.spent)

``wrap`` returns a :class:`~rescue.llm.ReliableModel` (itself a :class:`~rescue.llm.Model`);
the session closes every model it wrapped, and the cache it opened, on ``aclose``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Self

from rescue.llm._cache import ResponseCache
from rescue.llm._cost import PriceTable
from rescue.llm._limiter import AdaptiveLimiter
from rescue.llm._limits import DEFAULT_RETRY_AFTER_CAP
from rescue.llm._reliable import (
    Budget,
    EventLog,
    NullLog,
    ReliableModel,
)
from rescue.llm._types import ChatRequest, Model, Usage, require_model


def stderr_notice(message: str) -> None:
    # While a rich progress display runs it redirects stderr, so the line appears above the bars.
    """Print a notice on stderr (above a running progress display), controls escaped: it may quote a model's
    name or an endpoint's error."""
    from rescue.data.text import visible_text

    print("\n".join(visible_text(line) for line in message.split("\n")), file=sys.stderr, flush=True)


class ModelSession:
    """What every caller of models shares for a run or build (see the module's docstring); an async context
    manager that closes the models it wrapped and the cache it opened."""

    def __init__(
        self,
        *,
        cache: ResponseCache | str | Path | None = None,
        concurrency: int = 16,
        max_retries: int = 5,
        retry_errors: bool = False,
        max_failures: int | None = 50,
        max_cost: float | None = None,
        prices: PriceTable | str | Path | None = None,
        budget: Budget | None = None,
        log: EventLog | None = None,
        notice: Callable[[str], None] | None = stderr_notice,
        retry_after_cap: float = DEFAULT_RETRY_AFTER_CAP,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        offline: bool = False,
    ):
        if concurrency < 1:
            raise ValueError("--concurrency must be at least 1")
        if retry_after_cap < 0:
            raise ValueError("--retry-after-cap must be 0 or more seconds")
        self._owns_cache = cache is not None and not isinstance(cache, ResponseCache)
        self.cache: ResponseCache | None = cache if cache is None or isinstance(cache, ResponseCache) else ResponseCache(cache)
        self.prices = prices if isinstance(prices, PriceTable) else PriceTable.load(prices)
        self.budget = budget or Budget(max_cost, self.prices)
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.retry_errors = retry_errors
        self.max_failures = max_failures
        self.log: EventLog = log or NullLog()
        self.notice = notice
        self.retry_after_cap = retry_after_cap
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.offline = offline
        self.models: list[ReliableModel] = []

    def wrap(self, model: Model, *, on_retry: Callable[[ChatRequest], None] | None = None,
             concurrency: int | None = None) -> ReliableModel:
        """``model`` with this session's cache, budget and log, its own limiter (at most ``concurrency``,
        the session's by default, and never more than the model's ``max_concurrency``) and failure budget."""
        limit = concurrency or self.concurrency
        own = require_model(model).max_concurrency
        if own:
            limit = min(limit, int(own))
        wrapped = ReliableModel(
            model, cache=self.cache, limiter=AdaptiveLimiter(limit), max_retries=self.max_retries,
            retry_errors=self.retry_errors and not self.offline, max_failures=self.max_failures,
            budget=self.budget, log=self.log, on_retry=on_retry, notice=self.notice,
            backoff_base=self.backoff_base, backoff_max=self.backoff_max, retry_after_cap=self.retry_after_cap,
            offline=self.offline,
        )
        self.models.append(wrapped)
        return wrapped

    @property
    def spent(self) -> float:
        """Dollars spent by this session's requests (cached answers cost nothing)."""
        return self.budget.spent

    def cost(self, model: str, usage: Usage) -> float | None:
        """What ``usage`` of ``model`` costs by the session's price table, None without a price."""
        return self.prices.cost(model, usage)

    async def aclose(self) -> None:
        """Close every model the session wrapped, and the cache it opened."""
        for model in self.models:
            await model.aclose()
        self.models.clear()
        if self._owns_cache and self.cache is not None:
            self.cache.close()
            self.cache = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
