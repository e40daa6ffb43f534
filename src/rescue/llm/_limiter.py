"""Adaptive concurrency: as many requests in flight as the endpoint takes, at most ``--concurrency``.

The limit starts at the maximum (what the user allowed), halves on a 429 (at most once per cooling period, so
a burst of 429s from requests already in flight counts once), and grows again by one per success once the
endpoint has been healthy for that period. A Retry-After pauses every new request until it has passed.

A free slot goes to the waiting request of the highest priority (first come among equals). The runner gives
each request the number of requests left in its chain, so the longest chains never wait behind short ones and
no long chain is left running alone at the end of a run (:mod:`rescue.engine.reask`).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Self


class AdaptiveLimiter:
    """A concurrency limit that halves on a rate limit (and pauses for Retry-After) and grows back by one per
    success; free slots go to the highest priority first."""

    def __init__(self, maximum: int, *, minimum: int = 1, cooldown: float = 1.0):
        if maximum < 1:
            raise ValueError("--concurrency must be at least 1")
        self.maximum = maximum
        self.minimum = max(1, min(minimum, maximum))
        self.limit = maximum
        self.cooldown = cooldown
        self.in_flight = 0
        self._paused_until = 0.0
        self._last_shrink = float("-inf")
        # Waiting requests: (-priority, arrival, future), the future set once the slot is theirs.
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()
        self._wake: asyncio.TimerHandle | None = None

    async def acquire(self, priority: int = 0) -> None:
        """Wait for a free slot under the current limit and any pause; a higher ``priority`` is served first."""
        if not self._waiting and self.in_flight < self.limit and time.monotonic() >= self._paused_until:
            self.in_flight += 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (-priority, next(self._arrivals), granted))
        self._grant()
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self.release()  # the slot came with the cancellation: hand it on
            raise

    def release(self) -> None:
        """Give a slot back."""
        self.in_flight -= 1
        self._grant()

    @asynccontextmanager
    async def slot(self, priority: int = 0) -> AsyncIterator[None]:
        """A slot held for the block: ``async with limiter.slot(priority): ...``."""
        await self.acquire(priority)
        try:
            yield
        finally:
            self.release()

    async def __aenter__(self) -> Self:
        await self.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    def _grant(self) -> None:
        """Hand free slots to the waiting requests, highest priority first; during a pause, once it ends."""
        wait = self._paused_until - time.monotonic()
        if wait > 0:
            if self._waiting and self._wake is None:
                self._wake = asyncio.get_running_loop().call_later(wait, self._woken)
            return
        while self._waiting and self.in_flight < self.limit:
            _, _, granted = heapq.heappop(self._waiting)
            if granted.done():  # its request was cancelled while it waited
                continue
            self.in_flight += 1
            granted.set_result(None)

    def _woken(self) -> None:
        self._wake = None
        self._grant()

    def on_success(self) -> None:
        """An answer came: raise the limit by one, at most once per cooldown after a shrink."""
        if self.limit < self.maximum and time.monotonic() - self._last_shrink > self.cooldown:
            self.limit += 1
            self._grant()

    def on_rate_limit(self, retry_after: float | None) -> None:
        """A rate limit came: halve the limit (once per cooldown) and pause for ``retry_after`` seconds."""
        now = time.monotonic()
        if now - self._last_shrink > self.cooldown:
            self.limit = max(self.minimum, self.limit // 2)
            self._last_shrink = now
        if retry_after:
            self._paused_until = max(self._paused_until, now + retry_after)
            self._last_shrink = max(self._last_shrink, now + retry_after)
            if self._wake is not None:  # a longer pause: the timer set for the shorter one wakes too early
                self._wake.cancel()
                self._wake = None
                self._grant()
