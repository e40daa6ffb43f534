"""Prompt caches (issue #23 item 3): the send order (one task and one sample at a time, rows in order,
concurrency kept), the dry run's cacheable share, the measured cached-token share in results.json, and price
entries with cache rates, time-of-day (peak) rates, batch rates, source and date."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone

import pytest
from _cli import invoke_main
from _engine_support import oracle_answers, until_in_flight

from rescue.engine.dryrun import common_prefix, estimate_run
from rescue.engine.plan import send_chains
from rescue.engine.runner import RunConfig, run
from rescue.llm import PriceTable, Usage
from rescue.llm._cost import PriceError
from rescue.tasks import get_task
from rescue.testing.openai_server import Reply, request_key, serve


def _instances(task: str, samples: int):
    from rescue.data.loading import choose_samples, load_samples

    # The samples `--limit-samples N` takes (stratified by default), so the scripts know every request.
    return get_task(task).build(choose_samples(load_samples(None), samples, "stratified"))


def test_chains_hold_one_sample_each_in_row_order():
    instances = _instances("itp", 3)
    batches = [[i] for i in instances]
    chains = send_chains(batches, concurrency=2)
    assert len(chains) == 3
    for chain in chains:
        assert len({b[0].sample_id for b in chain}) == 1
        rows = [b[0].row_index for b in chain]
        assert rows == sorted(rows)
    assert sum(len(c) for c in chains) == len(batches)


def test_fewer_samples_than_concurrency_are_cut_into_segments_to_keep_concurrency():
    instances = _instances("itp", 1)
    batches = [[i] for i in instances]
    chains = send_chains(batches, concurrency=4)
    assert len(chains) >= min(4, len(batches)) - 1 and sum(len(c) for c in chains) == len(batches)
    flat = [b[0].row_index for c in chains for b in c]
    assert flat == sorted(flat)  # consecutive segments, in row order


def test_a_run_sends_each_chain_in_row_order_one_at_a_time_and_keeps_concurrency(tmp_path):
    instances = _instances("itp", 3)
    answers = oracle_answers("itp", instances)
    # The chains the run sends: a sample's, or consecutive segments of it where it is longer than its share.
    chains = send_chains([[i] for i in instances], 3)
    chain_of, row_of = {}, {}
    for n, chain in enumerate(chains):
        for batch in chain:
            from rescue.tasks.base import RenderOptions

            key = request_key({"messages": get_task("itp").render(batch, RenderOptions())})
            chain_of[key], row_of[key] = n, batch[0].row_index
    lock = threading.Lock()
    open_by_chain: dict[int, int] = {}
    overlap: list[int] = []
    order: list[tuple[int, int]] = []

    unknown: list[str] = []

    async def script(body):
        import asyncio

        if request_key(body) not in row_of:  # named in the assertion below, not a bare 500
            unknown.append(str(body.get("messages"))[:300])
            return Reply.error(400, "unknown request", type="invalid_request_error")
        chain, row = chain_of[request_key(body)], row_of[request_key(body)]
        with lock:
            order.append((chain, row))
            open_by_chain[chain] = open_by_chain.get(chain, 0) + 1
            if open_by_chain[chain] > 1:
                overlap.append(chain)
        await until_in_flight(server, 3)  # three at once, however slowly a loaded machine sends them
        await asyncio.sleep(0.02)
        with lock:
            open_by_chain[chain] -= 1
        return Reply.text(answers[request_key(body)])

    with serve(script) as server:
        outcome = run(RunConfig(out=str(tmp_path / "run"), models=["m"], tasks=["itp"], base_url=server.base_url,
                                limit_samples=3, quiet=True, bertscore=False, concurrency=3))
        peak = server.max_in_flight
    assert not unknown, unknown
    assert outcome.complete
    assert not overlap  # never two requests of one chain at once
    for n, chain in enumerate(chains):
        assert [r for c, r in order if c == n] == [b[0].row_index for b in chain]  # each chain in row order
        assert len({b[0].sample_id for b in chain}) == 1
    assert peak == 3  # concurrency kept


def test_common_prefix():
    assert common_prefix("abcdef", "abcxyz") == 3
    assert common_prefix("", "abc") == 0 and common_prefix("same", "same") == 4


def test_dry_run_estimates_the_cacheable_share_of_prompt_tokens(tmp_path):
    config = RunConfig(out=".", models=["openai/gpt-4o-mini"], tasks=["itp", "rpp"], limit_samples=2)
    estimate = estimate_run(config)
    for task in estimate.models[0].tasks:
        assert 0 < task.cacheable_tokens < task.text_tokens
        assert 0 < task.cacheable_share < 1
    assert "cacheable_tokens" in json.dumps(estimate.to_json())
    result = invoke_main(["run", "--dry-run", "--model", "openai/gpt-4o-mini", "--tasks", "itp",
                          "--limit-samples", "2"], env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 0 and "cacheable" in result.output and "%" in result.output


def test_results_report_the_measured_cached_token_share(tmp_path):
    instances = _instances("itp", 1)
    answers = oracle_answers("itp", instances)

    def script(body):
        reply = Reply.text(answers[request_key(body)])
        reply.usage = {"prompt_tokens": 1000, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 750}}
        return reply

    with serve(script) as server:
        outcome = run(RunConfig(out=str(tmp_path / "run"), models=["m"], tasks=["itp"], base_url=server.base_url,
                                limit_samples=1, quiet=True, bertscore=False))
    usage = outcome.results["models"]["m"]["usage"]["itp"]
    assert usage["cached_input_share"] == 0.75


# --- prices ---------------------------------------------------------------------------------------------------


def _table(tmp_path, text: str) -> PriceTable:
    path = tmp_path / "prices.toml"
    path.write_text(text, encoding="utf-8")
    return PriceTable.load(path)


PEAK = '''["x/model"]
source = "example.com/pricing"
checked = "2026-12-01"
input = 1.0
output = 2.0
cached_input = 0.1
peak = { hours_utc = ["01:00-04:00", "06:00-10:00"], weekdays = ["mon", "tue", "wed", "thu", "fri"], input = 2.0, output = 4.0, cached_input = 0.2 }
'''


def test_time_of_day_prices_bill_each_hour_at_its_rate(tmp_path):
    price = _table(tmp_path, PEAK).price("x/model")
    assert price is not None and price.source == "example.com/pricing" and price.checked == "2026-12-01"
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_input_tokens=500_000)
    monday_peak = datetime(2026, 11, 30, 2, 30, tzinfo=timezone.utc)
    monday_off = datetime(2026, 11, 30, 4, 0, tzinfo=timezone.utc)
    saturday = datetime(2026, 12, 5, 2, 30, tzinfo=timezone.utc)
    assert price.cost(usage, monday_peak) == pytest.approx(0.5 * 2.0 + 0.5 * 0.2 + 4.0)
    assert price.cost(usage, monday_off) == pytest.approx(0.5 * 1.0 + 0.5 * 0.1 + 2.0)
    assert price.cost(usage, saturday) == price.cost(usage, monday_off)
    assert price.cost(usage) == price.cost(usage, monday_off)  # no time: the entry's own rates


def test_batch_prices_are_half_unless_the_table_says_otherwise(tmp_path):
    table = _table(tmp_path, PEAK + '\n["y/model"]\ninput = 1.0\noutput = 2.0\nbatch = { input = 0.8, output = 1.0 }\n')
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert table.cost("x/model", usage, batch=True) == pytest.approx((1.0 + 2.0) / 2)
    assert table.cost("y/model", usage, batch=True) == pytest.approx(1.8)


@pytest.mark.parametrize(("text", "message"), [
    ('["m"]\ninput = 1\noutput = 1\npeak = { hours_utc = ["1-4"], input = 1, output = 1 }\n', "not a time of day"),
    ('["m"]\ninput = 1\noutput = 1\npeak = { hours_utc = "01:00-04:00", input = 1, output = 1 }\n', "hours_utc"),
    ('["m"]\ninput = 1\noutput = 1\npeak = { hours_utc = ["01:00-04:00"], weekdays = ["someday"], input = 1, output = 1 }\n',
     "weekdays"),
    ('["m"]\ninput = 1\noutput = 1\npeak = { hours_utc = ["01:00-04:00"], output = 1 }\n', "missing field input"),
    ('["m"]\ninput = 1\noutput = 1\nbatch = { input = 1, output = 1, fast = 2 }\n', "unknown field"),
    ('["m"]\ninput = 1\noutput = 1\nsource = 3\n', "source must be text"),
])
def test_a_bad_price_entry_names_the_file_entry_and_field(tmp_path, text, message):
    with pytest.raises(PriceError, match=message) as caught:
        _table(tmp_path, text)
    assert "prices.toml" in str(caught.value) and "[m]" in str(caught.value)


def test_the_packaged_table_prices_deepseek_v4_by_the_hour_with_its_source():
    table = PriceTable.load()
    for spec in ("deepseek/deepseek-flash", "deepseek/deepseek-v4-pro"):
        price = table.price(spec)
        assert price is not None and price.peak is not None
        assert price.source.startswith("api-docs.deepseek.com") and price.checked
        assert price.peak.rates.input == pytest.approx(2 * price.input)  # off-peak is half of peak


def test_a_run_bills_each_answer_at_the_rate_of_its_hour(tmp_path):
    instances = _instances("itp", 1)
    answers = oracle_answers("itp", instances)
    every_hour = '["m"]\ninput = 1.0\noutput = 1.0\npeak = { hours_utc = ["00:00-24:00"], input = 3.0, output = 3.0 }\n'
    prices = tmp_path / "prices.toml"
    prices.write_text(every_hour, encoding="utf-8")
    with serve(lambda body: Reply.text(answers[request_key(body)])) as server:
        outcome = run(RunConfig(out=str(tmp_path / "run"), models=["m"], tasks=["itp"], base_url=server.base_url,
                                limit_samples=1, quiet=True, bertscore=False, prices=str(prices)))
    usage = outcome.results["models"]["m"]["usage"]["itp"]
    expected = 3.0 * (usage["input_tokens"] + usage["output_tokens"]) / 1e6
    assert outcome.results["models"]["m"]["cost"]["tasks"]["itp"] == pytest.approx(expected, abs=1e-6)
