"""The default offline run against the four simple baselines, side by side (issue 47 item 3: at most 3x; issue 34
asked 1.5x of a hand-written fit, and a library kept is worth those seconds).

`rescue run --no-bertscore` (every baseline, `baseline/supervised` included) and the same run with only
`baseline/majority`, `uniform`, `persist` and `nearest`, on the same data, each a fresh process, interleaved REPEAT
times; the least CPU (user + system) of each is the figure (load only ever adds to it), and their ratio.
``--before REV`` adds the default run with the sources of an earlier revision. ``--figures`` also times
`rescue report` of the default run with and without figures and prints the figures' share of its CPU (item 5);
with ``--before``, also the report drawn by the revision's sources, side by side.
Run: ``python benchmarks/bench_offline.py`` (the real samples, as issue 34 measured).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from _support import REPO, default_source, fresh_dir, print_table, rescue_command, run_child
from bench_report import sources_at

SIMPLE = ("baseline/majority", "baseline/uniform", "baseline/persist", "baseline/nearest")
TARGET_RATIO = 3.0
TARGET_FIGURES_SHARE = 0.25


def cpu(command: list[str], src: Path) -> float:
    return run_child(command, env={"PYTHONPATH": str(src)}).cpu_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="release-format .jsonl (default: the real samples)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", default="", help="also the default run with this git revision's sources")
    parser.add_argument("--figures", action="store_true", help="also the report's CPU with and without figures")
    args = parser.parse_args()
    source = default_source(args.data)
    rescue = rescue_command()
    now = REPO / "src"
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench_offline_") as folder:
        work = Path(folder)
        before = sources_at(args.before, work / "before") if args.before else None
        if args.before and before is None:
            raise SystemExit(f"--before {args.before}: no such revision here")
        base = [*rescue, "run", "--data", str(source), "--no-bertscore", "--quiet", "--out"]
        load = [os.getloadavg()[0]]
        for _ in range(args.repeat):
            runs = {"default offline run": (base + [str(fresh_dir(work / "all"))], now),
                    "four simple baselines": (base + [str(fresh_dir(work / "simple"))]
                                              + [w for m in SIMPLE for w in ("--model", m)], now)}
            if before is not None:
                runs[f"default offline run at {args.before}"] = (base + [str(fresh_dir(work / "before_run"))], before)
            for name, (command, src) in runs.items():
                best[name] = min(best.get(name, float("inf")), cpu(command, src))
            if args.figures:
                report = [*rescue, "report", str(work / "all"), "--quiet", "--out"]
                reports = [("report, no figures", ["--no-figures"], now), ("report, figures (PNG)", [], now),
                           ("report, figures (PNG, SVG, PDF)", ["--figure-formats", "svg,pdf"], now)]
                if before is not None:  # the same report drawn by the revision's figure code
                    reports += [(f"report at {args.before}, no figures", ["--no-figures"], before),
                                (f"report at {args.before}, figures (PNG)", [], before)]
                for name, extra, src in reports:
                    best[name] = min(best.get(name, float("inf")),
                                     cpu(report + [str(fresh_dir(work / "report")), *extra], src))
        load.append(os.getloadavg()[0])
    ratio = best["default offline run"] / best["four simple baselines"]
    rows = [(name, f"{value:.2f} CPU-s") for name, value in best.items()]
    rows.append(("default / simple", f"{ratio:.2f}x (target <= {TARGET_RATIO}x: {'met' if ratio <= TARGET_RATIO else 'MISSED'})"))
    if before is not None:
        rows.append(("default at the revision / simple", f"{best[f'default offline run at {args.before}'] / best['four simple baselines']:.2f}x"))
    if args.figures:
        for label in ("report, figures (PNG)", "report, figures (PNG, SVG, PDF)"):
            share = 1 - best["report, no figures"] / best[label]
            rows.append((f"figures' share of the {label[8:]}", f"{share:.0%} (target <= {TARGET_FIGURES_SHARE:.0%} by default)"))
        if before is not None:
            share = 1 - best[f"report at {args.before}, no figures"] / best[f"report at {args.before}, figures (PNG)"]
            rows.append((f"figures' share of the report (PNG) at {args.before}", f"{share:.0%}"))
    print_table(f"bench_offline: {source.name}, least CPU of {args.repeat} interleaved runs each, "
                f"load average {load[0]:.1f} -> {load[1]:.1f}", rows)


if __name__ == "__main__":
    main()
