"""(a) Throughput of ``rescue run`` against a server with 200 ms latency, 32 requests in flight.

Measured side by side in one run, each as a fresh process (start-up included), against the same scripted
server (its own process, answering every request with the gold answer after the latency):

1. ``rescue run`` with ``--concurrency 32``;
2. the leanest possible async client — raw httpx and a semaphore of 32, nothing parsed — sending exactly
   the requests rescue sent (replayed from the server's log);
3. a sequential client sending the same requests one by one with ``requests.post``, as the authors'
   scripts do (on the first ``--sequential-requests`` of them: its rate does not change with more).

4. ``rescue run --stream`` (server-sent events, the answer assembled from the deltas) into a fresh directory.

Targets: rescue reaches >= 85% of the lean client's throughput, and streaming >= 90% of non-streaming rescue.
Run: ``python benchmarks/bench_throughput.py``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from _support import (
    CLOSED_TASKS,
    ChildRun,
    default_source,
    fresh_dir,
    oracle_server,
    print_table,
    rescue_command,
    run_arguments,
    run_child,
    write_scaled,
)

TARGET = 0.85
STREAM_TARGET = 0.90
CLIENTS = str(Path(__file__).with_name("_clients.py"))


def main() -> None:
    parser = run_arguments(__doc__.splitlines()[0], samples=0, tasks=",".join(CLOSED_TASKS), batch_size="1")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--sequential-requests", type=int, default=150)
    parser.add_argument("--keep", type=Path, default=None, help="keep the run directory here")
    parser.add_argument("--stream-only", action="store_true",
                        help="only rescue run and rescue run --stream (no reference clients)")
    args = parser.parse_args()

    source = args.data or default_source()
    tasks = args.tasks.split(",")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        data = write_scaled(source, args.samples, work / "data.jsonl") if args.samples else source
        out = fresh_dir(args.keep or work / "run")
        with oracle_server(data, tasks, work / "server", latency=args.latency, batch_size=args.batch_size) as server:
            rescue = run_child(
                [*rescue_command(), "run", "--model", "bench-model", "--base-url", server.base_url, "--data", str(data),
                 "--tasks", args.tasks, "--out", str(out), "--concurrency", str(args.concurrency),
                 "--batch-size", args.batch_size, "--no-bertscore", "--quiet"],
                env={"OPENAI_API_KEY": "benchmark"},
            )
            server.dump()
            rescue_stats = server.stats()
            bodies = server.bodies()
            replay = work / "bodies.jsonl"
            replay.write_text("".join(json.dumps(b, ensure_ascii=False) + "\n" for b in bodies), encoding="utf-8")

            if args.stream_only:
                lean, lean_stats, sequential, sequential_stats = rescue, rescue_stats, rescue, rescue_stats
            else:
                lean = run_child([sys.executable, CLIENTS, "lean", server.base_url, str(replay), str(args.concurrency)])
                server.dump()
                lean_stats = server.stats()

                head = work / "sequential.jsonl"
                head.write_text("".join(json.dumps(b, ensure_ascii=False) + "\n"
                                        for b in bodies[: args.sequential_requests]), encoding="utf-8")
                sequential = run_child([sys.executable, CLIENTS, "sequential", server.base_url, str(head)])
                server.dump()
                sequential_stats = server.stats()

            streamed = run_child(
                [*rescue_command(), "run", "--model", "bench-model", "--base-url", server.base_url, "--data", str(data),
                 "--tasks", args.tasks, "--out", str(fresh_dir(work / "streamed")), "--concurrency",
                 str(args.concurrency), "--batch-size", args.batch_size, "--no-bertscore", "--quiet", "--stream"],
                env={"OPENAI_API_KEY": "benchmark"},
            )
            server.dump()
            stream_stats = server.stats()
            stream_results = json.loads((work / "streamed" / "results.json").read_text(encoding="utf-8"))

        results = json.loads((out / "results.json").read_text(encoding="utf-8"))

    n = rescue_stats["requests"]
    def rate(run: ChildRun, count: int) -> float:
        return count / run.seconds  # requests per second, start-up included

    rescue_rate = rate(rescue, n)
    lean_rate = rate(lean, lean_stats["requests"])
    sequential_rate = rate(sequential, sequential_stats["requests"])
    failures = {task: scopes["all"]["failures"] for task, scopes in results["models"]["bench-model"].items()
                if isinstance(scopes, dict) and "all" in scopes}
    instances = {task: scopes["all"]["instances"] for task, scopes in results["models"]["bench-model"].items()
                 if isinstance(scopes, dict) and "all" in scopes}

    def line(run: ChildRun, count: int, stats: dict) -> str:
        return (f"{count} requests in {run.seconds:.2f} s = {count / run.seconds:.1f} req/s "
                f"(max {stats['max_in_flight']} in flight)")

    ratio = rescue_rate / lean_rate
    stream_rate = rate(streamed, stream_stats["requests"])
    stream_ratio = stream_rate / rescue_rate
    stream_failures = sum(scopes["all"]["failures"] for scopes in stream_results["models"]["bench-model"].values()
                          if isinstance(scopes, dict) and "all" in scopes)
    print_table(
        f"bench_throughput: {args.latency * 1000:.0f} ms latency, {args.concurrency} in flight, "
        f"{source.name}{f' scaled to {args.samples}' if args.samples else ''}, tasks {args.tasks}, "
        f"batch size {args.batch_size}",
        [
            ("instances", ", ".join(f"{t} {c}" for t, c in instances.items())),
            ("rescue run", line(rescue, n, rescue_stats)),
            ("lean httpx + semaphore", line(lean, lean_stats["requests"], lean_stats)),
            ("sequential requests.post", line(sequential, sequential_stats["requests"], sequential_stats)),
            ("rescue run --stream", line(streamed, stream_stats["requests"], stream_stats)
             + f", {stream_failures} failures"),
            ("rescue / lean", f"{ratio:.1%} (target >= {TARGET:.0%}: {'met' if ratio >= TARGET else 'MISSED'})"),
            ("streaming / non-streaming", f"{stream_ratio:.1%} (target >= {STREAM_TARGET:.0%}: "
                                          f"{'met' if stream_ratio >= STREAM_TARGET else 'MISSED'})"),
            ("lean / sequential", f"{lean_rate / sequential_rate:.1f}x"),
            ("rescue / sequential", f"{rescue_rate / sequential_rate:.1f}x"),
            ("rescue failures", ", ".join(f"{t} {c}" for t, c in failures.items())),
            ("server answers unknown", f"{rescue_stats['oracle_misses']} of {n} (requests the oracle had not rendered)"),
        ],
    )


if __name__ == "__main__":
    main()
