"""``rescue build``: a thin wrapper over :func:`rescue.builder.build`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rescue import builder, llm  # faces that import their names on first use
from rescue.display import terminal_text
from rescue.builder.options import NO_DEFAULT, build_options
from rescue.cli._app import app, console, err_console
from rescue.cli._run_cmds import _parse_extras
from rescue.cli._startup import builder_inputs, proc
from rescue.data.choices import BUILD_VIDEO_INPUTS
from rescue.engine.run_options import literal_choices
from rescue.engine.run_options import option as run_declared
from rescue.errors import EXIT_ERROR, EXIT_INCOMPLETE

if TYPE_CHECKING:
    from rescue.builder import BuildConfig, BuildOutcome


def build_command(**options: Any) -> None:
    """Cut session videos into segments and pre-annotate them into a draft release for review."""
    o = SimpleNamespace(**options)
    _check_options(o.video_input, o.review_height, o.overlap_tolerance)
    if not 10 <= o.chunk_seconds < float("inf"):
        raise builder_inputs.BuildInputError([f"--chunk-seconds {o.chunk_seconds:g}: give at least 10 seconds"])
    specs = _session_specs(o.out, o.video, o.subs, o.transcribe, o.scenario, o.participants, o.group, o.segments,
                           o.manifest, o.speaker_map, o.overlap_tolerance, o.subs_offset)
    settings = builder.AnnotateSettings(
        video_input=o.video_input, frame_rate=o.frame_rate, frames_per_cue=o.frames_per_line, max_images=o.max_images,
        frame_width=o.frame_width, window_cues=o.window_lines, window_overlap=o.window_overlap,
        max_tokens=o.max_tokens, temperature=o.temperature)
    config = builder.BuildConfig(
        out=o.out, sessions=specs, min_duration=o.min_duration, model=o.model, base_url=o.base_url,
        api_key_env=o.api_key_env, annotate=settings, extra_body=_extras(o.extra), timeout=o.timeout,
        concurrency=o.concurrency, max_retries=o.max_retries, max_failures=o.max_failures or None,
        max_cost=o.max_cost, retry_errors=o.retry_errors, prices=None if o.prices is None else str(o.prices),
        row_clips=o.row_clips, dry_run=o.dry_run, propose_only=o.propose_only, review_height=o.review_height,
        retry_after_cap=o.retry_after_cap, max_answer_bytes=o.max_answer_bytes, transcribe=o.transcribe,
        transcribe_model=o.transcribe_model, transcribe_base_url=o.transcribe_base_url,
        transcribe_api_key_env=o.transcribe_api_key_env, language=o.language, check_alignment=not o.no_align_check,
        chunk_seconds=o.chunk_seconds,
    )

    # SIGTERM (timeout, systemd, a scheduler) stops the build as Ctrl-C does: its ffmpeg children die with it.
    with proc.ending_children_on_signals():
        outcome = builder.build(config, echo=lambda message: err_console.print(message, highlight=False, markup=False))
    _report(config, outcome, console.print if not o.quiet else (lambda *a, **k: None))


def _signature() -> inspect.Signature:
    """``rescue build``'s parameters, one per option :class:`rescue.builder.options.BuildOptions` declares, in its
    order. A closed choice is taken as text (the command checks it and names the option); an option ``as_run``
    shows ``rescue run``'s default, which the build then uses."""
    params = []
    for declared in build_options():
        flag = declared.flag
        info = typer.Option(*flag.flags, help=flag.help) if flag.flags else typer.Argument(help=flag.help)
        annotation = str if literal_choices(declared.annotation) else declared.annotation
        default = run_declared(declared.name).default if flag.as_run else declared.default
        params.append(inspect.Parameter(declared.name, inspect.Parameter.KEYWORD_ONLY,
                                        annotation=Annotated[annotation, info],
                                        default=inspect.Parameter.empty if default is NO_DEFAULT else default))
    return inspect.Signature(params, return_annotation=None)


build_command.__signature__ = _signature()  # type: ignore[attr-defined]
app.command("build")(build_command)


def _extras(extra: list[str] | None) -> dict[str, object]:
    if not extra:  # parsing imports the run engine (for its error): none given, none imported
        return {}
    return _parse_extras(list(extra))


def _check_options(video_input: str, review_height: int | None, overlap_tolerance: float) -> None:
    if video_input not in BUILD_VIDEO_INPUTS:
        raise builder_inputs.BuildInputError([f"--video-input {video_input!r}: choose one of {', '.join(BUILD_VIDEO_INPUTS)}"])
    if review_height is not None and review_height < 16:
        raise builder_inputs.BuildInputError([f"--review-height {review_height}: give a height of at least 16 lines"])
    if overlap_tolerance < 0:
        raise builder_inputs.BuildInputError([f"--overlap-tolerance {overlap_tolerance:g}: give 0 or more seconds"])


def _session_specs(out: Path, video: Path | None, subs: Path | None, transcribe: str | None, scenario: str | None,
                   participants: str | None, group: str | None, segments: Path | None, manifest: Path | None,
                   speaker_map: str | None, overlap_tolerance: float, subs_offset: float) -> list[builder_inputs.SessionSpec]:
    """The sessions to build: the rows of ``--manifest``, or the one VIDEO with its options."""
    if manifest is not None:
        if video is not None:
            raise builder_inputs.BuildInputError(["give either VIDEO or --manifest, not both"])
        default_map = builder_inputs.parse_speaker_map(speaker_map, "--speaker-map", None) if speaker_map else ()
        specs = builder_inputs.read_sessions_csv(manifest, default_map=default_map, overlap_tolerance=overlap_tolerance,
                                                 transcripts=out / "transcripts" if transcribe is not None else None)
        if subs_offset:
            specs = [replace(spec, subs_offset=subs_offset) for spec in specs]
        return specs
    if subs is not None and transcribe is not None:
        raise builder_inputs.BuildInputError(["give --subs FILE or --transcribe MODEL, not both"])
    missing = [name for name, value in (("VIDEO", video), ("--subs", subs or transcribe),
                                        ("--scenario", scenario), ("--participants", participants))
               if value is None]
    if missing:
        raise builder_inputs.BuildInputError([f"missing {', '.join(missing)} (or give --manifest sessions.csv; without "
                                              "subtitles, --transcribe MODEL)"])
    assert video is not None and scenario is not None and participants is not None
    names = builder_inputs.parse_participants(participants, "--participants")
    mapping = builder_inputs.parse_speaker_map(speaker_map, "--speaker-map", names) if speaker_map else ()
    chosen_group = builder_inputs.check_group(group or builder_inputs.default_group(names), "--group")
    builder_inputs.check_video_name(video, "VIDEO")
    transcript = out / "transcripts" / chosen_group / f"{video.stem}.srt"
    scenario_name = builder_inputs.check_scenario(scenario, "--scenario")
    return [builder_inputs.SessionSpec(video, subs if subs is not None else transcript, scenario_name, names,
                                       chosen_group, segments, speaker_map=mapping,
                                       overlap_tolerance=overlap_tolerance, subs_offset=subs_offset,
                                       transcribe=subs is None)]


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
            err_console.print(f"[bold red]a real run would stop here:[/] {terminal_text(outcome.key_problem)}", highlight=False)
            raise typer.Exit(EXIT_ERROR)
        return
    if config.propose_only and outcome.complete:
        return
    if not config.propose_only and (outcome.segments or not outcome.failed):
        _print_summary(outcome, out, say)
    if not outcome.complete:
        for failure in outcome.failed[:10]:
            err_console.print(f"[yellow]failed:[/] {terminal_text(failure)}", highlight=False)
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
    est = outcome.estimate
    if outcome.untranscribed:
        cost = outcome.transcribe_cost
        say(f"transcription ({config.transcribe}): {len(outcome.untranscribed)} video(s), "
            f"{outcome.audio_seconds / 60:.1f} min of audio, estimated cost "
            f"{f'${cost:.4f}' if cost is not None else f'unknown (no price for {terminal_text(str(config.transcribe))})'}; their "
            "segments and annotation requests are known once transcribed", highlight=False)
    say(f"dry run: {len(outcome.segments)} segment(s); nothing was sent or written", highlight=False)
    for sample_id, (start, end) in outcome.spans.items():
        say(f"  {terminal_text(sample_id)}: {start:g}-{end:g} s", highlight=False)
    if config.model is None:
        say("no --model: the draft would hold the subtitles only (0 requests)", highlight=False)
        return
    say(f"requests: {est.requests} (plus at most one re-ask each)\nimages: {est.images}\n"
        f"video: {est.video_seconds:.0f} s\nestimated tokens: {est.input_tokens} in, {est.output_tokens} out",
        highlight=False)
    cost = llm.PriceTable.load(config.prices).cost(config.model, llm.Usage(input_tokens=est.input_tokens,
                                                                           output_tokens=est.output_tokens))
    say(f"estimated cost: {f'${cost:.4f}' if cost is not None else f'unknown (no price for {terminal_text(str(config.model))})'}",
        highlight=False)
