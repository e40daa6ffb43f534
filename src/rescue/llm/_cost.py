"""Token usage and its cost, from a user-editable price table (US dollars per million tokens).

The packaged ``prices.toml`` holds a few list prices; ``--prices FILE`` (same format) is consulted first, so
a user can price any model or correct a stale figure. A model with no price has cost ``None`` (unknown,
not zero) and is named in the run's log.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from rescue.llm._types import Usage
from rescue.errors import PriceError as PriceError


@dataclass(frozen=True)
class Rates:
    """Dollars per million tokens: input, output, and cached input (None: cached input costs as other input)."""

    input: float
    output: float
    cached_input: float | None = None
    audio_minute: float | None = None  # speech-to-text: dollars per minute of audio

    def cost(self, usage: Usage) -> float:
        """The dollars ``usage`` costs at these rates (per million tokens; audio per minute)."""
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        tokens = ((usage.input_tokens - cached) * self.input + cached * cached_rate
                  + usage.output_tokens * self.output) / 1e6
        return tokens + (usage.audio_seconds / 60 * self.audio_minute if self.audio_minute else 0.0)

    def times(self, factor: float) -> Rates:
        """These rates multiplied by ``factor``."""
        return Rates(self.input * factor, self.output * factor,
                     None if self.cached_input is None else self.cached_input * factor,
                     None if self.audio_minute is None else self.audio_minute * factor)


WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class Period:
    """Time-of-day rates (DeepSeek's peak hours): these hours (UTC, ``(start, end)`` minutes of the day) on
    these weekdays (0 = Monday) are billed at ``rates`` instead of the entry's own."""

    hours: tuple[tuple[int, int], ...]
    weekdays: frozenset[int]
    rates: Rates

    def covers(self, at: datetime) -> bool:
        """Whether ``at`` (any time zone) falls in this period's weekdays and UTC hours."""
        at = at.astimezone(timezone.utc)
        minute = at.hour * 60 + at.minute
        return at.weekday() in self.weekdays and any(start <= minute < end for start, end in self.hours)


@dataclass(frozen=True)
class Price:
    """One entry of the price table: rates per million tokens, peak and batch rates, and where they come from."""

    input: float
    output: float
    cached_input: float | None = None  # None: cached input tokens cost the same as other input
    peak: Period | None = None  # time-of-day rates; the entry's own apply outside them
    batch: Rates | None = None  # batch API rates; None: half the online rates (the providers' usual discount)
    source: str = ""  # the page the figures come from
    checked: str = ""  # when they were read there
    audio_minute: float | None = None  # speech-to-text models: dollars per minute of audio

    @property
    def rates(self) -> Rates:
        """The entry's own (off-peak, online) rates."""
        return Rates(self.input, self.output, self.cached_input, self.audio_minute)

    def rates_at(self, at: datetime | None = None, *, batch: bool = False) -> Rates:
        """The rates that apply at ``at``: batch, peak when ``at`` is in the peak period, else the entry's own."""
        if batch:
            return self.batch if self.batch is not None else self.rates.times(BATCH_DISCOUNT)
        if self.peak is not None and at is not None and self.peak.covers(at):
            return self.peak.rates
        return self.rates

    def cost(self, usage: Usage, at: datetime | None = None, *, batch: bool = False) -> float:
        """The cost of ``usage`` answered at ``at`` (None: the entry's own rates) or through a batch API."""
        return self.rates_at(at, batch=batch).cost(usage)


# Batch APIs (OpenAI, DashScope, Gemini, Together, Groq) bill half the online price unless an entry says otherwise.
BATCH_DISCOUNT = 0.5


def _rates(entry: Any, where: str) -> Rates:
    if not isinstance(entry, dict):
        raise PriceError(f"{where}: expected a table with input and output prices")
    # A speech-to-text entry prices minutes of audio; its token prices may be left out (then 0).
    audio = entry.get("audio_minute")
    tokens = {"input": 0.0, "output": 0.0} if audio is not None else {}
    try:
        return Rates(float({**tokens, **entry}["input"]), float({**tokens, **entry}["output"]),
                     None if entry.get("cached_input") is None else float(entry["cached_input"]),
                     None if audio is None else float(audio))
    except KeyError as exc:
        raise PriceError(f"{where}: missing field {exc.args[0]}") from None
    except (TypeError, ValueError):
        raise PriceError(f"{where}: prices must be numbers") from None


def _clock(text: str, where: str) -> int:
    hours, sep, minutes = text.strip().partition(":")
    try:
        value = int(hours) * 60 + int(minutes or 0)
    except ValueError:
        value = -1
    if not sep or not 0 <= value <= 24 * 60:
        raise PriceError(f"{where}: {text!r} is not a time of day HH:MM")
    return value


def _period(entry: Any, where: str) -> Period:
    rates = _rates(entry, where)
    if not isinstance(entry, dict):
        raise PriceError(f"{where}: expected a table")
    hours = entry.get("hours_utc")
    if not isinstance(hours, list) or not hours or not all(isinstance(h, str) and "-" in h for h in hours):
        raise PriceError(f"{where}: hours_utc must list spans such as \"01:00-04:00\" (UTC)")
    spans = tuple((_clock(h.split("-")[0], where), _clock(h.split("-")[1], where)) for h in hours)
    days = entry.get("weekdays", list(WEEKDAYS))
    if not isinstance(days, list) or not all(isinstance(d, str) and d.lower() in WEEKDAYS for d in days):
        raise PriceError(f"{where}: weekdays must list days among {', '.join(WEEKDAYS)}")
    unknown = set(entry) - {"input", "output", "cached_input", "hours_utc", "weekdays"}
    if unknown:
        raise PriceError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    return Period(spans, frozenset(WEEKDAYS.index(d.lower()) for d in days), rates)


ENTRY_FIELDS = {"input", "output", "cached_input", "peak", "batch", "source", "checked", "audio_minute"}


def _read_table(text: str, origin: str) -> list[tuple[str, Price]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PriceError(f"{origin}: {exc}") from exc
    table: list[tuple[str, Price]] = []
    for pattern, entry in data.items():
        where = f"{origin}: [{pattern}]"
        rates = _rates(entry, where)
        unknown = set(entry) - ENTRY_FIELDS
        if unknown:
            raise PriceError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        peak = None if entry.get("peak") is None else _period(entry["peak"], f"{where}.peak")
        batch = None if entry.get("batch") is None else _rates(entry["batch"], f"{where}.batch")
        if isinstance(entry.get("batch"), dict) and set(entry["batch"]) - {"input", "output", "cached_input"}:
            raise PriceError(f"{where}.batch: unknown field(s) "
                             f"{', '.join(sorted(set(entry['batch']) - {'input', 'output', 'cached_input'}))}")
        for name in ("source", "checked"):
            if name in entry and not isinstance(entry[name], str):
                raise PriceError(f"{where}: {name} must be text")
        table.append((pattern, Price(rates.input, rates.output, rates.cached_input, peak, batch,
                                     str(entry.get("source", "")), str(entry.get("checked", "")), rates.audio_minute)))
    return table


class PriceTable:
    """Prices by model-name pattern (fnmatch), the user's file before the packaged one; the first match wins."""

    def __init__(self, entries: list[tuple[str, Price]]):
        self.entries = entries

    @classmethod
    def load(cls, user_file: str | Path | None = None) -> PriceTable:
        """The table of ``user_file`` (--prices) followed by the packaged prices.toml."""
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
        """The price of the first pattern ``model`` matches, None when none does."""
        for pattern, price in self.entries:
            if fnmatch.fnmatchcase(model, pattern):
                return price
        return None

    def cost(self, model: str, usage: Usage, at: datetime | None = None, *, batch: bool = False) -> float | None:
        """What ``usage`` of ``model`` costs, None when the model has no price."""
        price = self.price(model)
        return None if price is None else price.cost(usage, at, batch=batch)
