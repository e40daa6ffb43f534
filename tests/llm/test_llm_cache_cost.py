"""The SQLite answer cache and the price table."""

from __future__ import annotations

import sqlite3

import pytest

from rescue.llm._cache import ResponseCache, request_key
from rescue.llm._cost import Price, PriceError, PriceTable
from rescue.llm._types import ChatAnswer, Usage

MESSAGES = [{"role": "user", "content": "hello"}]


def test_cache_round_trip_survives_reopen(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    key = request_key("http://x/v1", {"model": "m", "temperature": 0}, MESSAGES)
    assert cache.get(key) is None
    answer = ChatAnswer('{"a": 1}', usage=Usage(10, 5, 2), meta={"finish_reason": "stop"})
    cache.put(key, model="m", endpoint="http://x/v1", purpose="predict", request={"messages": MESSAGES}, answer=answer)
    cache.close()
    again = ResponseCache(path)
    got = again.get(key)
    assert got is not None and got.text == '{"a": 1}'
    assert (got.usage.input_tokens, got.usage.output_tokens, got.usage.cached_input_tokens) == (10, 5, 2)
    assert got.meta["cached"] is True
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_errors_are_never_cached_but_recorded_apart(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    with pytest.raises(ValueError):
        cache.put("k", model="m", endpoint="e", purpose="predict", request={}, answer=ChatAnswer(None, "request_error", "x"))
    cache.put_failure("k", model="m", status="refused", error="content filter")
    assert cache.get("k") is None
    assert cache.get_failure("k") == ("refused", "content filter")
    cache.put("k", model="m", endpoint="e", purpose="predict", request={}, answer=ChatAnswer("{}"))
    assert cache.get_failure("k") is None  # a success clears the recorded failure


def test_key_depends_on_every_part():
    base = request_key("http://x/v1", {"model": "m", "temperature": 0}, MESSAGES)
    assert base == request_key("http://x/v1", {"temperature": 0, "model": "m"}, MESSAGES)  # canonical JSON
    assert base != request_key("http://y/v1", {"model": "m", "temperature": 0}, MESSAGES)
    assert base != request_key("http://x/v1", {"model": "m", "temperature": 0.5}, MESSAGES)
    assert base != request_key("http://x/v1", {"model": "m", "temperature": 0}, [{"role": "user", "content": "hi"}])


def test_price_with_cached_input_discount():
    price = Price(input=1.0, output=2.0, cached_input=0.5)
    # 1M input of which 400k cached, 500k output.
    assert price.cost(Usage(1_000_000, 500_000, 400_000)) == pytest.approx(0.6 + 0.2 + 1.0)


def test_user_table_is_consulted_first(tmp_path):
    user = tmp_path / "prices.toml"
    user.write_text('["openai/gpt-4o-mini"]\ninput = 1.0\noutput = 1.0\n\n["my-*"]\ninput = 3\noutput = 4\n')
    table = PriceTable.load(user)
    assert table.price("openai/gpt-4o-mini") == Price(1.0, 1.0)
    assert table.price("my-model") == Price(3.0, 4.0)
    assert table.price("baseline/majority") == Price(0.0, 0.0)  # packaged
    assert table.cost("unknown/model", Usage(10, 10)) is None  # unknown is None, not zero


def test_bad_price_table_names_file_and_entry(tmp_path):
    user = tmp_path / "prices.toml"
    user.write_text('["m"]\ninput = 1.0\n')
    with pytest.raises(PriceError, match=r"prices.toml: \[m\]: missing field output"):
        PriceTable.load(user)
