"""A killed build never leaves a broken file (issue #20, item 1).

``rescue build`` is killed (``kill -9`` and ``kill -TERM``, alternately) at 20 points of a build of a
three-minute session (six segments, so each point is cheap), most of them while an ffmpeg cut runs. After
each kill no ffmpeg of the build is left running and every clip in ``clips/`` decodes fully; the rerun
finishes and every clip it made decodes fully too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from media_helpers import conversation, make_video, write_srt

import rescue
from rescue.media import ffmpeg_exe, probe

pytestmark = pytest.mark.slow

SOURCES = Path(rescue.__file__).resolve().parents[1]  # the rescue under test, also in the killed process
SESSION = 170.0
SEGMENT = 28.0  # lines are 6 s with 1 s gaps from 0.5 s: a boundary every 28 s falls in a gap
SEGMENTS = 6
POINTS = 20
# (which cut to wait for, seconds after it started); None: a moment after the start, before any cut.
TRIGGERS = [(1, 0.0), (1, 0.3), (2, 0.1), (None, 0.5), (1, 0.6), (3, 0.0), (2, 0.4), (1, 0.15), (None, 1.5),
            (2, 0.0)]


def _children(pid: int) -> list[tuple[int, str]]:
    """Every process below ``pid`` (pid, command line); zombies have no command line and are left out."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        commands[int(entry.name)] = command
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent and commands[child]:
                found.append((child, commands[child]))
                frontier.append(child)
    return found


def _ffmpegs_of(folder: Path) -> list[int]:
    """ffmpeg processes anywhere on the machine that read or write inside ``folder`` and will go on doing so:
    a zombie, or one with a SIGKILL pending (what the parent-death signal sends), is already done."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().decode("utf-8", "replace")
                status = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines() if ":" in line)
            except OSError:
                continue
            if "ffmpeg" not in command or str(folder) not in command or status["State"].split()[0] in "ZX":
                continue
            pending = int(status["SigPnd"], 16) | int(status["ShdPnd"], 16)
            if not pending & (1 << (signal.SIGKILL - 1)):
                out.append(int(entry.name))
    return out


_DECODED: dict[tuple[str, int, int], bool] = {}


def _decodes_fully(path: Path, duration: float) -> bool:
    """Every frame and sample of ``path`` decodes without a single error, and it lasts ``duration`` (each
    file decoded once: a clip that stays in place is the same file at the next point)."""
    stat = path.stat()
    key = (str(path), stat.st_ino, stat.st_mtime_ns)
    if key not in _DECODED:
        _DECODED[key] = _decode(path, duration)
    return _DECODED[key]


def _decode(path: Path, duration: float) -> bool:
    result = subprocess.run([ffmpeg_exe(), "-hide_banner", "-nostdin", "-v", "error", "-i", str(path),
                             "-map", "0", "-f", "null", "-"], capture_output=True, check=False)
    if result.returncode != 0 or result.stderr.strip():
        return False
    info = probe(path)
    return info.has_video and info.has_audio and abs(info.duration - duration) < 0.5


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kill session")  # a space in the path, as labs have
    lines = conversation(SESSION)
    video = make_video(folder / "séance.mp4", SESSION, size="160x120", rate=25, speech=lines)
    subs = write_srt(folder / "séance.srt", lines)
    segments = folder / "segments.csv"
    segments.write_text("".join(f"{i * SEGMENT},{(i + 1) * SEGMENT}\n" for i in range(SEGMENTS)), encoding="utf-8")
    return video, subs, segments


def _command(session, out: Path) -> list[str]:
    video, subs, segments = session
    return [sys.executable, "-m", "rescue", "build", str(video), "--subs", str(subs), "--scenario", "couple",
            "--participants", "Alan,Evelyn", "--segments", str(segments), "--min-duration", "10", "--out", str(out),
            "--quiet"]


def _kill_at(command: list[str], env: dict[str, str], trigger: tuple[int | None, float], how: signal.Signals) -> bool:
    """Start the build, wait for the trigger, send ``how``; False when the build ended before the trigger."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    nth, delay = trigger
    seen: set[int] = set()
    started = time.monotonic()
    while process.poll() is None:
        if nth is None:
            if time.monotonic() - started >= delay:
                break
        else:
            seen |= {pid for pid, cmd in _children(process.pid) if "libx264" in cmd}
            if len(seen) >= nth:
                time.sleep(delay)
                break
        time.sleep(0.02)
    if process.poll() is not None:
        process.communicate()
        return False
    process.send_signal(how)
    _, err = process.communicate()
    assert process.returncode in (-signal.SIGKILL, 128 + signal.SIGTERM, -signal.SIGTERM), err.decode()[-2000:]
    return True


def test_kills_at_twenty_points_leave_no_broken_clip_and_no_ffmpeg(session, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SOURCES) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    clip_seconds = SEGMENT
    kills, orphans, decoded, made = 0, 0, 0, 0
    round_ = 0
    out = tmp_path / f"round {round_}"
    attempts = 0
    # A point counts when its kill landed: a build that ended before its trigger (the machine was quick, or the
    # folder had few cuts left) is tried again at the next trigger, so a loaded machine cannot thin the test out.
    while kills < POINTS and attempts < 3 * POINTS:
        point, attempts = kills, attempts + 1
        how = signal.SIGKILL if point % 2 == 0 else signal.SIGTERM
        nth, delay = TRIGGERS[attempts % len(TRIGGERS)]
        done = len(list((out / "clips").rglob("*.mp4"))) if (out / "clips").is_dir() else 0
        trigger = (None if nth is None else min(nth, SEGMENTS - done), delay)  # a cut this build will make
        if _kill_at(_command(session, out), env, trigger, how):
            kills += 1
        # Whatever the moment, nothing of the build runs on, and every clip in place is whole.
        left = _ffmpegs_of(out)
        orphans += len(left)
        assert not left, f"point {point} ({how.name}, {trigger}): ffmpeg still running: {left}"
        clips = sorted((out / "clips").rglob("*.mp4")) if (out / "clips").is_dir() else []
        for clip in clips:
            assert _decodes_fully(clip, clip_seconds), f"point {point} ({how.name}, {trigger}): {clip} is broken"
        if len(clips) == SEGMENTS:  # the kills of this folder made every clip: the next points start afresh
            decoded, made = decoded + len(clips), made + len(clips)
            round_ += 1
            out = tmp_path / f"round {round_}"
    # The last folder's rerun finishes (exit 0) and leaves no temporary behind.
    result = subprocess.run(_command(session, out), env=env, capture_output=True, check=False)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    clips = sorted((out / "clips").rglob("*.mp4"))
    assert len(clips) == SEGMENTS
    assert not [p for p in out.rglob(".*") if p.is_file() and p.name != ".rescue.lock"]
    decoded += sum(_decodes_fully(c, clip_seconds) for c in clips)
    made += len(clips)
    print(f"kill test: {kills} kills in {attempts} tries in {round_ + 1} build folders, {orphans} ffmpeg left running, "
          f"{decoded}/{made} clips decoded fully")
    assert kills == POINTS
    assert decoded == made > 0
