"""(b) Building every instance of a release-sized dataset and every prompt in each mode. Target: < 1 s.

The real samples (or the demo data) are repeated to the release's 191 samples. Two figures: every task's
``build`` (the instances, which do not depend on the mode), and everything a run does before its first
request — ``build``, the leak-free batch plan and the prompt of every batch (the authors' batch sizes) —
for each of the six modes, as six runs would. Every repetition starts cold: nothing encoded in one
repetition (or one mode) is reused by another. Loading the data is timed apart.
Run: ``python benchmarks/bench_build.py``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _support import RELEASE_SAMPLES, default_source, print_table, write_scaled

from rescue.data.loading import load_samples
from rescue.tasks import TASKS, get_task
from rescue.tasks.base import MODES, RenderOptions
from rescue.tasks.batching import plan_batches
from rescue.tasks.render import RowCache

TARGET_SECONDS = 1.0


def build_only(samples, task_names: list[str]) -> float:
    """Seconds to build every task's instances (no prompts): the part that does not depend on the mode."""
    start = time.perf_counter()
    for name in task_names:
        get_task(name).build(samples)
    return time.perf_counter() - start


def build_all(samples, task_names: list[str]) -> tuple[float, int, int, dict[str, float]]:
    """Seconds, instances, prompts and per-task seconds to build, plan and render everything once, cold."""
    instances_total = prompts_total = 0
    per_task = dict.fromkeys(task_names, 0.0)
    batches = {}
    start = time.perf_counter()
    for name in task_names:
        task_start = time.perf_counter()
        task = get_task(name)
        instances = task.build(samples)
        instances_total += len(instances)
        batches[name] = plan_batches(task, instances, task.default_batch_size, task.default_context_size).batches
        per_task[name] += time.perf_counter() - task_start
    for mode in MODES:
        # A run has one mode and keeps one row cache for all its tasks (rescue.engine.runner); a fresh one per
        # mode makes each mode pay for encoding its rows, as its own run would.
        rows = RowCache()
        for name in task_names:
            task_start = time.perf_counter()
            task = get_task(name)
            options = RenderOptions(mode=mode, rows=rows)
            for batch in batches[name]:
                task.render(batch, options)
                prompts_total += 1
            per_task[name] += time.perf_counter() - task_start
    return time.perf_counter() - start, instances_total, prompts_total, per_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="release-format .jsonl to scale (default: the real samples)")
    parser.add_argument("--samples", type=int, default=RELEASE_SAMPLES)
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions, each cold")
    args = parser.parse_args()

    source = default_source(args.data)
    with tempfile.TemporaryDirectory() as folder:
        data = write_scaled(source, args.samples, Path(folder) / "release.jsonl")
        load_start = time.perf_counter()
        samples = load_samples(data)
        load_seconds = time.perf_counter() - load_start

    task_names = list(TASKS)
    build_seconds = min(build_only(samples, task_names) for _ in range(args.repeat))
    runs = [build_all(samples, task_names) for _ in range(args.repeat)]
    times = [r[0] for r in runs]
    seconds, instances, prompts, per_task = min(runs, key=lambda r: r[0])

    def verdict(value: float) -> str:
        return f"< {TARGET_SECONDS:.1f} s: {'met' if value < TARGET_SECONDS else 'MISSED'} ({value / TARGET_SECONDS:.0%} of the budget)"

    modes = len(MODES)
    rows = [
        ("source", f"{source.name} scaled to {len(samples)} samples"),
        ("tasks x modes", f"{len(task_names)} x {modes} ({', '.join(task_names)}; {', '.join(MODES)})"),
        ("instances (per mode)", f"{instances}"),
        ("prompts rendered", f"{prompts}"),
        ("load + validate data", f"{load_seconds:.3f} s (not part of the target)"),
        ("build instances only, 6 tasks", f"{build_seconds:.3f} s"),
        *((f"  {name}: build + plan + render {modes} modes", f"{value:.3f} s") for name, value in per_task.items()),
        (f"build + plan + render, {args.repeat} cold runs", f"best {min(times):.3f} s, median {statistics.median(times):.3f} s, "
                                                          f"worst {max(times):.3f} s"),
        ("target, instances (mode-independent)", verdict(build_seconds)),
        ("target, instances + prompts (median)", verdict(statistics.median(times))),
    ]
    print_table(f"bench_build: every instance and prompt, {len(task_names)} tasks x {modes} modes, release-sized data", rows)
    print(f"  (the first task of each mode, {task_names[0]}, pays for encoding that mode's rows)")


if __name__ == "__main__":
    main()
