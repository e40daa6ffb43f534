"""Adaptive concurrency: as many requests in flight as the endpoint takes, at most ``--concurrency``.

The limit starts at the maximum (what the user allowed), halves on a 429 (at most once per cooling period, so
a burst of 429s from requests already in flight counts once), and grows again by one per success once the
endpoint has been healthy for that period. A Retry-After pauses every new request until it has passed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Self


class AdaptiveLimiter:
    """A concurrency limit that halves on a rate limit (and pauses for Retry-After) and grows back by one per
    success."""

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
        self._changed = asyncio.Condition()

    async def acquire(self) -> None:
        """Wait for a free slot under the current limit and any pause."""
        async with self._changed:
            while True:
                wait = self._paused_until - time.monotonic()
                if wait > 0:
                    try:
                        await asyncio.wait_for(self._changed.wait(), wait)
                    except TimeoutError:
                        pass
                    continue
                if self.in_flight < self.limit:
                    break
                await self._changed.wait()
            self.in_flight += 1

    async def release(self) -> None:
        """Give a slot back."""
        async with self._changed:
            self.in_flight -= 1
            self._changed.notify()

    async def __aenter__(self) -> Self:
        await self.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.release()

    def on_success(self) -> None:
        """An answer came: raise the limit by one, at most once per cooldown after a shrink."""
        if self.limit < self.maximum and time.monotonic() - self._last_shrink > self.cooldown:
            self.limit += 1
            self._notify()

    def on_rate_limit(self, retry_after: float | None) -> None:
        """A rate limit came: halve the limit (once per cooldown) and pause for ``retry_after`` seconds."""
        now = time.monotonic()
        if now - self._last_shrink > self.cooldown:
            self.limit = max(self.minimum, self.limit // 2)
            self._last_shrink = now
        if retry_after:
            self._paused_until = max(self._paused_until, now + retry_after)
            self._last_shrink = max(self._last_shrink, now + retry_after)

    def _notify(self) -> None:
        # Called from synchronous code on the loop thread: wake waiters without awaiting the lock.
        async def wake() -> None:
            async with self._changed:
                self._changed.notify_all()

        asyncio.get_running_loop().create_task(wake())
