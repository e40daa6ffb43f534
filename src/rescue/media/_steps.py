"""The media steps, declared once and found by name; each takes one input and makes one output.

A step's output is written to a temporary name of its own beside it (``.NAME.PID.tmp``: a writer killed
with its ffmpeg never shares it with the rerun's), checked, and only then moved into place, so a crash
leaves no half-written file and a rerun skips what exists (:func:`produce`). A dead writer's temporaries
are removed by the next one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rescue.atomic import atomic_output, remove_stale_temporaries

STEPS: dict[str, MediaStep] = {}


@dataclass(frozen=True)
class MediaStep:
    """A named media operation (cut, frames, audio ...) and what it does, for logs and messages."""

    name: str
    run: Callable[..., Any]
    description: str


def media_step(name: str, description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the media step ``name`` (each name once)."""
    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        if name in STEPS:
            raise ValueError(f"media step {name!r} is declared twice")
        STEPS[name] = MediaStep(name, function, description)
        return function

    return register


def get_step(name: str) -> MediaStep:
    """The media step called ``name``; KeyError naming the known ones otherwise."""
    try:
        return STEPS[name]
    except KeyError:
        raise KeyError(f"no media step {name!r}; known: {', '.join(sorted(STEPS))}") from None


def _legacy_partial(out: Path) -> Path:
    """The fixed temporary name earlier versions used: the output beside one may have had two writers."""
    return out.with_name(f".{out.stem}.partial{out.suffix}")


def produce(out: str | Path, make: Callable[[Path], object], verify: Callable[[Path], object] | None = None) -> bool:
    """Make ``out`` through ``make(temporary_path)`` unless it exists; True when it was made now.

    ``verify(temporary_path)`` raises when what was made is not what was asked; the output then never appears.
    """
    out = Path(out)
    legacy = _legacy_partial(out)
    if legacy.exists():  # left by a killed older rescue whose ffmpeg may have gone on writing `out` too
        legacy.unlink(missing_ok=True)
        out.unlink(missing_ok=True)
    if out.is_file():
        return False
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out.parent)
    with atomic_output(out) as tmp:
        make(tmp)
        if verify is not None:
            verify(tmp)
    return True
