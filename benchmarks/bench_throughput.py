"""(a) Throughput and client CPU of ``rescue run`` against a server with 200 ms latency, 32 requests in flight.

Measured side by side in one run, each as a fresh process (start-up included), against the same scripted
server (its own process, answering every request with the gold answer after the latency):

1. ``rescue run`` with ``--concurrency 32``;
2. the floor: raw asyncio sockets, 32 keep-alive connections, replaying exactly the request bodies rescue
   sent (from the server's log), each encoded as JSON and its answer read to the end, nothing parsed
   (``_clients.py floor``): the least any client can do;
3. with ``--clients``, the candidate HTTP stacks on the same bodies (``httpx-rescue``, ``httpx``, ``aiohttp``,
   ``h11``; see ``_clients.py``), each as the floor is, to choose rescue's by measurement;
4. a sequential client sending the first ``--sequential-requests`` of them one by one with ``requests.post``,
   as the authors' scripts do (0: skipped);
5. ``rescue run --stream`` (server-sent events, the answer assembled from the deltas) into a fresh directory.

Targets: rescue reaches >= 90% of the floor's throughput with <= 8x its CPU per request (both start-up
included), and streaming >= 90% of non-streaming rescue. The load average is printed with the figures: on a
busy machine the ratios, not the rates, are what compares.
Run: ``python benchmarks/bench_throughput.py [--clients all]``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
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

TARGET = 0.90
CPU_TARGET = 8.0
STREAM_TARGET = 0.90
CANDIDATES = ("httpx-rescue", "httpx", "aiohttp", "h11")
CLIENTS = str(Path(__file__).with_name("_clients.py"))


@dataclass
class Measured:
    """One client's run: its process, and the server's counters for it."""

    name: str
    run: ChildRun
    stats: dict

    @property
    def requests(self) -> int:
        return int(self.stats["requests"])

    @property
    def rate(self) -> float:
        return self.requests / self.run.seconds  # requests per second, start-up included

    @property
    def cpu_ms(self) -> float:
        return 1000 * self.run.cpu_s / max(1, self.requests)  # CPU per request, start-up included

    def line(self) -> str:
        return (f"{self.requests} requests in {self.run.seconds:.2f} s = {self.rate:.1f} req/s, CPU {self.run.cpu_s:.2f} s "
                f"= {self.cpu_ms:.3f} ms/request (max {self.stats['max_in_flight']} in flight; first to last request "
                f"{self.stats['span_s']:.2f} s, {self.stats['last_quarter'] / max(1, self.requests):.0%} of them in "
                f"its last quarter)")


def _rescue_run(server, data: Path, out: Path, args, *more: str) -> ChildRun:
    return run_child(
        [*rescue_command(), "run", "--model", "bench-model", "--base-url", server.base_url, "--data", str(data),
         "--tasks", args.tasks, "--out", str(out), "--concurrency", str(args.concurrency),
         "--batch-size", args.batch_size, "--no-bertscore", "--quiet", *more],
        env={"OPENAI_API_KEY": "benchmark"},
    )


def _measure(name: str, server, command: list[str], env: dict[str, str] | None = None) -> Measured:
    run = run_child(command, env=env) if env else run_child(command)
    server.dump()
    return Measured(name, run, server.stats())


def _client(kind: str, server, replay: Path, concurrency: int) -> Measured:
    return _measure(kind, server, [sys.executable, CLIENTS, kind, server.base_url, str(replay), str(concurrency)])


def _verdict(value: float, target: float, *, at_most: bool = False) -> str:
    met = value <= target if at_most else value >= target
    return "met" if met else "MISSED"


def main() -> None:
    parser = run_arguments(__doc__.splitlines()[0], samples=0, tasks=",".join(CLOSED_TASKS), batch_size="1")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--sequential-requests", type=int, default=150, help="0: no sequential client")
    parser.add_argument("--clients", default="", help=f"candidate HTTP stacks to measure too: all, or some of "
                        f"{','.join(CANDIDATES)}")
    parser.add_argument("--no-stream", action="store_true", help="no rescue run --stream")
    parser.add_argument("--keep", type=Path, default=None, help="keep the run directory here")
    args = parser.parse_args()
    candidates = list(CANDIDATES) if args.clients == "all" else [c for c in args.clients.split(",") if c]

    source = args.data or default_source()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        data = write_scaled(source, args.samples, work / "data.jsonl") if args.samples else source
        out = fresh_dir(args.keep or work / "run")
        with oracle_server(data, args.tasks.split(","), work / "server", latency=args.latency,
                           batch_size=args.batch_size) as server:
            rescue = Measured("rescue run", _rescue_run(server, data, out, args), {})
            server.dump()
            rescue.stats = server.stats()
            bodies = server.bodies()
            replay = work / "bodies.jsonl"
            replay.write_text("".join(json.dumps(b, ensure_ascii=False) + "\n" for b in bodies), encoding="utf-8")
            distinct = len({json.dumps(b, sort_keys=True) for b in bodies})
            floor = _client("floor", server, replay, args.concurrency)
            others = [_client(kind, server, replay, args.concurrency) for kind in candidates]
            if args.sequential_requests:
                head = work / "sequential.jsonl"
                head.write_text("".join(json.dumps(b, ensure_ascii=False) + "\n"
                                        for b in bodies[: args.sequential_requests]), encoding="utf-8")
                others.append(_measure("sequential requests.post", server,
                                       [sys.executable, CLIENTS, "sequential", server.base_url, str(head)]))
            streamed = None
            if not args.no_stream:
                streamed = Measured("rescue run --stream", _rescue_run(server, data, fresh_dir(work / "streamed"), args,
                                                                       "--stream"), {})
                server.dump()
                streamed.stats = server.stats()
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    _report(args, source, load_before, results, rescue, floor, others, streamed, distinct)


def _report(args, source: Path, load_before: tuple[float, ...], results: dict, rescue: Measured, floor: Measured,
            others: list[Measured], streamed: Measured | None, distinct: int) -> None:
    scopes = {task: s["all"] for task, s in results["models"]["bench-model"].items() if isinstance(s, dict) and "all" in s}
    throughput, cpu = rescue.rate / floor.rate, rescue.cpu_ms / floor.cpu_ms
    rows = [
        ("load average", f"{load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after (2-minute figures of `uptime`)"),
        ("instances", ", ".join(f"{t} {s['instances']}" for t, s in scopes.items())),
        ("rescue run", rescue.line()),
        ("floor (raw sockets)", floor.line()),
        *[(m.name, m.line() + f"; CPU {m.cpu_ms / floor.cpu_ms:.1f}x the floor's") for m in others],
        ("rescue / floor throughput", f"{throughput:.1%} (target >= {TARGET:.0%}: {_verdict(throughput, TARGET)})"),
        ("rescue / floor CPU", f"{cpu:.1f}x (target <= {CPU_TARGET:g}x: {_verdict(cpu, CPU_TARGET, at_most=True)})"),
        ("requests sent", f"{rescue.requests} for {distinct} distinct bodies"),
        ("rescue failures", ", ".join(f"{t} {s['failures']}" for t, s in scopes.items())),
        ("server answers unknown", f"{rescue.stats['oracle_misses']} of {rescue.requests} (not rendered ahead)"),
    ]
    if streamed is not None:
        ratio = streamed.rate / rescue.rate
        rows.insert(4, (streamed.name, streamed.line()))
        rows.append(("streaming / non-streaming", f"{ratio:.1%} (target >= {STREAM_TARGET:.0%}: "
                                                  f"{_verdict(ratio, STREAM_TARGET)})"))
    print_table(f"bench_throughput: {args.latency * 1000:.0f} ms latency, {args.concurrency} in flight, "
                f"{source.name}{f' scaled to {args.samples}' if args.samples else ''}, tasks {args.tasks}, "
                f"batch size {args.batch_size}", rows)


if __name__ == "__main__":
    main()
