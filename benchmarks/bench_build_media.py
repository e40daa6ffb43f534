"""``rescue build``'s speed, side by side in one run:

(a) media preparation — rescue's cuts (``rescue.media.cut_clip``) and frame grabs (``grab_frames``) against
    the bare ffmpeg commands doing the same cuts and grabs (target: >= 90% of bare ffmpeg's speed);
(c) a whole ``rescue build`` without a model (a fresh process: start-up, input checks, cuts with their checks,
    subtitles, draft, manifest) of a multi-minute session against the bare ffmpeg commands with the same
    arguments, as seconds per video-minute; min / median / max of the ratio over alternating rounds, and the
    ratio of CPU time (user + system of every process, which a shared machine's load disturbs least);
(b) pre-annotation throughput — ``rescue build --model`` (a fresh process, start-up and input checks
    included) against the lean async client (``_clients.py lean``: raw httpx and a semaphore) sending the
    very requests rescue sent, to the scripted server answering after ``--latency`` (target: >= 85%).

    .venv/bin/python benchmarks/bench_build_media.py [--cuts 4] [--segments 12] [--latency 0.2]
        [--build-minutes 8] [--only a,b,c]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(Path(__file__).parent))

from _support import run_child  # noqa: E402
from media_helpers import conversation, make_video, write_srt  # noqa: E402

from rescue.media import cut_clip, ffmpeg_exe, grab_frames  # noqa: E402
from rescue.media._cut import cut_args  # noqa: E402
from rescue.media._frames import frame_args, frame_times, sampling  # noqa: E402


def _bare(args: list[str]) -> bytes:
    return subprocess.run([ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", *args],
                          capture_output=True, check=True).stdout


def media(folder: Path, cuts: int, seconds: float, spans: int, rounds: int) -> tuple[float, float]:
    video = make_video(folder / "source.mp4", cuts * seconds + 10, size="320x240", rate=25)
    windows = [(5 + i * seconds, 5 + (i + 1) * seconds) for i in range(cuts)]
    frames = [(t, t + 6.0) for t in range(10, int(cuts * seconds), max(1, int(cuts * seconds) // spans))][:spans]

    def ours() -> None:
        for i, (a, b) in enumerate(windows):
            cut_clip(video, a, b, folder / "ours" / f"clip{i}.mp4")
        for a, b in frames:
            grab_frames(video, a, b, rate=0.5, cap=3, width=448)

    def bare() -> None:
        (folder / "bare").mkdir(exist_ok=True)
        for i, (a, b) in enumerate(windows):
            _bare(cut_args(video, a, b, folder / "bare" / f"clip{i}.mp4"))
        for a, b in frames:
            times = frame_times(a, b, 0.5, 3)
            _bare(frame_args(video, *sampling(times), len(times), width=448))

    timings = {"ours": [], "bare": []}
    for round_ in range(rounds):  # alternate, so neither side always runs first; the best of each counts
        for name, job in (("bare", bare), ("ours", ours)) if round_ % 2 == 0 else (("ours", ours), ("bare", bare)):
            shutil.rmtree(folder / name, ignore_errors=True)
            start = time.perf_counter()
            job()
            timings[name].append(time.perf_counter() - start)
    return min(timings["ours"]), min(timings["bare"])


def whole_build(folder: Path, minutes: float, segment_minutes: float, rounds: int, size: str) -> dict[str, float]:
    """(c): ``rescue build`` (no model) against the bare ffmpeg commands it runs, the same arguments."""
    import statistics

    from rescue.media import probe
    from rescue.media._cut import REVIEW_CRF, review_height

    seconds = minutes * 60
    lines = conversation(seconds)
    video = make_video(folder / "session.mp4", seconds, size=size, rate=25, speech=lines)
    subs = write_srt(folder / "session.srt", lines)
    bounds = [0.0]
    step = segment_minutes * 60
    while bounds[-1] + step < seconds - 1:  # each boundary in the silence after a line
        bounds.append(next((a[1] + b[0]) / 2 for a, b in itertools.pairwise(lines) if a[1] >= bounds[-1] + step))
    bounds.append(seconds)
    (folder / "segments.csv").write_text("".join(f"{a},{b}\n" for a, b in itertools.pairwise(bounds)), encoding="utf-8")
    height = review_height(probe(video).height)
    env = {"PYTHONPATH": str(REPO / "src")}
    command = [sys.executable, "-m", "rescue", "build", str(video), "--subs", str(subs), "--scenario", "couple",
               "--participants", "Alan,Evelyn", "--segments", str(folder / "segments.csv"), "--min-duration", "10",
               "--quiet"]

    def bare(out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        for i, (a, b) in enumerate(itertools.pairwise(bounds)):
            _bare(cut_args(video, a, b, out / f"clip{i}.mp4", height=height, crf=REVIEW_CRF))

    ratios, ours_all, bare_all, cpu_ratios = [], [], [], []
    for round_ in range(rounds):  # alternate which runs first; the machine may be shared
        timings, cpu = {}, {}
        order = ("bare", "ours") if round_ % 2 == 0 else ("ours", "bare")
        for name in order:
            out = folder / f"{name}{round_}"
            used = _children_cpu()
            start = time.perf_counter()
            if name == "ours":
                run_child([*command, "--out", str(out)], env=env)
            else:
                bare(out)
            timings[name] = time.perf_counter() - start
            cpu[name] = _children_cpu() - used
            shutil.rmtree(out, ignore_errors=True)
        ours_all.append(timings["ours"] / minutes)
        bare_all.append(timings["bare"] / minutes)
        ratios.append(timings["ours"] / timings["bare"])
        cpu_ratios.append(cpu["ours"] / cpu["bare"])
        print(f"    round {round_}: rescue {timings['ours']:.2f} s, bare {timings['bare']:.2f} s, ratio {ratios[-1]:.2f}; "
              f"CPU {cpu['ours']:.2f} s / {cpu['bare']:.2f} s; load {os.getloadavg()[0]:.1f}", flush=True)
    return {"segments": len(bounds) - 1, "ours_min": min(ours_all), "bare_min": min(bare_all),
            "ratio_min": min(ratios), "ratio_median": statistics.median(ratios), "ratio_max": max(ratios),
            "cpu_ratio_median": statistics.median(cpu_ratios)}


def _children_cpu() -> float:
    """CPU seconds (user + system) of every child waited for so far, the ffmpeg below rescue included."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def annotation(folder: Path, segments: int, sessions: int, latency: float, concurrency: int,
               rounds: int) -> dict[str, float]:
    from rescue.testing.drafts import draft_script
    from rescue.testing.openai_server import serve

    seconds = 150.0
    lines = conversation(segments * seconds)
    video = make_video(folder / "session.mp4", segments * seconds, size="64x48", rate=2)
    subs = write_srt(folder / "session.srt", lines)
    bounds = [0.0]
    for k in range(1, segments):  # a boundary in the silence after each 150 s
        bounds.append(next((a[1] + b[0]) / 2 for a, b in itertools.pairwise(lines) if a[1] >= k * seconds))
    bounds.append(segments * seconds)
    (folder / "segments.csv").write_text("".join(f"{a},{b}\n" for a, b in itertools.pairwise(bounds)), encoding="utf-8")
    # Many sessions (the same recording under different group names) give enough requests that start-up,
    # paid once by both clients, does not decide the ratio.
    rows = [f"{video},{subs},couple,Alan;Evelyn,group{n:02d},{folder / 'segments.csv'}" for n in range(sessions)]
    (folder / "sessions.csv").write_text("video,subtitles,scenario,participants,group,segments\n" + "\n".join(rows) + "\n",
                                         encoding="utf-8")
    env = {"PYTHONPATH": str(REPO / "src"), "OPENAI_API_KEY": "benchmark"}
    base = [sys.executable, "-m", "rescue", "build", "--manifest", str(folder / "sessions.csv"), "--min-duration", "60",
            "--video-input", "none", "--window-lines", "8", "--window-overlap", "2", "--concurrency", str(concurrency),
            "--quiet"]
    run_child([*base, "--out", str(folder / "media")], env=env)  # clips cut once, outside the timing
    best: dict[str, float] = {}
    with serve(script=draft_script(), latency=latency) as server:
        for round_ in range(rounds):  # alternating rounds; the best of each counts (the machine is shared)
            out = folder / f"timed{round_}"
            shutil.copytree(folder / "media", out, ignore=shutil.ignore_patterns("work", "draft.jsonl", "manifest.json"))
            spawned = time.monotonic()
            ours = run_child([*base, "--out", str(out), "--model", "bench-model", "--base-url", server.base_url], env=env)
            exited = time.monotonic()
            received = [r.received_at for r in server.requests]
            bodies = [r.body for r in server.requests]
            server.reset()
            path = folder / "bodies.jsonl"
            path.write_text("".join(json.dumps(b) + "\n" for b in bodies), encoding="utf-8")
            lean = run_child([sys.executable, str(Path(__file__).with_name("_clients.py")), "lean", server.base_url,
                              str(path), str(concurrency)])
            server.reset()
            if ours.seconds < best.get("ours", float("inf")):
                best.update(ours=ours.seconds, before_first=min(received) - spawned, after_last=exited - max(received))
            best["lean"] = min(lean.seconds, best.get("lean", float("inf")))
    return {"requests": len(bodies), **best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cuts", type=int, default=4, help="segments cut from the source")
    parser.add_argument("--cut-seconds", type=float, default=60.0)
    parser.add_argument("--spans", type=int, default=20, help="subtitle spans to grab frames from")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of (a); the best of each counts")
    parser.add_argument("--segments", type=int, default=12, help="segments per session")
    parser.add_argument("--sessions", type=int, default=8, help="sessions pre-annotated (copies of one recording)")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--build-minutes", type=float, default=8.0, help="(c): the session's length")
    parser.add_argument("--segment-minutes", type=float, default=2.0, help="(c): about this long each")
    parser.add_argument("--build-size", default="640x360", help="(c): the session's picture size")
    parser.add_argument("--only", default="a,b,c", help="which parts to run, e.g. a,c")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        folder = Path(tmp)
        for name in "abc":
            (folder / name).mkdir()
        if "a" in parts:
            ours, bare = media(folder / "a", args.cuts, args.cut_seconds, args.spans, args.rounds)
            print(f"(a) media: {args.cuts} cuts of {args.cut_seconds:g} s (320x240, 25 fps) + {args.spans} frame grabs")
            print(f"    rescue.media {ours:6.2f} s | bare ffmpeg {bare:6.2f} s | rescue at {bare / ours:6.1%} of bare "
                  "ffmpeg's speed (target >= 90%)")
        if "c" in parts:
            built = whole_build(folder / "c", args.build_minutes, args.segment_minutes, args.rounds, args.build_size)
            print(f"(c) rescue build (no model) of a {args.build_minutes:g}-minute session ({args.build_size}, 25 fps, "
                  f"{built['segments']} segments) against the same ffmpeg cuts run bare, {args.rounds} rounds")
            print(f"    rescue build {built['ours_min']:6.2f} s per video-minute | bare ffmpeg {built['bare_min']:6.2f} s "
                  f"(best rounds) | rescue's time / bare's: {built['ratio_min']:.2f} / {built['ratio_median']:.2f} / "
                  f"{built['ratio_max']:.2f} (min / median / max; target <= 1.11, i.e. >= 90% of the speed); "
                  f"CPU time's: {built['cpu_ratio_median']:.2f} (median; what a loaded machine blurs least)")
        if "b" not in parts:
            return
        result = annotation(folder / "b", args.segments, args.sessions, args.latency, args.concurrency,
                            max(1, args.rounds - 1))
        n = result["requests"]
        print(f"(b) pre-annotation: {args.sessions} x {args.segments} segments, {n} requests, server latency {args.latency:g} s, "
              f"concurrency {args.concurrency}")
        print(f"    rescue build {n / result['ours']:6.1f} req/s ({result['ours']:.2f} s) | lean client "
              f"{n / result['lean']:6.1f} req/s ({result['lean']:.2f} s) | rescue at {result['lean'] / result['ours']:6.1%} "
              "of the lean client (target >= 85%)")
        print(f"    rescue: {result['before_first']:.2f} s from spawn to the first request (start-up, input checks), "
              f"{result['after_last']:.2f} s from the last request to exit")


if __name__ == "__main__":
    main()
