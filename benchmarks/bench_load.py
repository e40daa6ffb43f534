"""Each heavy stage quiet and beside a fixed synthetic load, side by side in one run (issue 46 item 1).

A stage is what a user runs, a fresh ``rescue`` process each time, its thread pools sized by rescue
(``RESCUE_THREADS`` unset: the cores this process may use; ``--threads N`` sets it for every stage):

- ``bertscore``: ``rescue run --model baseline/nearest --tasks er,vp`` with BERTScore (the packaged model), demo data;
- ``supervised fit``: ``rescue run --model baseline/supervised --no-bertscore``, the real samples (else the demo);
- ``report``: ``rescue report`` of that run;
- ``model run``: ``rescue run`` of one model against the scripted OpenAI-compatible server (its own process,
  no latency), ``--tasks itp,rpp``, the real samples' first ``--samples``.

The load is one busy process per core (a loop that never sleeps), started before a loaded measurement and
ended after it. Quiet and loaded runs of each stage are interleaved ``--repeat`` times and the least wall time
of each is the figure (other load only ever adds). The oversubscription factor is what the load leaves a stage
whose threads fill the cores: (busy processes + cores) / cores, 2 with one busy process per core. The goal: no
stage slows (loaded wall / quiet wall) by more than that factor. A shared machine's own load is in both columns;
the load average is printed at the start and the end.
Run: ``python benchmarks/bench_load.py`` (``--repeat 1`` for a quick look).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from _support import REAL_DATA, REPO, ChildRun, fresh_dir, oracle_server, rescue_command, run_child, write_scaled

DEMO = REPO / "src" / "rescue" / "data" / "demo" / "demo.jsonl"


def _spin() -> None:
    while True:
        pass


@contextmanager
def busy(processes: int) -> Iterator[None]:
    """``processes`` busy processes for the length of the block, ended after it however it ends."""
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_spin, daemon=True) for _ in range(processes)]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1, help="busy processes (default: one a core)")
    parser.add_argument("--threads", default="", help="RESCUE_THREADS for every stage (default: unset)")
    parser.add_argument("--samples", type=int, default=8, help="samples the model run asks about")
    parser.add_argument("--stages", default="bertscore,supervised fit,report,model run")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    rescue = rescue_command()
    env = {"OPENAI_API_KEY": "benchmark", **({"RESCUE_THREADS": args.threads} if args.threads else {})}
    real = REAL_DATA if REAL_DATA.exists() else None
    wanted = [s.strip() for s in args.stages.split(",")]
    print(f"bench_load: {cores} cores, {args.busy} busy processes, RESCUE_THREADS={args.threads or 'unset'}, "
          f"load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_load_") as folder:
        work = Path(folder)
        model_data = write_scaled(real or DEMO, args.samples, work / "model_data.jsonl")
        supervised_run = work / "supervised"
        stages: dict[str, Callable[[], ChildRun]] = {
            "bertscore": lambda: run_child([*rescue, "run", "--model", "baseline/nearest", "--tasks", "er,vp",
                                            "--quiet", "--out", str(fresh_dir(work / "bertscore"))], env=env),
            "supervised fit": lambda: run_child([*rescue, "run", "--model", "baseline/supervised", "--no-bertscore",
                                                 "--quiet", "--out", str(fresh_dir(supervised_run)),
                                                 *(["--data", str(real)] if real else [])], env=env),
            "report": lambda: run_child([*rescue, "report", str(supervised_run), "--quiet",
                                         "--out", str(fresh_dir(work / "report"))], env=env),
        }
        best: dict[tuple[str, str], ChildRun] = {}

        def keep(stage: str, how: str, run: ChildRun) -> None:
            if (stage, how) not in best or run.seconds < best[(stage, how)].seconds:
                best[(stage, how)] = run

        with oracle_server(model_data, ["itp", "rpp"], work / "server", latency=0.0) as server:
            stages["model run"] = lambda: run_child(
                [*rescue, "run", "--model", "bench-model", "--base-url", server.base_url, "--tasks", "itp,rpp",
                 "--no-bertscore", "--quiet", "--out", str(fresh_dir(work / "model")), "--data", str(model_data)],
                env=env)
            for _ in range(args.repeat):
                for stage in wanted:
                    if stage == "report" and not supervised_run.exists():
                        stages["supervised fit"]()
                    keep(stage, "quiet", stages[stage]())
                    with busy(args.busy):
                        keep(stage, "loaded", stages[stage]())
    factor = (args.busy + cores) / cores
    print(f"\n{'stage':<15} {'quiet wall s':>12} {'loaded wall s':>13} {'slowdown':>9} {'quiet CPU s':>11} "
          f"{'loaded CPU s':>12}  goal (slowdown <= {factor:.1f})")
    for stage in wanted:
        quiet, loaded = best[(stage, "quiet")], best[(stage, "loaded")]
        slowdown = loaded.seconds / quiet.seconds
        print(f"{stage:<15} {quiet.seconds:>12.2f} {loaded.seconds:>13.2f} {slowdown:>8.2f}x {quiet.cpu_s:>11.2f} "
              f"{loaded.cpu_s:>12.2f}  {'met' if slowdown <= factor else 'MISSED'}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
