"""`rescue --help` start-up: CPU seconds of the whole process against a bare interpreter (target: under 0.25 s).

Each command runs REPEAT times as a fresh process; the least CPU (user + system) of each is reported, since
other load on the machine only ever adds to it, with the ratio to ``python -c pass``. `rescue run --help`
(which builds that one command's options) is timed too. Run: ``python benchmarks/bench_cli_help.py``.
"""

from __future__ import annotations

import argparse
import sys

from _support import print_table, rescue_command, run_child

TARGET_CPU_S = 0.25
TARGET_RUN_HELP_CPU_S = 0.15  # issue 34 item 6


def least_cpu(command: list[str], repeat: int) -> float:
    return min(run_child(command).cpu_s for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    bare = least_cpu([sys.executable, "-c", "pass"], args.repeat)
    top = least_cpu([*rescue_command(), "--help"], args.repeat)
    run_help = least_cpu([*rescue_command(), "run", "--help"], args.repeat)
    print_table("CPU seconds (least of %d runs)" % args.repeat, [
        ("python -c pass", f"{bare:.3f}"),
        ("rescue --help", f"{top:.3f}  ({top / bare:.1f}x a bare interpreter; target < {TARGET_CPU_S})"),
        ("rescue run --help", f"{run_help:.3f}  ({run_help / bare:.1f}x; target < {TARGET_RUN_HELP_CPU_S})"),
    ])
    if run_help >= TARGET_RUN_HELP_CPU_S:
        raise SystemExit(f"rescue run --help took {run_help:.3f} s of CPU, over the {TARGET_RUN_HELP_CPU_S} s target")
    if top >= TARGET_CPU_S:
        raise SystemExit(f"rescue --help took {top:.3f} s of CPU, over the {TARGET_CPU_S} s target")


if __name__ == "__main__":
    main()
