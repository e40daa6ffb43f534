"""(e) Video mode's media preparation: every frame all six tasks send for a session, made once.

A synthetic 640x360, 25 fps H.264 video with 10 s between key frames (like broadcast recordings) is cut
to the timing of a demo session; video mode's store makes every frame its instances need (frames mode,
the defaults: 1 per second, at most 16 per request). Side by side, in one run: the same frames grabbed
the plain way, one ``ffmpeg -ss T -i VIDEO -frames:v 1`` per frame, and the rerun that finds them all
made. Run: ``python benchmarks/bench_video_media.py``.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from _support import print_table

from rescue.data.loading import load_samples
from rescue.media import ffmpeg_exe
from rescue.tasks import get_task
from rescue.tasks import TASK_NAMES
from rescue.video import VideoContext, VideoOptions


def make_video(path: Path, seconds: float) -> None:
    subprocess.run([ffmpeg_exe(), "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=s=640x360:r=25:d={seconds}",
                    "-c:v", "libx264", "-preset", "ultrafast", "-g", "250", "-pix_fmt", "yuv420p", str(path)],
                   check=True)


def grab_one_by_one(video: Path, times: list[float], out: Path, size: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for n, at in enumerate(times):
        subprocess.run([ffmpeg_exe(), "-v", "error", "-y", "-ss", f"{at:.6f}", "-i", str(video), "-frames:v", "1",
                        "-vf", f"scale={size}", "-q:v", "4", str(out / f"{n:06d}.jpg")], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="ffmpeg processes at once (both ways)")
    args = parser.parse_args()
    sample = load_samples(None)[0]
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        root = work / "media"
        stem = Path(sample.source_file).with_suffix(".mp4")
        video = root / stem.parent.name / stem.name
        video.parent.mkdir(parents=True)
        make_video(video, sample.rows[-1].end_time + 1)
        options = VideoOptions(media_root=str(root), workers=args.workers)
        tasks = {name: get_task(name) for name in TASK_NAMES}
        work_items = {name: (task, task.build([sample])) for name, task in tasks.items()}

        context = VideoContext.locate(options, [sample], work / "store")
        started = time.perf_counter()
        summary = context.prepare(work_items, None)
        batched = time.perf_counter() - started
        info = context.infos[sample.sample_id]
        indices = sorted({pick.index for name, (task, instances) in work_items.items() for i in instances
                          for pick in context.plan(task, i, None).frames})
        started = time.perf_counter()
        again = VideoContext.locate(options, [sample], work / "store").prepare(work_items, None)
        rerun = time.perf_counter() - started

        from concurrent.futures import ThreadPoolExecutor

        from rescue.video._store import scaled_size

        width, height = scaled_size(info.width, info.height, options.frame_size)
        times = [(i - 0.25) / info.fps for i in indices]
        parts = [times[k :: args.workers] for k in range(args.workers)]
        started = time.perf_counter()
        with ThreadPoolExecutor(args.workers) as pool:
            list(pool.map(lambda k: grab_one_by_one(video, parts[k], work / f"plain{k}", f"{width}:{height}"),
                          range(args.workers)))
        plain = time.perf_counter() - started

    print_table(
        f"(e) media for all six tasks of one session ({sample.rows[-1].end_time:.0f} s, {summary.requests} requests, "
        f"{summary.frames} frames sent, {len(indices)} distinct), {args.workers} workers",
        [
            ("rescue's store (one decode per run of frames)", f"{batched:.2f} s, {summary.made} frames made"),
            ("one ffmpeg seek per frame", f"{plain:.2f} s  ->  rescue is {plain / batched:.1f}x faster"),
            ("rerun (all found in the store)", f"{rerun:.2f} s, {again.made} made, {again.reused} reused"),
            ("frames sent per frame made", f"{summary.frames / max(1, summary.made):.1f}"),
        ],
    )


if __name__ == "__main__":
    main()
