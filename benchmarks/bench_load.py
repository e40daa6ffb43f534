"""Each heavy stage quiet and beside a fixed synthetic load, side by side in one run (issue 46 item 1).

A stage is what a user runs, a fresh ``rescue`` process each time, its thread pools sized by rescue
(``RESCUE_THREADS`` unset: the cores this process may use; ``--threads N`` sets it for every stage):

- ``bertscore``: ``rescue run --model baseline/nearest --tasks er,vp`` with BERTScore (the packaged model), demo data;
- ``supervised fit``: ``rescue run --model baseline/supervised --no-bertscore``, the real samples (else the demo);
- ``report``: ``rescue report`` of that run;
- ``model run``: ``rescue run`` of one model against the scripted OpenAI-compatible server (its own process,
  no latency), ``--tasks itp,rpp``, the real samples' first ``--samples``;
- ``bare thread`` (the machine's own figure, not rescue's): a fixed amount of float32 matrix products in one
  thread of torch, outside rescue. A single thread beside one busy process per core should get two thirds of a
  core (a slowdown of 1.5); what it shows above that is the machine's (a hypervisor giving the cores to other
  machines, caches and the memory bus shared with the busy processes), and a stage cannot be expected to do better.

The load is one busy process per core (a loop that never sleeps), started before a loaded measurement and
ended after it. Quiet and loaded runs of each stage are interleaved ``--repeat`` times and the least wall time
of each is the figure (other load only ever adds). The oversubscription factor is what the load leaves a stage
whose threads fill the cores: (busy processes + cores) / cores, 2 with one busy process per core. The goal: no
stage slows (loaded wall / quiet wall) by more than that factor. "vs bare" divides a stage's slowdown by the bare
thread's: above 1, the stage lost more than the machine takes from one thread. A shared machine's own load is in both columns;
the load average is printed at the start and the end.
Run: ``python benchmarks/bench_load.py`` (``--repeat 1`` for a quick look).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from _support import REAL_DATA, REPO, ChildRun, fresh_dir, oracle_server, rescue_command, run_child, write_scaled

DEMO = REPO / "src" / "rescue" / "data" / "demo" / "demo.jsonl"


# One thread of the kind of work BERTScore does (float32 products of a MiniLM's sizes), a fixed amount of it.
BARE_THREAD = ("import torch\ntorch.set_num_threads(1)\ngenerator = torch.Generator().manual_seed(0)\n"
               "a = torch.rand(64, 384, generator=generator)\nb = torch.rand(384, 1536, generator=generator)\n"
               "for _ in range(2000):\n    a @ b\n")


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
    parser.add_argument("--stages", default="bertscore,supervised fit,report,model run,bare thread")
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

        stages["bare thread"] = lambda: run_child([sys.executable, "-c", BARE_THREAD])
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
    slowdowns = {stage: best[(stage, "loaded")].seconds / best[(stage, "quiet")].seconds for stage in wanted}
    floor = slowdowns.get("bare thread")
    print(f"\n{'stage':<15} {'quiet wall s':>12} {'loaded wall s':>13} {'slowdown':>9} {'quiet CPU s':>11} "
          f"{'loaded CPU s':>12} {'vs bare':>8}  goal (slowdown <= {factor:.1f})")
    for stage in wanted:
        quiet, loaded = best[(stage, "quiet")], best[(stage, "loaded")]
        slowdown = slowdowns[stage]
        versus = f"{slowdown / floor:>7.2f}x" if floor else f"{'-':>8}"
        print(f"{stage:<15} {quiet.seconds:>12.2f} {loaded.seconds:>13.2f} {slowdown:>8.2f}x {quiet.cpu_s:>11.2f} "
              f"{loaded.cpu_s:>12.2f} {versus}  {'met' if slowdown <= factor else 'MISSED'}")
    if floor:
        print(f"vs bare: a stage's slowdown over the bare thread's ({floor:.2f}x), what this machine does to one "
              f"thread beside the load (a fair share of the cores: {(args.busy + 1) / cores:.2f}x)")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
