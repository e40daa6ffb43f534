"""BERTScore pairs per second with the packaged MiniLM: this checkout's sources and an earlier revision's, side by side.

Distinct (candidate, reference) pairs of emotion descriptions from the data are scored by
``rescue.scoring.bertscore.bertscore_f1`` in a fresh process per run (the backbone loaded first, not timed), each
revision REPEAT times interleaved; the least CPU (user + system, every thread) and the least wall time of the
scoring itself are the figures, and every pair's F1 must be the same in both.
Run: ``python benchmarks/bench_bertscore.py --before REV`` (needs the bertscore extra).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _support import REPO, default_source, print_table
from bench_report import sources_at


def child(src: str, pairs_file: str, out: str) -> None:
    """Score the pairs of ``pairs_file`` with the sources under ``src``; write timings and scores to ``out``."""
    sys.path.insert(0, src)
    from rescue.scoring.bertscore import BertScoreConfig, _scorer, bertscore_f1

    pairs = json.loads(Path(pairs_file).read_text(encoding="utf-8"))
    config = BertScoreConfig.from_option(None)
    _scorer(config)  # the backbone loaded before the clock starts
    cpu, wall = time.process_time(), time.perf_counter()
    scores = bertscore_f1([c for c, _ in pairs], [r for _, r in pairs], config)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    Path(out).write_text(json.dumps({"cpu": cpu, "wall": wall, "scores": scores}), encoding="utf-8")


def emotion_pairs(source: Path, count: int) -> list[tuple[str, str]]:
    """Up to ``count`` distinct pairs of the data's emotion descriptions (each with another one further on)."""
    texts: list[str] = []
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.strip():
            for row in json.loads(line).get("rows", []):
                texts += [e["emotion_description"] for e in row.get("internal_emotion", []) if e.get("emotion_description")]
    texts = list(dict.fromkeys(texts))
    pairs = dict.fromkeys((texts[i], texts[(i * 7 + 3) % len(texts)]) for i in range(len(texts)))
    return list(pairs)[:count]


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(*sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="release-format .jsonl (default: the real samples)")
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", default="", help="also this git revision's sources")
    args = parser.parse_args()
    pairs = emotion_pairs(default_source(args.data), args.pairs)
    with tempfile.TemporaryDirectory(prefix="bench_bertscore_") as folder:
        work = Path(folder)
        sources = {"now": REPO / "src"}
        if args.before:
            before = sources_at(args.before, work / "before")
            if before is None:
                raise SystemExit(f"--before {args.before}: no such revision here")
            sources[args.before] = before
        pairs_file = work / "pairs.json"
        pairs_file.write_text(json.dumps(pairs), encoding="utf-8")
        best: dict[str, dict[str, float]] = {}
        scores: dict[str, list[float]] = {}
        load = [os.getloadavg()[0]]
        for _ in range(args.repeat):
            for name, src in sources.items():
                out = work / "out.json"
                subprocess.run([sys.executable, __file__, "--child", str(src), str(pairs_file), str(out)], check=True,
                               env={**os.environ, "PYTHONPATH": str(src)})
                result = json.loads(out.read_text(encoding="utf-8"))
                kept = best.setdefault(name, {"cpu": float("inf"), "wall": float("inf")})
                kept["cpu"], kept["wall"] = min(kept["cpu"], result["cpu"]), min(kept["wall"], result["wall"])
                scores[name] = result["scores"]
        load.append(os.getloadavg()[0])
    rows = [(f"{name}: {len(pairs)} pairs", f"{len(pairs) / b['cpu']:.1f} pairs per CPU-s ({b['cpu']:.2f} CPU-s), "
             f"{len(pairs) / b['wall']:.1f} pairs/s wall") for name, b in best.items()]
    if args.before:
        rows.append(("now / before, CPU", f"{best[args.before]['cpu'] / best['now']['cpu']:.2f}x as fast"))
        largest = max(abs(a - b) for a, b in zip(scores["now"], scores[args.before]))
        rows.append(("every F1 the same", "yes" if largest == 0 else f"NO: up to {largest:.2e} apart (float32 "
                     "sums in another order; over 1e-5 would be a change of what is computed)"))
    print_table(f"bench_bertscore: least of {args.repeat} interleaved runs each, load average "
                f"{load[0]:.1f} -> {load[1]:.1f}", rows)


if __name__ == "__main__":
    main()
