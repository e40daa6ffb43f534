"""(f) `rescue report` on release-sized data: render time and report.html size, before and after, side by side.

The offline baselines are run once on the real samples repeated to the release's 191 (and, with --scale,
to N times that); then `rescue report` of that run is timed with this checkout's sources and with the sources
of an earlier commit (--before, default: the commit before the light report), each in a fresh process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import RELEASE_SAMPLES, REPO, default_source, fresh_dir, run_child, write_scaled  # noqa: E402

BEFORE = "3cd2b93^"  # main just before "Report: comparable runs or --allow-mixed, ... readable and light report"


def sources_at(revision: str, dest: Path) -> Path | None:
    """``src/`` of ``revision`` unpacked under ``dest`` (None when git or the revision is not there)."""
    try:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", revision, "src"], check=True,
                                 capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return dest / "src"


def report(run_dir: Path, out: Path, src: Path, bootstrap: int) -> tuple[float, float, int]:
    """(seconds, peak MB, report.html bytes) of one `rescue report` in a fresh process with ``src`` first."""
    fresh_dir(out)
    env = {"PYTHONPATH": str(src)}
    child = run_child([sys.executable, "-m", "rescue", "report", str(run_dir), "--out", str(out),
                       "--bootstrap", str(bootstrap)], env=env)
    return child.seconds, child.peak_rss_mb, (out / "report.html").stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=None, help="release-format .jsonl (default: the real samples)")
    parser.add_argument("--scale", type=int, default=10, help="also N x the release (0: only the release size)")
    parser.add_argument("--before", default=BEFORE, help="the git revision to compare with ('' to skip)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--bertscore", action="store_true", help="score ER/VP with BERTScore too (slow at 10x)")
    args = parser.parse_args()
    source = default_source(args.data)
    work = Path(tempfile.mkdtemp(prefix="bench_report_"))
    now_src = REPO / "src"
    before_src = sources_at(args.before, work / "before") if args.before else None
    if args.before and before_src is None:
        print(f"(no sources for {args.before}: the 'before' column is skipped)")
    sizes = [RELEASE_SAMPLES] + ([RELEASE_SAMPLES * args.scale] if args.scale > 1 else [])
    print(f"(f) rescue report of the four offline baselines, {args.bootstrap} bootstrap resamples "
          f"({os.cpu_count()} cores; source {source.name}; before = {args.before or 'skipped'})")
    header = f"{'samples':>8} {'records':>8} | {'before s':>9} {'before MB':>10} | {'after s':>8} {'after MB':>9} | " \
             f"{'time x':>7} {'size x':>7} | {'peak RSS MB before/after':>25}"
    print(header)
    print("-" * len(header), flush=True)
    for samples in sizes:
        data = write_scaled(source, samples, work / f"data_{samples}.jsonl")
        run_dir = work / f"run_{samples}"
        command = [sys.executable, "-m", "rescue", "run", "--out", str(run_dir), "--data", str(data), "--quiet"]
        run_child(command + ([] if args.bertscore else ["--no-bertscore"]), env={"PYTHONPATH": str(now_src)})
        instances = sum(1 for _ in (run_dir / "predictions.jsonl").open(encoding="utf-8"))
        after = report(run_dir, work / f"after_{samples}", now_src, args.bootstrap)
        before = report(run_dir, work / f"before_{samples}", before_src, args.bootstrap) if before_src else None
        b_time, b_size = (f"{before[0]:9.1f}", f"{before[2] / 1e6:10.2f}") if before else (f"{'—':>9}", f"{'—':>10}")
        ratios = (f"{before[0] / after[0]:7.1f}", f"{before[2] / after[2]:7.1f}") if before else (f"{'—':>7}",) * 2
        memory = f"{before[1]:.0f} / {after[1]:.0f}" if before else f"— / {after[1]:.0f}"
        print(f"{samples:>8} {instances:>8} | {b_time} {b_size} | {after[0]:8.1f} {after[2] / 1e6:9.2f} | "
              f"{ratios[0]} {ratios[1]} | {memory:>25}", flush=True)
    print(f"\nfiles under {work}")


if __name__ == "__main__":
    main()
