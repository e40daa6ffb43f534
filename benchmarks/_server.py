"""The oracle test server as a process of its own (started by the benchmarks through ``_support``).

Prints ``READY <base_url>`` once it listens. On SIGUSR1 it writes every request body it received to
``--log`` (JSON lines) and its counters to ``--stats``; SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
from pathlib import Path

from rescue.data.loading import load_samples
from rescue.tasks import get_task
from rescue.tasks.base import RenderOptions
from rescue.testing import serve
from rescue.testing.oracle import OracleScript


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--tasks", required=True)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--mode", default="dialogue")
    parser.add_argument("--batch-size", default="1", help="as rescue run's: a number or 'authors'")
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--stats", type=Path, required=True)
    args = parser.parse_args()

    samples = load_samples(args.data)
    tasks = [get_task(name) for name in args.tasks.split(",")]
    batch_size = None if args.batch_size == "authors" else int(args.batch_size)
    script = OracleScript(samples, tasks, RenderOptions(mode=args.mode), batch_size=batch_size)
    stop = threading.Event()
    dump_requested = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, lambda *_: dump_requested.set())

    with serve(script, latency=args.latency) as server:
        print(f"READY {server.base_url}", flush=True)
        while not stop.is_set():
            if dump_requested.wait(0.1):
                dump_requested.clear()
                with args.log.open("w", encoding="utf-8") as log:
                    for body in server.bodies:
                        log.write(json.dumps(body, ensure_ascii=False) + "\n")
                arrivals = [r.received_at for r in server.requests] or [0.0]
                first, last = min(arrivals), max(arrivals)
                stats = {"requests": server.request_count, "max_in_flight": server.max_in_flight,
                         # From the first request's arrival to the last's: the sending phase, start-up left out.
                         "span_s": last - first,
                         # Arrivals in the last quarter of that span: a run ending in a tail sends few there.
                         "last_quarter": sum(1 for a in arrivals if a >= last - (last - first) / 4),
                         "oracle_hits": script.hits, "oracle_misses": script.misses, "answers_known": len(script),
                         "batch_requests": len(server.batch_bodies), "batches": len(server.batches)}
                tmp = args.stats.with_suffix(".tmp")
                tmp.write_text(json.dumps(stats))
                tmp.replace(args.stats)  # the benchmark waits for this file: it must appear complete
                server.reset()
                script.hits = script.misses = 0


if __name__ == "__main__":
    main()
