"""The media steps, declared once and found by name; each takes one input and makes one output.

A step's output is written to a temporary name beside it and moved into place when complete, so a crash
leaves no half-written file and a rerun skips what exists (:func:`produce`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STEPS: dict[str, MediaStep] = {}


@dataclass(frozen=True)
class MediaStep:
    name: str
    run: Callable[..., Any]
    description: str


def media_step(name: str, description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        if name in STEPS:
            raise ValueError(f"media step {name!r} is declared twice")
        STEPS[name] = MediaStep(name, function, description)
        return function

    return register


def get_step(name: str) -> MediaStep:
    try:
        return STEPS[name]
    except KeyError:
        raise KeyError(f"no media step {name!r}; known: {', '.join(sorted(STEPS))}") from None


def partial_path(out: Path) -> Path:
    """Where ``out`` is written before it is complete (same folder, same suffix so muxers recognise it)."""
    return out.with_name(f".{out.stem}.partial{out.suffix}")


def produce(out: str | Path, make: Callable[[Path], object]) -> bool:
    """Make ``out`` through ``make(temporary_path)`` unless it exists; True when it was made now."""
    out = Path(out)
    if out.is_file():
        return False
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial_path(out)
    try:
        make(tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return True
