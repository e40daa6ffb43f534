"""Scene cuts of a video from ffmpeg's scene filter (on a downscaled copy: the score barely changes and
decoding dominates)."""

from __future__ import annotations

import re
from pathlib import Path

from rescue.media._ffmpeg import MediaError, ffmpeg_exe, run_bounded
from rescue.media._probe import probe
from rescue.media._steps import media_step

_PTS = re.compile(r"pts_time:\s*([\d.]+)")
DEFAULT_THRESHOLD = 0.3


@media_step("scenes", "times of scene cuts in a video")
def scene_cuts(source: str | Path, *, threshold: float = DEFAULT_THRESHOLD) -> list[float]:
    """The times of scene changes in ``source`` above ``threshold`` (ffmpeg's scene score), in seconds."""
    command = [
        ffmpeg_exe(), "-hide_banner", "-nostdin", "-i", str(source), "-an", "-sn",
        "-vf", f"scale=160:-2,select='gt(scene,{threshold:g})',showinfo", "-f", "null", "-",
    ]
    result = run_bounded(command, step="scene detection", subject=source, duration=probe(source).duration)
    text = result.stderr.decode("utf-8", "replace")
    if result.returncode != 0:
        raise MediaError(f"{source}: scene detection failed: {text.strip()[-600:]}")
    cuts = []
    for line in text.splitlines():
        if "showinfo" in line and (match := _PTS.search(line)):
            cuts.append(round(float(match.group(1)), 3))
    return cuts
