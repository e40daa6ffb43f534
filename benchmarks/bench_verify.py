"""(#44) `rescue verify` of a bundle costs at most 1.5x the CPU of `rescue rescore` of the same run.

A run of the scripted model on every task, judged by a scripted judge (ER, VP), is made once and submitted; then
`rescue rescore RUN` and `rescue verify BUNDLE` run as fresh processes, interleaved ``--repeat`` times, and the
least CPU of each is compared (the machine is shared: the least of several is the figure least disturbed).
Run: ``python benchmarks/bench_verify.py [--data FILE] [--samples N] [--repeat 5] [--bertscore]``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from _support import (default_source, fresh_dir, oracle_server, print_table, rescue_command, run_arguments, run_child,
                      write_scaled)

from rescue.tasks import TASK_NAMES
from rescue.testing import Reply, serve

TARGET_RATIO = 1.5
JUDGE_RATING = {"emotion_score": 4, "score": 4, "source_target_score": 2, "viewpoint_score": 3, "verdict": "pass",
                "notes": "close"}


def main() -> None:
    parser = run_arguments(__doc__.splitlines()[0], samples=0, tasks=",".join(TASK_NAMES), batch_size="1")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved runs of each command; the least CPU counts")
    parser.add_argument("--bertscore", action="store_true", help="score ER/VP with BERTScore too (the extra)")
    args = parser.parse_args()
    source = default_source(args.data)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        data = write_scaled(source, args.samples, work / "data.jsonl") if args.samples else source
        run = fresh_dir(work / "run")
        env = {"OPENAI_API_KEY": "benchmark"}
        with oracle_server(data, args.tasks.split(","), work / "server", latency=0.0) as server, \
                serve(Reply.json(JUDGE_RATING)) as judge:
            made = run_child([*rescue_command(), "run", "--model", "bench-model", "--base-url", server.base_url,
                              "--judge", "bench-judge", "--judge-base-url", judge.base_url, "--data", str(data),
                              "--tasks", args.tasks, "--out", str(run), "--concurrency", str(args.concurrency),
                              *([] if args.bertscore else ["--no-bertscore"]), "--quiet"], env=env, check=False)
        if made.returncode not in (0, 3):
            raise SystemExit(f"the run failed ({made.returncode}): {made.stderr[-2000:]}")
        print(f"run: exit {made.returncode}, {made.cpu_s:.1f} CPU-s; {made.stderr.strip().splitlines()[-1:]}")
        bundle = work / "bench.rescue.zip"
        run_child([*rescue_command(), "submit", str(run), "--out", str(bundle), "--data", str(data)], env=env)
        rescore_cpu, verify_cpu = [], []
        for _ in range(args.repeat):
            copy = work / "rescored"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(run, copy)
            rescore_cpu.append(run_child([*rescue_command(), "rescore", str(copy), "--data", str(data)]).cpu_s)
            verified = run_child([*rescue_command(), "verify", str(bundle), "--data", str(data), "--out",
                                  str(work / "verdict")])
            verify_cpu.append(verified.cpu_s)
        bundle_mb = bundle.stat().st_size / 1e6
    ratio = min(verify_cpu) / min(rescore_cpu)
    print_table(f"rescue verify vs rescue rescore, least CPU of {args.repeat} interleaved runs "
                f"(load {os.getloadavg()[0]:.1f})", [
                    ("data", f"{source.name}, scaled to {args.samples} samples" if args.samples else source.name),
                    ("bundle", f"{bundle_mb:.2f} MB"),
                    ("rescue rescore RUN", f"{min(rescore_cpu):.2f} CPU-s (all: {', '.join(f'{c:.2f}' for c in rescore_cpu)})"),
                    ("rescue verify BUNDLE", f"{min(verify_cpu):.2f} CPU-s (all: {', '.join(f'{c:.2f}' for c in verify_cpu)})"),
                    ("ratio", f"{ratio:.2f}x (target <= {TARGET_RATIO}x): {'met' if ratio <= TARGET_RATIO else 'MISSED'}"),
                ])


if __name__ == "__main__":
    main()
