"""Batch APIs (issue #23 item 4): the same instances online and through the scripted batch endpoint, side by side.

Both runs are fresh ``rescue run`` processes (start-up included) against one scripted server (its own process,
answering every request with the gold answer after the latency; its batches end at the first status read),
with the same price table for the benchmark model. Printed per run: requests sent online and through batches,
cost from results.json (batch answers at the batch rate, half of online by default) and wall time.
Run: ``python benchmarks/bench_batch.py``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import _support as bench

# GPT-4o's list price (prices.toml), for a cost that is not trivially small.
PRICES = '["bench-model"]\ninput = 2.50\noutput = 10.00\n'


def main() -> None:
    parser = bench.run_arguments(__doc__.splitlines()[0], samples=0, tasks=",".join(bench.CLOSED_TASKS), batch_size="1")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--batch-poll", type=float, default=0.5)
    args = parser.parse_args()

    source = bench.default_source(args.data)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        data = bench.write_scaled(source, args.samples, work / "data.jsonl") if args.samples else source
        prices = work / "prices.toml"
        prices.write_text(PRICES, encoding="utf-8")
        rows: list[tuple[str, str]] = []
        costs: dict[str, float] = {}
        with bench.oracle_server(data, args.tasks.split(","), work / "server", latency=args.latency,
                           batch_size=args.batch_size) as server:
            for name, extra in (("online", []), ("batch", ["--batch", "--batch-poll", str(args.batch_poll)])):
                out = bench.fresh_dir(work / name)
                child = bench.run_child(
                    [*bench.rescue_command(), "run", "--model", "bench-model", "--base-url", server.base_url, "--data",
                     str(data), "--tasks", args.tasks, "--out", str(out), "--concurrency", str(args.concurrency),
                     "--batch-size", args.batch_size, "--no-bertscore", "--quiet", "--prices", str(prices), *extra],
                    env={"OPENAI_API_KEY": "benchmark"},
                )
                server.dump()
                stats = server.stats()
                results = json.loads((out / "results.json").read_text(encoding="utf-8"))
                model = results["models"]["bench-model"]
                costs[name] = float(results["cost"]["total"])
                failures = sum(s["all"]["failures"] for s in model.values() if isinstance(s, dict) and "all" in s)
                rows.append((f"{name} run", f"{stats['requests']} online + {stats['batch_requests']} in "
                             f"{stats['batches']} batch(es), cost ${costs[name]:.4f}"
                             + (f" (batch part ${model['cost']['batch']:.4f})" if model["cost"].get("batch") else "")
                             + f", {child.seconds:.2f} s wall, {failures} failures, complete "
                             f"{results['run']['complete']}"))
    rows.append(("batch / online cost", f"{costs['batch'] / costs['online']:.1%}"))
    bench.print_table(f"bench_batch: {args.latency * 1000:.0f} ms latency, {args.concurrency} in flight, {source.name}"
                f"{f' scaled to {args.samples}' if args.samples else ''}, tasks {args.tasks}", rows)


if __name__ == "__main__":
    main()
