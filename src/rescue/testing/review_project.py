"""A review project folder for tests, benchmarks and demos, shaped like what ``rescue build`` writes:
draft.jsonl (release format), manifest.json, one synthetic H.264/AAC clip and one WebVTT per segment.

The clips are ffmpeg test patterns with a tone (imageio-ffmpeg's ffmpeg), as long as the segment's rows,
so seeking and looping behave as on real clips."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

# JsonObject is open here: the dataset file's raw rows, as tests edit them before they are read
from rescue.data.shapes import JsonObject
from rescue.data.loading import demo_path
from rescue.data.text import clock_time


def demo_samples() -> list[JsonObject]:
    return [json.loads(line) for line in demo_path().read_text(encoding="utf-8").splitlines() if line.strip()]


def webvtt(rows: list[JsonObject]) -> str:
    def clean(text: str) -> str:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("-->", "->")

    cues = [
        f"{row['row_index']}\n{clock_time(row['start_time'])} --> {clock_time(row['end_time'])}\n"
        f"<v {clean(str(row['primary_speaker']))}>{clean(str(row.get('dialogue_cleaned', '')))}\n"
        for row in rows
    ]
    return "WEBVTT\n\n" + "\n".join(cues)


def synthetic_clip(path: Path, seconds: float, *, size: str = "192x108", rate: int = 5) -> None:
    """An H.264/AAC MP4 test pattern with a sine tone, ``seconds`` long, moov atom first (for seeking)."""
    import imageio_ffmpeg

    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y",
         "-f", "lavfi", "-i", f"testsrc2=duration={seconds:.2f}:size={size}:rate={rate}",
         # 16 kHz, as speech is recorded (a 44.1 kHz tone is most of the clip's encoding CPU).
         "-f", "lavfi", "-i", f"sine=frequency=330:duration={seconds:.2f}:sample_rate=16000",
         "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", str(rate),
         "-c:a", "aac", "-b:a", "32k", "-shortest", "-movflags", "+faststart", str(path)],
        check=True,
    )


def make_review_project(
    root: Path,
    samples: list[JsonObject] | None = None,
    *,
    media: bool = True,
    problems: bool = True,
    max_seconds: float | None = None,
) -> Path:
    """Write a review project under ``root``. ``max_seconds`` trims each segment's rows (shorter clips)."""
    root.mkdir(parents=True, exist_ok=True)
    samples = [json.loads(json.dumps(s)) for s in (samples if samples is not None else demo_samples())]
    if max_seconds is not None:
        for sample in samples:
            sample["rows"] = [r for r in sample["rows"] if r["end_time"] <= max_seconds] or sample["rows"][:1]
            count = len(sample["rows"])
            for row in sample["rows"]:
                for name in ("relation_pattern_evidence_rows", "relation_cycle_evidence_rows"):
                    if isinstance(row.get(name), list):
                        row[name] = [i for i in row[name] if 1 <= i <= count]
    (root / "draft.jsonl").write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples), encoding="utf-8")
    if not media:
        return root
    segments = []
    for i, sample in enumerate(samples):
        stem = sample["sample_id"]
        clip, subtitles = f"clips/{stem}.mp4", f"clips/{stem}.vtt"
        end = max(r["end_time"] for r in sample["rows"])
        synthetic_clip(root / clip, end + 1.0)
        (root / subtitles).write_text(webvtt(sample["rows"]), encoding="utf-8")
        found = []
        if problems and i == 0 and len(sample["rows"]) >= 2:
            found = [{"row_index": 2, "field": "primary_speaker", "message": "two voices overlap; speaker uncertain"},
                     {"row_index": None, "field": None, "message": "subtitle track re-timed by +0.4 s"}]
        segments.append({
            "sample_id": sample["sample_id"], "scenario": sample["scenario"], "participants": sample["participants"],
            "source_video": f"videos/{stem}.mp4", "start": 0.0, "end": end + 1.0, "clip": clip, "subtitles": subtitles,
            "rows": [{k: r[k] for k in ("row_index", "start_time", "end_time")} |
                     {"text": r.get("dialogue_cleaned", ""), "speakers": [r["primary_speaker"]]} for r in sample["rows"]],
            "problems": found,
            "provenance": {"model": "synthetic", "prompt": "test"},
        })
    (root / "manifest.json").write_text(json.dumps({"version": 1, "segments": segments}, indent=1), encoding="utf-8")
    return root
