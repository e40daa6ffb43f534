"""(c) Rerunning a finished run: 0 requests, < 5 s.

A full run (release-sized data, all six tasks, the authors' batch sizes) against the scripted server,
then the same command again on the same ``--out``: every answer must come from the run's cache. Both are
timed as fresh processes, side by side. Run: ``python benchmarks/bench_rerun.py``.
"""

from __future__ import annotations

import json
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

TARGET_SECONDS = 5.0


def main() -> None:
    parser = run_arguments(__doc__.splitlines()[0], samples=RELEASE_SAMPLES, tasks=",".join(TASK_NAMES),
                           batch_size="authors")
    parser.add_argument("--latency", type=float, default=0.0, help="server latency of the first run")
    args = parser.parse_args()

    source = default_source(args.data)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        data = write_scaled(source, args.samples, work / "data.jsonl")
        out = fresh_dir(work / "run")
        with oracle_server(data, args.tasks.split(","), work / "server", latency=args.latency,
                           batch_size=args.batch_size) as server:
            command = [*rescue_command(), "run", "--model", "bench-model", "--base-url", server.base_url,
                       "--data", str(data), "--tasks", args.tasks, "--out", str(out), "--batch-size", args.batch_size,
                       "--concurrency", str(args.concurrency), "--no-bertscore", "--quiet"]
            env = {"OPENAI_API_KEY": "benchmark"}
            first = run_child(command, env=env)
            server.dump()
            first_requests = server.stats()["requests"]
            first_results = json.loads((out / "results.json").read_text(encoding="utf-8"))
            rerun = run_child(command, env=env)
            server.dump()
            rerun_requests = server.stats()["requests"]
            rerun_results = json.loads((out / "results.json").read_text(encoding="utf-8"))

    def scores(results: dict) -> dict:
        return {task: scopes["all"] for task, scopes in results["models"]["bench-model"].items()
                if isinstance(scopes, dict) and "all" in scopes}

    same = scores(first_results) == scores(rerun_results)
    instances = sum(s["instances"] for s in scores(first_results).values())
    met = rerun_requests == 0 and rerun.seconds < TARGET_SECONDS
    print_table(
        f"bench_rerun: {source.name} scaled to {args.samples} samples, tasks {args.tasks}, batch size {args.batch_size}",
        [
            ("instances", str(instances)),
            ("first run", f"{first_requests} requests, {first.seconds:.2f} s"),
            ("rerun", f"{rerun_requests} requests, {rerun.seconds:.2f} s"),
            ("rerun / first run", f"{rerun.seconds / first.seconds:.1%} of the time"),
            ("same metrics", "yes" if same else "NO"),
            ("target", f"0 requests and < {TARGET_SECONDS:.0f} s: {'met' if met else 'MISSED'}"),
        ],
    )


if __name__ == "__main__":
    main()
