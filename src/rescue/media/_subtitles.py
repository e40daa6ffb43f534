"""Subtitle cues: reading SRT, WebVTT and ASS through pysubs2, speakers from the cue text, and writing
re-timed WebVTT for a clip.

Times are kept exactly as the file states them: pysubs2 holds integer milliseconds, so
``00:01:40,000`` becomes ``100.0`` seconds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from rescue.data.text import clock_time
from rescue.media._steps import media_step, produce
from rescue.errors import SubtitleError as SubtitleError

SUBTITLE_FORMATS = {".srt": "srt", ".vtt": "vtt", ".ass": "ass", ".ssa": "ssa"}

# WebVTT voice spans (<v Alan>...) which pysubs2 strips: turned into "Alan: " prefixes first.
_VOICE = re.compile(r"<v(?:\.[^ \t>]*)?[ \t]+([^>]+)>")
# "Alan: text", "- Alan: text", "[Alan] text", "ALAN: text": a name of at most four words.
_PREFIX = re.compile(r"^\s*-?\s*(?:\[([^\]\n]{1,40})\]|([A-Z][\w.'\- ]{0,38}?)\s*:)\s+")

_INLINE_TURN = re.compile(r"\s+/\s+(?=-\s*\S)")


@dataclass(frozen=True)
class Cue:
    """One subtitle cue: its place in the file, times in seconds, text, and the speakers its lines name."""

    index: int  # 1-based position in the file
    start: float  # seconds
    end: float
    text: str  # speaker prefixes removed, lines joined by a space
    speakers: tuple[str, ...] = field(default_factory=tuple)
    # (speaker, text) per speaker when the cue's lines name several ("- Jon: ... / - Maya: ..."), else ()
    parts: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def shifted(self, offset: float) -> Cue:
        """The cue moved ``offset`` seconds earlier."""
        return replace(self, start=round(self.start - offset, 3), end=round(self.end - offset, 3))


def parse_timestamp(text: str) -> float:
    """``HH:MM:SS,mmm`` / ``HH:MM:SS.mmm`` / ``MM:SS.mmm`` / plain seconds → seconds.

    ``00:01:40,000`` is 100.0: every field counts, so minutes are never read as seconds.
    """
    raw = text.strip().replace(",", ".")
    if not raw:
        raise ValueError("empty time")
    parts = raw.split(":")
    if len(parts) > 3 or any(not p or not re.fullmatch(r"\d+(\.\d+)?", p) for p in parts):
        raise ValueError(f"{text!r} is not a time (seconds or HH:MM:SS.mmm)")
    if any("." in p for p in parts[:-1]) or any(int(p) >= 60 for p in parts[1:-1]) or (
        len(parts) > 1 and float(parts[-1]) >= 60
    ):
        raise ValueError(f"{text!r} is not a time (seconds or HH:MM:SS.mmm)")
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + float(part)
    return round(seconds, 3)


def _split_speakers(text: str) -> tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]]:
    speakers: list[str] = []
    lines = []
    parts: list[list[str]] = []  # [speaker, words...] per run of lines of one speaker
    # "- Jon: Hi. / - Maya: Hello." on one line is two lines of dialogue.
    for line in (piece for raw in text.splitlines() for piece in _INLINE_TURN.split(raw)):
        match = _PREFIX.match(line)
        if match:
            name = (match.group(1) or match.group(2)).strip()
            if name not in speakers:
                speakers.append(name)
            line = line[match.end():]
            if not parts or parts[-1][0] != name:
                parts.append([name])
        line = line.strip()
        if line:
            lines.append(line)
            if parts:
                parts[-1].append(line)
    said = tuple((part[0], " ".join(part[1:])) for part in parts if len(part) > 1)
    return " ".join(lines), tuple(speakers), said if len(speakers) > 1 and len(said) > 1 else ()


# A timing line of SRT or WebVTT ("00:00:01,000 --> 00:00:02,500") and the times of an ASS Dialogue line.
_TIMING = re.compile(r"^\s*(\S+)\s*-->\s*(\S+)")
_ASS_TIMES = re.compile(r"^\s*Dialogue:\s*[^,]*,\s*([^,]*),\s*([^,]*),")


def _raw_problems(path: Path, raw: str) -> list[str]:
    """What pysubs2 would read silently wrong, as FILE:LINE: a NUL or other control character (a binary or
    corrupted file), a negative time (pysubs2 drops the sign: -00:00:01,000 would be read as 1 s)."""
    problems: list[str] = []
    for number, line in enumerate(raw.split("\n"), start=1):
        where = f"{path}:{number}"
        bad = next((c for c in line if c in _CONTROLS), None)
        if bad is not None:
            problems.append(f"{where}: holds the control character {bad!r} (a binary or damaged file?)")
            continue
        timing = _TIMING.match(line) or _ASS_TIMES.match(line)
        if timing is None:
            continue
        start, end = timing.group(1), timing.group(2)
        if start.startswith("-") or end.startswith("-"):
            problems.append(f"{where}: negative time in {line.strip()!r}: times start at 00:00:00")
            continue
        if len(problems) >= 20:
            break
    return problems


_CONTROLS = frozenset(chr(c) for c in range(32) if chr(c) not in "\t\n\r") | {"\x7f"}


def load_cues(path: str | Path) -> list[Cue]:
    """Every non-empty cue of ``path`` in file order (SRT, WebVTT, ASS/SSA)."""
    import pysubs2

    path = Path(path)
    fmt = SUBTITLE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise SubtitleError(f"{path}: unknown subtitle format {path.suffix!r} (use .srt, .vtt or .ass)")
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SubtitleError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise SubtitleError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    problems = _raw_problems(path, raw)
    if problems:
        raise SubtitleError("\n".join(problems))
    if fmt == "vtt":
        raw = _VOICE.sub(lambda m: f"{m.group(1).strip()}: ", raw).replace("</v>", "")
    try:
        events = pysubs2.SSAFile.from_string(raw, format_=fmt)
    except Exception as exc:  # noqa: BLE001 - pysubs2 raises several unrelated types for malformed files
        raise SubtitleError(f"{path}: not a readable {fmt.upper()} file ({exc})") from None
    cues: list[Cue] = []
    for event in events:
        if event.is_comment:
            continue
        text, speakers, parts = _split_speakers(event.plaintext)
        if event.name.strip() and not speakers:  # ASS carries the speaker in the Name field
            speakers = (event.name.strip(),)
        if not text:
            continue
        cues.append(Cue(len(cues) + 1, event.start / 1000.0, event.end / 1000.0, text, speakers, parts))
    if not cues:
        raise SubtitleError(f"{path}: holds no subtitle cues")
    return cues


def webvtt(cues: Iterable[Cue]) -> str:
    """Cues as a WebVTT document, speakers as voice spans (``<v Alan>``), which browsers show."""
    blocks = ["WEBVTT", ""]
    for cue in cues:
        text = cue.text.replace("-->", "->")
        if len(cue.speakers) == 1:
            text = f"<v {cue.speakers[0]}>{text}"
        elif cue.speakers:
            text = f"<v {' & '.join(cue.speakers)}>{text}"
        blocks += [str(cue.index), f"{clock_time(max(0.0, cue.start))} --> {clock_time(max(0.0, cue.end))}", text, ""]
    return "\n".join(blocks)


def cues_in(cues: Iterable[Cue], start: float, end: float) -> list[Cue]:
    """The cues that start inside ``[start, end)``, renumbered from 1 and re-timed to a clip at ``start``."""
    inside = [cue for cue in cues if start <= cue.start < end]
    return [replace(cue.shifted(start), index=i) for i, cue in enumerate(inside, start=1)]


@media_step("retime", "a clip's cues as WebVTT, re-timed to the clip")
def write_webvtt(cues: list[Cue], out: str | Path) -> bool:
    """Write ``cues`` (already re-timed) to ``out``; False when it exists."""
    document = webvtt(cues)

    def make(tmp: Path) -> None:
        tmp.write_text(document, encoding="utf-8")

    return produce(out, make)
