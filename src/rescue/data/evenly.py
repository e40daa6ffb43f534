"""The one way rescue keeps ``limit`` items of a longer list "evenly": ER/VP checkpoints, ITP's yes/no
balancing, and the frames a video request sends."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Literal, TypeVar

T = TypeVar("T")


def pick_evenly(items: Sequence[T], limit: int, *, single: Literal["first", "middle", "last"] = "first",
                key: Callable[[T], Hashable] | None = None) -> list[T]:
    """At most ``limit`` of ``items``, spread evenly from first to last, in order.

    The rule: ``limit`` <= 0, or no more items than ``limit``, keeps them all; otherwise positions
    ``round(i * (n - 1) / (limit - 1))`` for i = 0 .. limit - 1 (Python's round-half-to-even, as the authors
    wrote it), so both ends are kept. Only ``limit`` 1 leaves a choice, which the caller states with
    ``single``: the ``first`` item (the authors' checkpoints), the ``middle`` one (the authors' ITP balancing)
    or the ``last`` (video frames: the latest moment before the hidden row says the most).

    Those positions are distinct (the step exceeds 1). ``key`` keeps the authors' checkpoint code exactly:
    picks are ordered by the last position of their key in ``items`` (the same order whenever equal keys sit
    together, as one row's golds do), and a list short of ``limit`` would be topped up with items of new keys.
    """
    if limit <= 0 or len(items) <= limit:
        return list(items)
    if limit == 1:
        return [items[{"first": 0, "middle": len(items) // 2, "last": -1}[single]]]
    chosen = [items[p] for p in sorted({round(i * (len(items) - 1) / (limit - 1)) for i in range(limit)})]
    return chosen if key is None else _by_key(items, chosen, limit, key)


def _by_key(items: Sequence[T], chosen: list[T], limit: int, key: Callable[[T], Hashable]) -> list[T]:
    seen = {key(item) for item in chosen}
    for item in items:
        if len(chosen) >= limit:
            break
        if key(item) not in seen:
            chosen.append(item)
            seen.add(key(item))
    order = {key(item): n for n, item in enumerate(items)}
    return sorted(chosen, key=lambda item: order[key(item)])
