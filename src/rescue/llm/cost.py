"""Token usage and its cost, from a user-editable price table (US dollars per million tokens).

The packaged ``prices.toml`` holds a few list prices; ``--prices FILE`` (same format) is consulted first, so
a user can price any model or correct a stale figure. A model with no price has cost ``None`` (unknown,
not zero) and is named in the run's log.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rescue.data.errors import RescueError
from rescue.llm.types import Usage


class PriceError(RescueError):
    """A price table that cannot be read; the message names the file and the entry."""


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cached_input: float | None = None  # None: cached input tokens cost the same as other input

    def cost(self, usage: Usage) -> float:
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return ((usage.input_tokens - cached) * self.input + cached * cached_rate + usage.output_tokens * self.output) / 1e6


def _read_table(text: str, origin: str) -> list[tuple[str, Price]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PriceError(f"{origin}: {exc}") from exc
    table: list[tuple[str, Price]] = []
    for pattern, entry in data.items():
        if not isinstance(entry, dict):
            raise PriceError(f"{origin}: [{pattern}]: expected a table with input and output prices")
        try:
            price = Price(
                float(entry["input"]),
                float(entry["output"]),
                None if entry.get("cached_input") is None else float(entry["cached_input"]),
            )
        except KeyError as exc:
            raise PriceError(f"{origin}: [{pattern}]: missing field {exc.args[0]}") from None
        except (TypeError, ValueError):
            raise PriceError(f"{origin}: [{pattern}]: prices must be numbers") from None
        unknown = set(entry) - {"input", "output", "cached_input"}
        if unknown:
            raise PriceError(f"{origin}: [{pattern}]: unknown field(s) {', '.join(sorted(unknown))}")
        table.append((pattern, price))
    return table


class PriceTable:
    def __init__(self, entries: list[tuple[str, Price]]):
        self.entries = entries

    @classmethod
    def load(cls, user_file: str | Path | None = None) -> PriceTable:
        entries: list[tuple[str, Price]] = []
        if user_file is not None:
            path = Path(user_file)
            if not path.is_file():
                raise PriceError(f"--prices {path}: no such file")
            entries += _read_table(path.read_text(encoding="utf-8"), str(path))
        packaged = resources.files("rescue.llm").joinpath("prices.toml").read_text(encoding="utf-8")
        entries += _read_table(packaged, "<packaged prices.toml>")
        return cls(entries)

    def price(self, model: str) -> Price | None:
        for pattern, price in self.entries:
            if fnmatch.fnmatchcase(model, pattern):
                return price
        return None

    def cost(self, model: str, usage: Usage) -> float | None:
        price = self.price(model)
        return None if price is None else price.cost(usage)


def add_usage(total: Usage, more: Usage) -> None:
    total.add(more)
