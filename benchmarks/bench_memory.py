"""(d) Peak memory of a full run: < 500 MB.

A full run (release-sized data, all six tasks, the authors' batch sizes) against the scripted server, as
a fresh process; its own peak resident memory comes from the kernel (``wait4``'s ru_maxrss of a process
forked afresh, see ``_peak.py``). Side by side,
the peak of ``rescue --help`` — what the interpreter and rescue's imports cost before any work.
BERTScore is on, as in ``rescue run``; ``--no-bertscore`` leaves its model out.
Run: ``python benchmarks/bench_memory.py``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _support import (
    RELEASE_SAMPLES,
    default_source,
    fresh_dir,
    oracle_server,
    print_table,
    rescue_command,
    run_arguments,
    run_child,
    write_scaled,
)

from rescue.tasks import TASK_NAMES

TARGET_MB = 500.0


def main() -> None:
    parser = run_arguments(__doc__.splitlines()[0], samples=RELEASE_SAMPLES, tasks=",".join(TASK_NAMES),
                           batch_size="authors")
    parser.add_argument("--bertscore", action=argparse.BooleanOptionalAction, default=True,
                        help="BERTScore for ER/VP, on by default as in rescue run")
    args = parser.parse_args()

    source = default_source(args.data)
    baseline = run_child([*rescue_command(), "--help"])
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        data = write_scaled(source, args.samples, work / "data.jsonl")
        out = fresh_dir(work / "run")
        with oracle_server(data, args.tasks.split(","), work / "server", latency=0.0, batch_size=args.batch_size) as server:
            full = run_child(
                [*rescue_command(), "run", "--model", "bench-model", "--base-url", server.base_url, "--data", str(data),
                 "--tasks", args.tasks, "--out", str(out), "--batch-size", args.batch_size,
                 "--concurrency", str(args.concurrency), "--bertscore" if args.bertscore else "--no-bertscore", "--quiet"],
                env={"OPENAI_API_KEY": "benchmark"},
            )
            server.dump()
            requests = server.stats()["requests"]
        predictions = sum(1 for _ in (out / "predictions.jsonl").open(encoding="utf-8"))

    verdict = (f"< {TARGET_MB:.0f} MB: {'met' if full.peak_rss_mb < TARGET_MB else 'MISSED'} "
               f"({full.peak_rss_mb / TARGET_MB:.0%} of the budget)")
    print_table(
        f"bench_memory: {source.name} scaled to {args.samples} samples, tasks {args.tasks}, "
        f"batch size {args.batch_size}, BERTScore {'on' if args.bertscore else 'off'}",
        [
            ("full run", f"{requests} requests, {predictions} predictions, {full.seconds:.1f} s"),
            ("peak memory, full run", f"{full.peak_rss_mb:.0f} MB"),
            ("peak memory, rescue --help", f"{baseline.peak_rss_mb:.0f} MB (interpreter + imports)"),
            ("full run / start-up", f"{full.peak_rss_mb / baseline.peak_rss_mb:.1f}x"),
            ("target", verdict),
        ],
    )


if __name__ == "__main__":
    main()
