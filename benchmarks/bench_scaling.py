"""Every stage linear: the offline run, `baseline/nearest` alone, `baseline/supervised` alone and the report at 1x /
2x / 4x / 10x the data, each figure with its ratio to 1x measured in the same run (issues 34 item 4, 47 item 3).

1x is ``--base`` samples (default the release's 191: the real samples repeated, copies renamed ``_copyN``). Each
measured program is a fresh process: CPU seconds (user + system) and peak resident memory (kernel rusage).
Linear means the ratio at Nx stays near N for time and at most N for memory. The default offline run is
``rescue run --no-bertscore`` with every baseline; the report is ``rescue report`` of that run.
Run: ``python benchmarks/bench_scaling.py`` (``--base 35 --scales 1,2,4`` for a quick look).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from _support import RELEASE_SAMPLES, REPO, default_source, fresh_dir, rescue_command, run_child, write_scaled
from bench_report import sources_at


def measure(command: list[str], src: Path) -> tuple[float, float]:
    child = run_child(command, env={"PYTHONPATH": str(src)})
    return child.cpu_s, child.peak_rss_mb


def stages(rescue: list[str], data: Path, work: Path, src: Path, bootstrap: int, skip: set[str]
           ) -> dict[str, tuple[float, float] | None]:
    """CPU seconds and peak MB of the offline run, of baseline/nearest and baseline/supervised alone and of the
    report, with ``src``."""
    run_dir = fresh_dir(work / "run")
    out: dict[str, tuple[float, float] | None] = {"run": None, "nearest": None, "supervised": None, "report": None}
    if "run" not in skip:
        out["run"] = measure([*rescue, "run", "--out", str(run_dir), "--data", str(data), "--no-bertscore", "--quiet"],
                             src)
    if "nearest" not in skip:
        out["nearest"] = measure([*rescue, "run", "--out", str(fresh_dir(work / "nearest")), "--data", str(data),
                                  "--model", "baseline/nearest", "--tasks", "er,vp", "--no-bertscore", "--quiet"], src)
    if "supervised" not in skip:
        out["supervised"] = measure([*rescue, "run", "--out", str(fresh_dir(work / "supervised")), "--data", str(data),
                                     "--model", "baseline/supervised", "--no-bertscore", "--quiet"], src)
    if "report" not in skip and out["run"] is not None:
        out["report"] = measure([*rescue, "report", str(run_dir), "--out", str(fresh_dir(work / "report")),
                                 "--bootstrap", str(bootstrap), "--quiet"], src)
    shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="release-format .jsonl (default: the real samples)")
    parser.add_argument("--base", type=int, default=RELEASE_SAMPLES, help="samples at 1x")
    parser.add_argument("--scales", default="1,2,4,10")
    parser.add_argument("--bootstrap", type=int, default=1000, help="the report's resamples")
    parser.add_argument("--skip", default="", help="stages to leave out, comma-separated: run, nearest, supervised, report")
    parser.add_argument("--before", default="", help="also measure the sources of this git revision, row by row")
    args = parser.parse_args()
    source = default_source(args.data)
    scales = [int(s) for s in args.scales.split(",")]
    skip = set(filter(None, args.skip.split(",")))
    rescue = rescue_command()
    print(f"bench_scaling: {source.name}, 1x = {args.base} samples, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    header = (f"{'scale':>5} {'samples':>7} {'sources':>10} | {'offline run CPU s (x)':>22} {'peak MB (x)':>13} | "
              f"{'nearest CPU s (x)':>18} | {'supervised CPU s (x)':>21} {'peak MB (x)':>13} | "
              f"{'report CPU s (x)':>17} {'peak MB (x)':>13}")
    print(header)
    print("-" * len(header), flush=True)
    first: dict[str, float] = {}

    def shown(key: str, pair: tuple[float, float] | None, index: int, width: int, digits: int = 1) -> str:
        if pair is None:
            return f"{'—':>{width}}"
        value = pair[index]
        first.setdefault(key, value)
        return f"{value:.{digits}f} ({value / first[key]:.1f}x)".rjust(width)

    with tempfile.TemporaryDirectory(prefix="bench_scaling_") as folder:
        work = Path(folder)
        sources = [("now", REPO / "src")]
        if args.before:
            before = sources_at(args.before, work / "before")
            if before is None:
                raise SystemExit(f"--before {args.before}: no such revision here")
            sources.append((args.before[:10], before))
        for scale in scales:
            samples = args.base * scale
            data = write_scaled(source, samples, work / f"data_{samples}.jsonl")
            for label, src in sources:
                row = stages(rescue, data, work / f"{label}_{samples}", src, args.bootstrap, skip)
                print(f"{scale:>4}x {samples:>7} {label:>10} | {shown(label + 'run', row['run'], 0, 22)} "
                      f"{shown(label + 'run_mb', row['run'], 1, 13, 0)} | {shown(label + 'nearest', row['nearest'], 0, 18)} | "
                      f"{shown(label + 'supervised', row['supervised'], 0, 21)} "
                      f"{shown(label + 'supervised_mb', row['supervised'], 1, 13, 0)} | "
                      f"{shown(label + 'report', row['report'], 0, 17)} {shown(label + 'report_mb', row['report'], 1, 13, 0)}",
                      flush=True)
            data.unlink()
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
