"""Loading release-sized data: read, validate and build samples for 191 samples (target: well under 1 s).

The real samples (or the demo data when they are absent) are repeated into the release's shape (174
couple + 17 family samples, about 7,000 rows and 6.5 MB like ``benchmark_191.jsonl``) and loaded
in-process with ``load_samples``, the call every command makes; ``rescue validate`` is also timed as a
fresh process, start-up included. Run: ``python benchmarks/bench_loading.py`` (``--uniform`` repeats
the source evenly instead, which with the real samples gives a heavier, family-rich file).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from _support import RELEASE_SAMPLES, default_source, print_table, rescue_command, run_child, write_scaled

from rescue.data.loading import load_samples
from rescue.data.stats import compute

TARGET_SECONDS = 1.0
RELEASE_SHAPE = {"couple": 174, "family": 17}


def write_release_shaped(source: Path, dest: Path) -> Path:
    """174 couple and 17 family samples, each scenario's source samples repeated in order (copies renamed)."""
    records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    with dest.open("w", encoding="utf-8") as out:
        for scenario, count in RELEASE_SHAPE.items():
            pool = [r for r in records if r["scenario"] == scenario]
            for n in range(count):
                record = dict(pool[n % len(pool)])
                if n >= len(pool):
                    record["sample_id"] = f"{record['sample_id']}_copy{n // len(pool)}"
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return dest


def _timed(call, repeats: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU seconds per repeat; CPU time stays meaningful on a busy machine."""
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        call()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def _cell(wall: list[float], cpu: list[float]) -> str:
    return f"{statistics.median(wall):.3f} s wall, {statistics.median(cpu):.3f} s CPU  (best {min(wall):.3f} s wall)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="release-format .jsonl to scale (default: the real samples)")
    parser.add_argument("--samples", type=int, default=RELEASE_SAMPLES)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--uniform", action="store_true", help="repeat the source evenly up to --samples")
    args = parser.parse_args()

    source = default_source(args.data)
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "data.jsonl"
        data = write_scaled(source, args.samples, target) if args.uniform else write_release_shaped(source, target)
        size_mb = data.stat().st_size / 1e6
        samples = load_samples(data)  # also warms imports, so the timings below are of the work itself
        rows = sum(len(s.rows) for s in samples)
        load, load_cpu = _timed(lambda: load_samples(data), args.repeats)
        stats, stats_cpu = _timed(lambda: compute(samples), args.repeats)
        child = run_child([*rescue_command(), "validate", "--data", str(data)], check=False)

    print(f"data: {len(samples)} samples, {rows:,} rows, {size_mb:.1f} MB (scaled from {source.name})")
    print_table(
        f"Timings (median of {args.repeats})",
        [
            ("load_samples (read + validate)", _cell(load, load_cpu)),
            ("stats.compute", _cell(stats, stats_cpu)),
            ("`rescue validate` process, start-up included", f"{child.seconds:.3f} s"),
        ],
    )
    verdict = "OK" if min(load) < TARGET_SECONDS else "TOO SLOW (is the machine busy? compare the CPU time)"
    print(f"target: load_samples under {TARGET_SECONDS:.1f} s (best wall time) -> {verdict}")


if __name__ == "__main__":
    main()
