"""`rescue --help` start-up: CPU seconds of the whole process against a bare interpreter (target: under 0.25 s).

Each command runs REPEAT times as a fresh process; the least CPU (user + system) of each is reported, since
other load on the machine only ever adds to it, with the ratio to ``python -c pass``. `rescue run --help`
(which builds that one command's options) is timed too. Run: ``python benchmarks/bench_cli_help.py``.

``--against SRC`` times another source tree (a ``src`` folder, e.g. ``git archive REV src`` unpacked) side by
side in the same run, each repetition alternating between the two, so that both see the same load.
"""

from __future__ import annotations

import argparse
import os
import sys

from _support import print_table, rescue_command, run_child

TARGET_CPU_S = 0.25
TARGET_RUN_HELP_CPU_S = 0.15  # issue 34 item 6


def least_cpu(commands: dict[str, tuple[list[str], dict[str, str]]], repeat: int) -> dict[str, float]:
    """The least CPU of each command over ``repeat`` rounds, the commands interleaved within each round."""
    least = {name: float("inf") for name in commands}
    for _ in range(repeat):
        for name, (command, env) in commands.items():
            least[name] = min(least[name], run_child(command, env=env).cpu_s)
    return least


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--against", metavar="SRC", help="another source tree to time side by side")
    args = parser.parse_args()
    trees = {"": os.environ.get("PYTHONPATH", "")}
    if args.against:
        trees[f" [{args.against}]"] = os.path.abspath(args.against)
    commands = {"python -c pass": ([sys.executable, "-c", "pass"], {})}
    for label, path in trees.items():
        env = {"PYTHONPATH": path} if path else {}
        commands[f"rescue --help{label}"] = ([*rescue_command(), "--help"], env)
        commands[f"rescue run --help{label}"] = ([*rescue_command(), "run", "--help"], env)
    least = least_cpu(commands, args.repeat)
    bare = least.pop("python -c pass")
    rows = [("python -c pass", f"{bare:.3f}")]
    for name, cpu in least.items():
        target = TARGET_RUN_HELP_CPU_S if name.startswith("rescue run") else TARGET_CPU_S
        rows.append((name, f"{cpu:.3f}  ({cpu / bare:.1f}x a bare interpreter; target < {target})"))
    print_table("CPU seconds (least of %d runs)" % args.repeat, rows)
    run_help, top = least["rescue run --help"], least["rescue --help"]
    if run_help >= TARGET_RUN_HELP_CPU_S:
        raise SystemExit(f"rescue run --help took {run_help:.3f} s of CPU, over the {TARGET_RUN_HELP_CPU_S} s target")
    if top >= TARGET_CPU_S:
        raise SystemExit(f"rescue --help took {top:.3f} s of CPU, over the {TARGET_CPU_S} s target")


if __name__ == "__main__":
    main()
