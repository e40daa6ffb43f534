"""Every ``rescue build`` option, declared once: its name, type, default, command-line spelling and help.

:class:`BuildOptions` is the one declaration. ``rescue build`` makes its parameters from it
(``rescue.cli._build_cmds``), in the order written here, which is the order of ``rescue build --help``; the
library's :class:`~rescue.builder.BuildConfig`, :class:`~rescue.builder.AnnotateSettings` and
:class:`~rescue.builder.SessionSpec` take their defaults from it (``Flag.field`` names the field an option fills
where the names differ). tests/builder/test_build_options.py fails on a default written anywhere else.

This module imports nothing heavy (no media, no model layer), so ``rescue --help`` stays fast.
"""

# No `from __future__ import annotations`: the annotations below are read as objects (build_options).
import functools
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

from rescue.data.choices import BuildVideoInput


@dataclass(frozen=True)
class Flag:
    """How an option is spelled and explained on the command line; its type and default are the attribute's.

    ``flags`` empty: a positional argument. ``field``: the library field the option fills where its name differs.
    ``as_run``: the default is ``rescue run``'s option of the same name (its one declaration, in
    ``rescue.engine.run_options``); the library's field holds None for it and reads ``rescue.llm``'s default.
    """

    flags: tuple[str, ...]
    help: str | None = None
    field: str = ""
    as_run: bool = False


def _flag(*flags: str, help: str | None = None, field: str = "", as_run: bool = False) -> Flag:
    return Flag(flags, help, field, as_run)


class BuildOptions:
    """The options of ``rescue build``, in the order of its help."""

    out: Annotated[Path, _flag("--out", help="Output folder: draft.jsonl, manifest.json, clips/, build.log.")]
    video: Annotated[Optional[Path], _flag(help="A session video (or use --manifest for many).")] = None
    subs: Annotated[Optional[Path], _flag("--subs", help="The video's subtitles: .srt, .vtt or .ass.")] = None
    transcribe: Annotated[Optional[str], _flag(
        "--transcribe", help="No subtitles: transcribe the audio with this speech-to-text model (PRESET/ID such as "
        "openai/whisper-1, any id with --transcribe-base-url, or local/faster-whisper) into "
        "DIR/transcripts/<group>/<stem>.srt, then build from it.")] = None
    transcribe_model: Annotated[Optional[str], _flag(
        "--transcribe-model", help="local/faster-whisper: the weights' folder (or a faster-whisper model name).")] = None
    transcribe_base_url: Annotated[Optional[str], _flag(
        "--transcribe-base-url", help="An OpenAI-compatible endpoint with /audio/transcriptions for --transcribe.")] = None
    transcribe_api_key_env: Annotated[Optional[str], _flag(
        "--transcribe-api-key-env", help="The environment variable that holds --transcribe's key.")] = None
    language: Annotated[Optional[str], _flag(
        "--language", help="The spoken language for --transcribe (ISO 639-1, e.g. en); default: detected.")] = None
    chunk_seconds: Annotated[float, _flag(
        "--chunk-seconds", help="--transcribe: the longest audio sent in one request, in seconds (cut at silences; "
        "neighbouring chunks share up to 30 s).")] = 600.0
    subs_offset: Annotated[float, _flag(
        "--subs-offset", help="Seconds added to every subtitle time (negative: the subtitles run late).")] = 0.0
    no_align_check: Annotated[bool, _flag(  # the library's check_alignment is its opposite
        "--no-align-check", help="Skip checking the subtitles against the speech in the audio.",
        field="check_alignment")] = False
    scenario: Annotated[Optional[str], _flag("--scenario", help="couple or family.")] = None
    participants: Annotated[Optional[str], _flag(
        "--participants", help='The people on screen, e.g. "Alan,Evelyn" (the therapist is always Therapist).')] = None
    group: Annotated[Optional[str], _flag(
        "--group", help="The group of the sample ids <group>/<video stem>_segmentNN (default: alan_and_evelyn "
        "style).")] = None
    segments: Annotated[Optional[Path], _flag(
        "--segments", help="CSV start,end[,name] (seconds or HH:MM:SS.mmm); default: proposed and written to "
        "DIR/segments/.")] = None
    manifest: Annotated[Optional[Path], _flag(
        "--manifest", help="CSV video,subtitles,scenario,participants,group[,segments]: one line per video.")] = None
    speaker_map: Annotated[Optional[str], _flag(
        "--speaker-map", help='Subtitle speaker names for cast names, e.g. "Dr. Okafor=Therapist,M=Maya" '
        "(a manifest's speaker_map column, where given, wins).")] = None
    # Real transcripts let one line run into the next by a few frames; up to this much is trimmed, not refused.
    overlap_tolerance: Annotated[float, _flag(
        "--overlap-tolerance", help="Subtitle lines overlapping the next by at most this many seconds are "
        "trimmed (and reported), not refused.")] = 0.2
    min_duration: Annotated[float, _flag("--min-duration", help="Drop segments shorter than this (seconds).")] = 120.0
    propose_only: Annotated[bool, _flag("--propose-only", help="Write proposed segments and stop.")] = False
    model: Annotated[Optional[str], _flag(
        "--model", help="The pre-annotation model: PRESET/ID, any id with --base-url, or local/NAME. "
        "Without it the draft holds the subtitles only.")] = None
    base_url: Annotated[Optional[str], _flag("--base-url", help="An OpenAI-compatible endpoint for --model.")] = None
    api_key_env: Annotated[Optional[str], _flag(
        "--api-key-env", help="The environment variable that holds the key.")] = None
    video_input: Annotated[BuildVideoInput, _flag(
        "--video-input", help="clip (the segment as video_url), frames (JPEG frames inside each line) or "
        "none.")] = "frames"
    frame_rate: Annotated[float, _flag("--frame-rate", help="Frames per second inside a line.")] = 0.5
    frames_per_line: Annotated[int, _flag(
        "--frames-per-line", help="At most this many frames per line.", field="frames_per_cue")] = 2
    max_images: Annotated[int, _flag("--max-images", help="At most this many images per request.")] = 24
    frame_width: Annotated[int, _flag(
        "--frame-width", help="Frames, and the video sent with --video-input clip, are scaled down to this width "
        "(pixels).")] = 448
    window_lines: Annotated[int, _flag(
        "--window-lines", help="Subtitle lines per request; longer segments use overlapping windows.",
        field="window_cues")] = 40
    window_overlap: Annotated[int, _flag("--window-overlap", help="Lines shared by neighbouring windows.")] = 6
    max_tokens: Annotated[int, _flag("--max-tokens", help="Answer budget of an annotation request.")] = 12000
    temperature: Annotated[Optional[float], _flag("--temperature")] = None
    extra: Annotated[Optional[list[str]], _flag(
        "--extra", help="A provider extra, KEY=JSON; repeatable.", field="extra_body")] = None
    timeout: Annotated[float, _flag("--timeout", help="Seconds per request attempt.")] = 600.0
    retry_after_cap: Annotated[Optional[float], _flag(
        "--retry-after-cap", help="The longest Retry-After wait obeyed, in seconds; a request told to wait longer "
        "twice fails.", as_run=True)] = None
    max_answer_bytes: Annotated[Optional[int], _flag(
        "--max-answer-bytes", help="A larger answer is recorded as a request error, not stored.", as_run=True)] = None
    concurrency: Annotated[int, _flag("--concurrency", help="Most requests in flight.")] = 4
    max_retries: Annotated[int, _flag("--max-retries", help="Retries of a transient failure.")] = 5
    max_failures: Annotated[int, _flag(  # the library's None (never stop) is the command line's 0
        "--max-failures", help="Stop asking after this many failed requests (0: never).")] = 50
    max_cost: Annotated[Optional[float], _flag(
        "--max-cost", help="Stop (resumably) once this many dollars are spent.")] = None
    retry_errors: Annotated[bool, _flag("--retry-errors", help="Ask again what failed in earlier runs.")] = False
    prices: Annotated[Optional[Path], _flag("--prices", help="A price table (TOML) consulted first.")] = None
    row_clips: Annotated[bool, _flag("--row-clips", help="Also cut one clip per row.")] = False
    review_height: Annotated[Optional[int], _flag(
        "--review-height", help="Height of the clips for review, in lines (never above the source's); "
        "default: the source's, at most 720.")] = None
    dry_run: Annotated[bool, _flag(
        "--dry-run", help="Print the requests, images, tokens and cost; send and write nothing.")] = False
    quiet: Annotated[bool, _flag("--quiet", "-q")] = False


NO_DEFAULT: Any = object()  # a required option (--out)


@dataclass(frozen=True)
class BuildOption:
    """One declared option of ``rescue build``: its name, type (without the Flag), spelling and default."""

    name: str
    annotation: Any
    flag: Flag
    default: Any

    @property
    def field(self) -> str:
        """The library field the option fills."""
        return self.flag.field or self.name


@functools.cache
def build_options() -> tuple[BuildOption, ...]:
    """The options :class:`BuildOptions` declares, in order."""
    found = []
    for name, hint in vars(BuildOptions)["__annotations__"].items():
        annotation, flag = typing.get_args(hint)
        found.append(BuildOption(name, annotation, flag, getattr(BuildOptions, name, NO_DEFAULT)))
    return tuple(found)
