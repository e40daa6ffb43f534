"""(#45) The public leaderboard: `rescue leaderboard build` of N bundles, the index page's size, its load in Chromium.

N scripted models (each answering a different share of the requests badly, so their answers differ) run on the
data, are submitted and added; then `rescue leaderboard build` runs as a fresh process beside `rescue report` of
the same runs (the reference: the same systems' tables, without the site), and Chromium loads the index page from
the folder ``--repeat`` times (time to the load event, least of the repeats).
Run: ``python benchmarks/bench_leaderboard.py [--entries 50] [--data FILE] [--samples N]``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from _support import default_source, print_table, rescue_command, run_arguments, run_child, write_scaled

from rescue.data.loading import load_samples
from rescue.tasks import TASKS
from rescue.testing import Reply, serve
from rescue.testing.oracle import OracleScript

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from submission_support import JUDGE_RATING, MostlyRight  # noqa: E402  (the tests' scripted model and judge)

CLOSED = "itp,rpp,stp,ssp,er,vp"


def _load_ms(index: Path, repeat: int) -> float:
    from playwright.sync_api import sync_playwright

    best = float("inf")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            started = time.perf_counter()
            page.goto(index.as_uri(), wait_until="load")
            best = min(best, (time.perf_counter() - started) * 1000)
            page.close()
        browser.close()
    return best


def main() -> None:
    parser = run_arguments(__doc__.splitlines()[0], samples=0, tasks=CLOSED, batch_size="1")
    parser.add_argument("--entries", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    source = default_source(args.data)
    env = {"OPENAI_API_KEY": "benchmark"}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        data = write_scaled(source, args.samples, work / "data.jsonl") if args.samples else source
        samples = load_samples(data)
        oracle = OracleScript(samples, [TASKS[t] for t in args.tasks.split(",")], batch_size=1)
        runs = []
        for n in range(args.entries):
            run = work / f"run-{n:02d}"
            with serve(MostlyRight(oracle, f"bench-{n}", salt=str(n))) as server, serve(Reply.json(JUDGE_RATING)) as judge:
                run_child([*rescue_command(), "run", "--model", f"bench-{n}", "--base-url", server.base_url,
                           "--judge", "bench-judge", "--judge-base-url", judge.base_url, "--data", str(data),
                           "--tasks", args.tasks, "--no-bertscore", "--out", str(run), "-q"], env=env, check=False)
            bundle = work / f"bench-{n:02d}.rescue.zip"
            run_child([*rescue_command(), "submit", str(run), "--out", str(bundle), "--data", str(data)], env=env)
            run_child([*rescue_command(), "leaderboard", "add", str(bundle), "--to", str(work / "entries"), "--data",
                       str(data)], env=env)
            runs.append(run)
        build = run_child([*rescue_command(), "leaderboard", "build", str(work / "entries"), "--out", str(work / "site")])
        report = run_child([*rescue_command(), "report", *map(str, runs), "--data", str(data), "--out",
                            str(work / "report"), "--no-html", "--quiet"], check=False)
        index = work / "site" / "index.html"
        size = index.stat().st_size
        site_bytes = sum(p.stat().st_size for p in (work / "site").rglob("*") if p.is_file())
        load = _load_ms(index, args.repeat)
    print_table(f"rescue leaderboard build of {args.entries} bundles (load {os.getloadavg()[0]:.1f})", [
        ("data", f"{source.name}" + (f", scaled to {args.samples} samples" if args.samples else "")),
        ("leaderboard build", f"{build.seconds:.1f} s wall, {build.cpu_s:.1f} CPU-s, peak {build.peak_rss_mb:.0f} MB"),
        ("rescue report of the same runs", f"{report.seconds:.1f} s wall, {report.cpu_s:.1f} CPU-s (the reference)"),
        ("index.html", f"{size / 1024:.0f} KiB (site: {site_bytes / 1e6:.1f} MB with every download)"),
        ("index load in Chromium", f"{load:.0f} ms to the load event (least of {args.repeat}, from the folder)"),
    ])


if __name__ == "__main__":
    main()
