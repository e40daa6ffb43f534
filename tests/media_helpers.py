"""Media the tests make themselves: synthetic video with speech-like audio (ffmpeg lavfi; espeak-ng
speech where installed) and subtitle files written from cue lists."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from rescue.media import ffmpeg_exe

# Voiced bursts (a wobbling pitch, syllable-rate loudness) and silence where `speaking(t)` is 0.
_VOICE = "sin(2*PI*(140+40*sin(2*PI*3*t))*t)*(0.4+0.4*sin(2*PI*4*t))"


def make_video(path: Path, duration: float, *, scene_at: float | None = None, size: str = "160x120",
               rate: int = 10, silences: Sequence[tuple[float, float]] = (), speech: Sequence[Line] = ()) -> Path:
    """``duration`` seconds of moving test pattern (a different pattern after ``scene_at``) with
    speech-like audio, silent inside ``silences``; with ``speech`` lines and espeak-ng installed, each line
    is spoken by espeak-ng at its start time instead."""
    if speech and espeak_available():
        audio_file = _speech_track(path.with_suffix(".speech.wav"), duration, speech)
        return _mux(path, duration, scene_at, size, rate, ["-i", str(audio_file)])
    quiet = "+".join(f"between(t,{a},{b})" for a, b in silences) or "0"
    audio = f"aevalsrc='({_VOICE})*(1-gte({quiet},1))':s=16000:d={duration}"
    return _mux(path, duration, scene_at, size, rate, ["-f", "lavfi", "-i", audio])


def _speech_track(path: Path, duration: float, lines: Sequence[Line]) -> Path:
    """The lines spoken by espeak-ng, each placed at its start time, in one 16 kHz WAV."""
    folder = path.with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    inputs, delays = [], []
    for n, (start, _end, _who, text) in enumerate(lines):
        wav = folder / f"line{n:03d}.wav"
        subprocess.run(["espeak-ng", "-s", "170", "-w", str(wav), text], check=True, capture_output=True)
        inputs += ["-i", str(wav)]
        delays.append(f"[{n}:a]adelay={round(start * 1000)}:all=1[a{n}]")
    mix = ";".join(delays) + ";" + "".join(f"[a{n}]" for n in range(len(lines))) + \
        f"amix=inputs={len(lines)}:normalize=0,apad,atrim=0:{duration}[out]"
    subprocess.run([ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y", *inputs, "-filter_complex", mix,
                    "-map", "[out]", "-ar", "16000", "-ac", "1", str(path)], check=True)
    return path


def _mux(path: Path, duration: float, scene_at: float | None, size: str, rate: int, audio_input: list[str]) -> Path:
    first = scene_at if scene_at is not None else duration
    video = [f"testsrc2=size={size}:rate={rate}:duration={first}"]
    if scene_at is not None:
        video.append(f"smptebars=size={size}:rate={rate}:duration={duration - scene_at}")
    inputs: list[str] = []
    for source in video:
        inputs += ["-f", "lavfi", "-i", source]
    inputs += audio_input
    concat = "".join(f"[{i}:v]" for i in range(len(video))) + f"concat=n={len(video)}:v=1:a=0[v]"
    command = [ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y", *inputs, "-filter_complex", concat,
               "-map", "[v]", "-map", f"{len(video)}:a", "-c:v", "libx264", "-preset", "ultrafast",
               "-g", "50", "-c:a", "aac", "-aac_coder", "fast", "-t", str(duration), str(path)]  # fast: 40 % less CPU
    subprocess.run(command, check=True)
    return path


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def _stamp(seconds: float, sep: str) -> str:
    millis = round(seconds * 1000)
    h, rest = divmod(millis, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


Line = tuple[float, float, str, str]  # start, end, speaker, text


def write_srt(path: Path, lines: Sequence[Line]) -> Path:
    blocks = [f"{i}\n{_stamp(a, ',')} --> {_stamp(b, ',')}\n{who + ': ' if who else ''}{text}\n"
              for i, (a, b, who, text) in enumerate(lines, start=1)]
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


def write_vtt(path: Path, lines: Sequence[Line]) -> Path:
    blocks = ["WEBVTT\n"] + [f"{_stamp(a, '.')} --> {_stamp(b, '.')}\n{f'<v {who}>' if who else ''}{text}\n"
                             for a, b, who, text in lines]
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


def write_ass(path: Path, lines: Sequence[Line]) -> Path:
    def ass_time(t: float) -> str:
        cs = round(t * 100)
        h, rest = divmod(cs, 360_000)
        m, rest = divmod(rest, 6000)
        s, c = divmod(rest, 100)
        return f"{h}:{m:02d}:{s:02d}.{c:02d}"

    head = ("[Script Info]\nScriptType: v4.00+\n\n[V4+ Styles]\nFormat: Name, Fontname, Fontsize\nStyle: Default,Arial,20\n\n"
            "[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n")
    events = [f"Dialogue: 0,{ass_time(a)},{ass_time(b)},Default,{who},0,0,0,,{text}" for a, b, who, text in lines]
    path.write_text(head + "\n".join(events) + "\n", encoding="utf-8")
    return path


def conversation(duration: float, *, speakers: Sequence[str] = ("Alan", "Therapist", "Evelyn", "Therapist"),
                 turn: float = 6.0, gap: float = 1.0, long_gaps: Sequence[float] = ()) -> list[Line]:
    """Alternating lines of ``turn`` seconds separated by ``gap``; a 6 s silence at each of ``long_gaps``."""
    lines: list[Line] = []
    t = 0.5
    n = 0
    while t + turn <= duration - 0.5:
        if any(t <= g < t + turn + gap for g in long_gaps):
            t += 6.0
        who = speakers[n % len(speakers)]
        lines.append((round(t, 3), round(t + turn, 3), who, f"Line number {n + 1} said by {who.lower()} today."))
        t += turn + gap
        n += 1
    return lines
