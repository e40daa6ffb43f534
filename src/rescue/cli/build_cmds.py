"""``rescue build``: a thin wrapper over :func:`rescue.builder.build`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from rescue.cli.app import app, console, err_console
from rescue.errors import EXIT_ERROR, EXIT_INCOMPLETE

if TYPE_CHECKING:
    from rescue.builder import BuildConfig, BuildOutcome
    from rescue.builder.inputs import SessionSpec


@app.command("build")
def build_command(
    out: Annotated[Path, typer.Option("--out", help="Output folder: draft.jsonl, manifest.json, clips/, build.log.")],
    video: Annotated[Path | None, typer.Argument(help="A session video (or use --manifest for many).")] = None,
    subs: Annotated[Path | None, typer.Option("--subs", help="The video's subtitles: .srt, .vtt or .ass.")] = None,
    transcribe: Annotated[str | None, typer.Option(
        "--transcribe", help="No subtitles: transcribe the audio with this speech-to-text model (PRESET/ID such as "
        "openai/whisper-1, any id with --transcribe-base-url, or local/faster-whisper) into "
        "DIR/transcripts/<group>/<stem>.srt, then build from it.")] = None,
    transcribe_model: Annotated[str | None, typer.Option(
        "--transcribe-model", help="local/faster-whisper: the weights' folder (or a faster-whisper model name).")] = None,
    transcribe_base_url: Annotated[str | None, typer.Option(
        "--transcribe-base-url", help="An OpenAI-compatible endpoint with /audio/transcriptions for --transcribe.")] = None,
    transcribe_api_key_env: Annotated[str | None, typer.Option(
        "--transcribe-api-key-env", help="The environment variable that holds --transcribe's key.")] = None,
    language: Annotated[str | None, typer.Option(
        "--language", help="The spoken language for --transcribe (ISO 639-1, e.g. en); default: detected.")] = None,
    chunk_seconds: Annotated[float, typer.Option(
        "--chunk-seconds", help="--transcribe: the longest audio sent in one request, in seconds (cut at silences; "
        "neighbouring chunks share up to 30 s).")] = 600.0,
    subs_offset: Annotated[float, typer.Option(
        "--subs-offset", help="Seconds added to every subtitle time (negative: the subtitles run late).")] = 0.0,
    no_align_check: Annotated[bool, typer.Option(
        "--no-align-check", help="Skip checking the subtitles against the speech in the audio.")] = False,
    scenario: Annotated[str | None, typer.Option("--scenario", help="couple or family.")] = None,
    participants: Annotated[str | None, typer.Option(
        "--participants", help='The people on screen, e.g. "Alan,Evelyn" (the therapist is always Therapist).')] = None,
    group: Annotated[str | None, typer.Option(
        "--group", help="The group of the sample ids <group>/<video stem>_segmentNN (default: alan_and_evelyn style).")] = None,
    segments: Annotated[Path | None, typer.Option(
        "--segments", help="CSV start,end[,name] (seconds or HH:MM:SS.mmm); default: proposed and written to DIR/segments/.")] = None,
    manifest: Annotated[Path | None, typer.Option(
        "--manifest", help="CSV video,subtitles,scenario,participants,group[,segments]: one line per video.")] = None,
    speaker_map: Annotated[str | None, typer.Option(
        "--speaker-map", help='Subtitle speaker names for cast names, e.g. "Dr. Okafor=Therapist,M=Maya" '
        "(a manifest's speaker_map column, where given, wins).")] = None,
    overlap_tolerance: Annotated[float, typer.Option(
        "--overlap-tolerance", help="Subtitle lines overlapping the next by at most this many seconds are "
        "trimmed (and reported), not refused.")] = 0.2,
    min_duration: Annotated[float, typer.Option("--min-duration", help="Drop segments shorter than this (seconds).")] = 120.0,
    propose_only: Annotated[bool, typer.Option("--propose-only", help="Write proposed segments and stop.")] = False,
    model: Annotated[str | None, typer.Option(
        "--model", help="The pre-annotation model: PRESET/ID, any id with --base-url, or local/NAME. "
        "Without it the draft holds the subtitles only.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="An OpenAI-compatible endpoint for --model.")] = None,
    api_key_env: Annotated[str | None, typer.Option("--api-key-env", help="The environment variable that holds the key.")] = None,
    video_input: Annotated[str, typer.Option(
        "--video-input", help="clip (the segment as video_url), frames (JPEG frames inside each line) or none.")] = "frames",
    frame_rate: Annotated[float, typer.Option("--frame-rate", help="Frames per second inside a line.")] = 0.5,
    frames_per_line: Annotated[int, typer.Option("--frames-per-line", help="At most this many frames per line.")] = 2,
    max_images: Annotated[int, typer.Option("--max-images", help="At most this many images per request.")] = 24,
    frame_width: Annotated[int, typer.Option("--frame-width", help="Frames, and the video sent with --video-input clip, are scaled down to this width (pixels).")] = 448,
    window_lines: Annotated[int, typer.Option("--window-lines", help="Subtitle lines per request; longer segments use overlapping windows.")] = 40,
    window_overlap: Annotated[int, typer.Option("--window-overlap", help="Lines shared by neighbouring windows.")] = 6,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="Answer budget of an annotation request.")] = 12000,
    temperature: Annotated[float | None, typer.Option("--temperature")] = None,
    extra: Annotated[list[str] | None, typer.Option("--extra", help="A provider extra, KEY=JSON; repeatable.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per request attempt.")] = 600.0,
    retry_after_cap: Annotated[float, typer.Option(
        "--retry-after-cap", help="The longest Retry-After wait obeyed, in seconds; a request told to wait longer "
        "twice fails.")] = 300.0,
    max_answer_bytes: Annotated[int, typer.Option(
        "--max-answer-bytes", help="A larger answer is recorded as a request error, not stored.")] = 8 * 1024 * 1024,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Most requests in flight.")] = 4,
    max_retries: Annotated[int, typer.Option("--max-retries", help="Retries of a transient failure.")] = 5,
    max_failures: Annotated[int, typer.Option("--max-failures", help="Stop asking after this many failed requests (0: never).")] = 50,
    max_cost: Annotated[float | None, typer.Option("--max-cost", help="Stop (resumably) once this many dollars are spent.")] = None,
    retry_errors: Annotated[bool, typer.Option("--retry-errors", help="Ask again what failed in earlier runs.")] = False,
    prices: Annotated[Path | None, typer.Option("--prices", help="A price table (TOML) consulted first.")] = None,
    row_clips: Annotated[bool, typer.Option("--row-clips", help="Also cut one clip per row.")] = False,
    review_height: Annotated[int | None, typer.Option(
        "--review-height", help="Height of the clips for review, in lines (never above the source's); "
        "default: the source's, at most 720.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the requests, images, tokens and cost; send and write nothing.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Cut session videos into segments and pre-annotate them into a draft release for review."""
    from rescue.builder import AnnotateSettings, BuildConfig, build

    _check_options(video_input, review_height, overlap_tolerance)
    if not 10 <= chunk_seconds < float("inf"):
        from rescue.builder.inputs import BuildInputError

        raise BuildInputError([f"--chunk-seconds {chunk_seconds:g}: give at least 10 seconds"])
    specs = _session_specs(out, video, subs, transcribe, scenario, participants, group, segments, manifest,
                           speaker_map, overlap_tolerance, subs_offset)
    settings = AnnotateSettings(video_input=video_input, frame_rate=frame_rate,  # type: ignore[arg-type]
                                frames_per_cue=frames_per_line, max_images=max_images, frame_width=frame_width,
                                window_cues=window_lines, window_overlap=window_overlap, max_tokens=max_tokens,
                                temperature=temperature)
    config = BuildConfig(
        out=out, sessions=specs, min_duration=min_duration, model=model, base_url=base_url, api_key_env=api_key_env,
        annotate=settings, extra_body=_extras(extra), timeout=timeout, concurrency=concurrency,
        max_retries=max_retries, max_failures=max_failures or None, max_cost=max_cost, retry_errors=retry_errors,
        prices=None if prices is None else str(prices), row_clips=row_clips, dry_run=dry_run, propose_only=propose_only,
        review_height=review_height, retry_after_cap=retry_after_cap, max_answer_bytes=max_answer_bytes,
        transcribe=transcribe, transcribe_model=transcribe_model, transcribe_base_url=transcribe_base_url,
        transcribe_api_key_env=transcribe_api_key_env, language=language, check_alignment=not no_align_check,
        chunk_seconds=chunk_seconds,
    )
    from rescue.proc import ending_children_on_signals

    # SIGTERM (timeout, systemd, a scheduler) stops the build as Ctrl-C does: its ffmpeg children die with it.
    with ending_children_on_signals():
        outcome = build(config, echo=lambda message: err_console.print(message, highlight=False, markup=False))
    _report(config, outcome, console.print if not quiet else (lambda *a, **k: None))


def _extras(extra: list[str] | None) -> dict[str, object]:
    if not extra:  # parsing imports the run engine (for its error): a third of a second of start-up
        return {}
    from rescue.cli.run_cmds import _parse_extras

    return _parse_extras(list(extra))


def _check_options(video_input: str, review_height: int | None, overlap_tolerance: float) -> None:
    from rescue.data.choices import BUILD_VIDEO_INPUTS
    from rescue.builder.inputs import BuildInputError

    if video_input not in BUILD_VIDEO_INPUTS:
        raise BuildInputError([f"--video-input {video_input!r}: choose one of {', '.join(BUILD_VIDEO_INPUTS)}"])
    if review_height is not None and review_height < 16:
        raise BuildInputError([f"--review-height {review_height}: give a height of at least 16 lines"])
    if overlap_tolerance < 0:
        raise BuildInputError([f"--overlap-tolerance {overlap_tolerance:g}: give 0 or more seconds"])


def _session_specs(out: Path, video: Path | None, subs: Path | None, transcribe: str | None, scenario: str | None,
                   participants: str | None, group: str | None, segments: Path | None, manifest: Path | None,
                   speaker_map: str | None, overlap_tolerance: float, subs_offset: float) -> list[SessionSpec]:
    """The sessions to build: the rows of ``--manifest``, or the one VIDEO with its options."""
    from rescue.builder.inputs import (
        BuildInputError,
        SessionSpec,
        check_group,
        check_scenario,
        check_video_name,
        default_group,
        parse_participants,
        parse_speaker_map,
        read_sessions_csv,
    )

    if manifest is not None:
        if video is not None:
            raise BuildInputError(["give either VIDEO or --manifest, not both"])
        default_map = parse_speaker_map(speaker_map, "--speaker-map", None) if speaker_map else ()
        specs = read_sessions_csv(manifest, default_map=default_map, overlap_tolerance=overlap_tolerance,
                                  transcripts=out / "transcripts" if transcribe is not None else None)
        if subs_offset:
            from dataclasses import replace

            specs = [replace(spec, subs_offset=subs_offset) for spec in specs]
        return specs
    if subs is not None and transcribe is not None:
        raise BuildInputError(["give --subs FILE or --transcribe MODEL, not both"])
    missing = [name for name, value in (("VIDEO", video), ("--subs", subs or transcribe),
                                        ("--scenario", scenario), ("--participants", participants))
               if value is None]
    if missing:
        raise BuildInputError([f"missing {', '.join(missing)} (or give --manifest sessions.csv; without "
                               "subtitles, --transcribe MODEL)"])
    assert video is not None and scenario is not None and participants is not None
    names = parse_participants(participants, "--participants")
    mapping = parse_speaker_map(speaker_map, "--speaker-map", names) if speaker_map else ()
    chosen_group = check_group(group or default_group(names), "--group")
    check_video_name(video, "VIDEO")
    transcript = out / "transcripts" / chosen_group / f"{video.stem}.srt"
    return [SessionSpec(video, subs if subs is not None else transcript, check_scenario(scenario, "--scenario"),
                        names, chosen_group, segments, speaker_map=mapping, overlap_tolerance=overlap_tolerance,
                        subs_offset=subs_offset, transcribe=subs is None)]


def _report(config: BuildConfig, outcome: BuildOutcome, say: Callable[..., object]) -> None:
    """What the build did, on the console; exit 2 for a dry run that a real run would stop on, 3 when incomplete."""
    out = config.out
    for note in outcome.notes:
        say(note, highlight=False)
    for gone in outcome.dropped:
        say(f"dropped {gone.sample_id} ({gone.start:g}-{gone.end:g} s): {gone.reason}", highlight=False)
    for path in outcome.transcripts:
        say(f"transcript: {path} (edit it, or name its speakers with --speaker-map SPEAKER_1=NAME,...)",
            highlight=False)
    for path in outcome.proposals:
        say(f"proposed segments: {path} (edit and pass back with --segments)", highlight=False)
    if outcome.estimate is not None:
        _print_estimate(config, outcome, say)
        if outcome.key_problem:
            err_console.print(f"[bold red]a real run would stop here:[/] {escape(outcome.key_problem)}", highlight=False)
            raise typer.Exit(EXIT_ERROR)
        return
    if config.propose_only and outcome.complete:
        return
    if not config.propose_only and (outcome.segments or not outcome.failed):
        _print_summary(outcome, out, say)
    if not outcome.complete:
        for failure in outcome.failed[:10]:
            err_console.print(f"[yellow]failed:[/] {escape(failure)}", highlight=False)
        if len(outcome.failed) > 10:
            err_console.print(f"[yellow]failed:[/] ... and {len(outcome.failed) - 10} more (see {out}/build.log)",
                              highlight=False)
        err_console.print("[yellow]incomplete:[/] rerun the same command to continue (add --retry-errors to ask again).")
        raise typer.Exit(EXIT_INCOMPLETE)


def _print_summary(outcome: BuildOutcome, out: Path, say: Callable[..., object]) -> None:
    cost = f", ${outcome.cost:.4f}" if outcome.cost else ""
    say(f"{len(outcome.segments)} segment(s), {outcome.sent} request(s) sent ({outcome.cached} answered from the "
        f"cache, {outcome.reasked} re-ask(s)){cost}, {outcome.problems} open problem(s) "
        f"for review -> {out}/draft.jsonl, {out}/manifest.json", highlight=False)


def _print_estimate(config, outcome, say) -> None:  # type: ignore[no-untyped-def]
    from rescue.llm import PriceTable, Usage

    est = outcome.estimate
    if outcome.untranscribed:
        cost = outcome.transcribe_cost
        say(f"transcription ({config.transcribe}): {len(outcome.untranscribed)} video(s), "
            f"{outcome.audio_seconds / 60:.1f} min of audio, estimated cost "
            f"{f'${cost:.4f}' if cost is not None else f'unknown (no price for {config.transcribe})'}; their "
            "segments and annotation requests are known once transcribed", highlight=False)
    say(f"dry run: {len(outcome.segments)} segment(s); nothing was sent or written", highlight=False)
    for sample_id, (start, end) in outcome.spans.items():
        say(f"  {sample_id}: {start:g}-{end:g} s", highlight=False)
    if config.model is None:
        say("no --model: the draft would hold the subtitles only (0 requests)", highlight=False)
        return
    say(f"requests: {est.requests} (plus at most one re-ask each)\nimages: {est.images}\n"
        f"video: {est.video_seconds:.0f} s\nestimated tokens: {est.input_tokens} in, {est.output_tokens} out",
        highlight=False)
    cost = PriceTable.load(config.prices).cost(config.model, Usage(input_tokens=est.input_tokens,
                                                                   output_tokens=est.output_tokens))
    say(f"estimated cost: {f'${cost:.4f}' if cost is not None else f'unknown (no price for {config.model})'}",
        highlight=False)
