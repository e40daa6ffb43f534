"""``rescue run`` and ``rescue rescore``: thin wrappers over :mod:`rescue.engine.runner`.

Heavy modules (the openai SDK, the tasks, pandas, torch) are imported inside the commands, never at start-up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from rescue.cli.app import DATA_HELP, DEFAULT_SPLITS_FILE, RppGoldChoice, app, console, err_console

# The option panels of `rescue run --help`, shown in the order their first option appears in the signature: keep
# each option beside the others of its panel (tests/test_cli_help.py checks the order).
P_DATA, P_MODELS, P_GENERATION = "Data", "Models", "Generation"
P_JUDGING, P_RUN, P_OUTPUT = "Judging and scoring", "Run control", "Output"

if TYPE_CHECKING:
    from rescue.engine.runner import RunOutcome


def _parse_extras(values: list[str]) -> dict[str, Any]:
    from rescue.engine.runner import RunError

    extras: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise RunError(f"--extra {item!r}: expected KEY=VALUE, e.g. enable_thinking=false")
        try:
            extras[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            extras[key.strip()] = raw  # a bare word is a string
    return extras


def _read_model_settings(path: Path | None) -> dict[str, dict[str, Any]]:
    """``--model-settings FILE``: a TOML table per model spec, e.g. ``["dashscope/qwen3-8b"] max_tokens = 800``."""
    if path is None:
        return {}
    import tomllib

    from rescue.engine.runner import RunError

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunError(f"--model-settings {path}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise RunError(f"--model-settings {path}: {exc}") from None
    for spec, table in data.items():
        if not isinstance(table, dict):
            raise RunError(f"--model-settings {path}: [{spec}]: expected a table of generation settings")
    return data


def _finish(outcome: RunOutcome, quiet: bool) -> None:
    from rich.markup import escape

    from rescue.report.summary import print_run_summary

    results = outcome.typed
    if not quiet:
        print_run_summary(console, results, outcome.out)
    run = results.run
    if run is not None and run.cache_hits:
        err_console.print(f"{run.cache_hits} answer(s) came from the cache, {run.requests} new "
                          "request(s) were sent.", highlight=False)
    data = results.data
    if data is not None and data.sample_ids and not quiet:
        ids = data.sample_ids
        shown = ", ".join(escape(i) for i in ids[:8]) + (f" … ({len(ids) - 8} more)" if len(ids) > 8 else "")
        err_console.print(f"{len(ids)} sample(s) taken ({data.sample_choice}): {shown}", highlight=False)
    if not outcome.complete:
        err_console.print(f"[yellow]incomplete:[/] {escape(str(outcome.stopped))}. Rerun the same command to "
                          "continue (instances without an answer are asked again).", highlight=False, soft_wrap=True)
        raise typer.Exit(3)


@app.command("run")
def run_command(
    ctx: typer.Context,
    tasks: Annotated[Optional[str], typer.Option("--tasks", rich_help_panel=P_DATA, help="Comma-separated tasks, any "
                                                 "case (default: all six; `rescue tasks` lists them).")] = None,
    data: Annotated[Optional[Path], typer.Option("--data", rich_help_panel=P_DATA, help=DATA_HELP)] = None,
    mode: Annotated[str, typer.Option("--mode", rich_help_panel=P_DATA, help="dialogue, audio, visual or audiovisual evidence; video or "
                                      "video+cues send each instance's media too (needs --media-root).")] = "dialogue",
    media_root: Annotated[Optional[Path], typer.Option(
        "--media-root", rich_help_panel=P_DATA, help="Video modes: the folder of the samples' videos, or a `rescue build --out` folder.")] = None,
    media_match: Annotated[str, typer.Option(
        "--media-match", rich_help_panel=P_DATA, help="How a sample finds its video: source_file, id, or auto (manifest, source_file, id).")] = "auto",
    video_input: Annotated[str, typer.Option(
        "--video-input", rich_help_panel=P_DATA, help="frames (images sampled inside the context rows) or clip (the window as video_url).")] = "frames",
    frame_rate: Annotated[float, typer.Option("--frame-rate", rich_help_panel=P_DATA, help="Frames per second of context sent.")] = 1.0,
    max_frames: Annotated[int, typer.Option("--max-frames", rich_help_panel=P_DATA, help="Most frames per request (thinned evenly).")] = 16,
    frame_size: Annotated[int, typer.Option(
        "--frame-size", rich_help_panel=P_DATA, help="Longest side in pixels of a frame or the cut clip.")] = 448,
    image_detail: Annotated[Optional[str], typer.Option(
        "--image-detail", rich_help_panel=P_DATA, help="Frames: low, high or auto for OpenAI-style APIs (low: ~85 tokens a frame).")] = None,
    media_workers: Annotated[int, typer.Option(
        "--media-workers", rich_help_panel=P_DATA, help="ffmpeg processes at once while video mode makes frames and clips.")] = 2,
    limit_samples: Annotated[Optional[int], typer.Option(
        "--limit-samples", rich_help_panel=P_DATA, help="Only N samples (see --sample-choice); the ones taken are listed in results.json.")] = None,
    sample_choice: Annotated[str, typer.Option(
        "--sample-choice", rich_help_panel=P_DATA, help="With --limit-samples: 'stratified' (each scenario in its share, from as many "
        "session groups as possible, so intervals can be computed) or 'first' N in file order.")] = "stratified",
    rpp_gold: Annotated[Optional[RppGoldChoice], typer.Option(
        "--rpp-gold", rich_help_panel=P_DATA, help="The row field holding RPP gold: auto (relation_pattern where a "
        "sample has it, else relation_cycle_state), relation_pattern or relation_cycle_state (docs/tasks.md).")] = None,
    split: Annotated[Optional[str], typer.Option(
        "--split", rich_help_panel=P_DATA, help="Only the samples of this split (train, dev, test, fold1, ...) of "
        "the --splits file `rescue splits` wrote; taken before --limit-samples.")] = None,
    splits: Annotated[Path, typer.Option(
        "--splits", rich_help_panel=P_DATA, help="The splits file --split reads.")] = DEFAULT_SPLITS_FILE,
    task_option: Annotated[Optional[list[str]], typer.Option(
        "--task-option", rich_help_panel=P_DATA, help="A task's build option, TASK.OPTION=VALUE (repeatable), e.g. er.checkpoints_per_sample=3 "
        "or itp.itp_max_per_class=10; `rescue tasks --help` and docs/tasks.md list them.")] = None,
    model: Annotated[Optional[list[str]], typer.Option(
        "--model", rich_help_panel=P_MODELS, help="A model to evaluate; repeat for several. PRESET/ID (openai/, deepseek/, dashscope/, "
        "kimi/, openrouter/, ollama/ ...), any id with --base-url, baseline/NAME or local/NAME. "
        "Default: the offline baselines.")] = None,
    base_url: Annotated[Optional[str], typer.Option(
        "--base-url", rich_help_panel=P_MODELS, help="An OpenAI-compatible endpoint for every --model (vLLM, SGLang, llama.cpp, a gateway).")] = None,
    api_key_env: Annotated[Optional[str], typer.Option(
        "--api-key-env", rich_help_panel=P_MODELS, help="The environment variable that holds the key (default: the preset's, or OPENAI_API_KEY).")] = None,
    extra: Annotated[Optional[list[str]], typer.Option(
        "--extra", rich_help_panel=P_MODELS, help="A provider extra for the request body, KEY=JSON (e.g. enable_thinking=false); repeatable.")] = None,
    model_settings: Annotated[Optional[Path], typer.Option(
        "--model-settings", rich_help_panel=P_MODELS, help="TOML: per-model generation settings, one table per model spec.")] = None,
    prices: Annotated[Optional[Path], typer.Option("--prices", rich_help_panel=P_MODELS, help="A price table (TOML) consulted first.")] = None,
    suite: Annotated[Optional[str], typer.Option(
        "--suite", rich_help_panel=P_MODELS, help="paper (the paper's ten models, settings and judge) or a suite TOML file of your own: "
        "its models and run settings (options given here win). See docs/report.md.")] = None,
    context_size: Annotated[Optional[int], typer.Option(
        "--context-size", rich_help_panel=P_GENERATION, help="Prior rows shown (-1: all; default: each task's own).")] = None,
    batch_size: Annotated[str, typer.Option(
        "--batch-size", rich_help_panel=P_GENERATION, help="Instances per request (of one sample), or 'authors' for each task's own; "
        "split wherever one item would show another's hidden row.")] = "1",
    temperature: Annotated[float, typer.Option("--temperature", rich_help_panel=P_GENERATION,
                                                      help="Sampling temperature sent with every request (0: the "
                                                      "most likely answer; a suite may set it per model).")] = 0.0,
    seed: Annotated[Optional[int], typer.Option(
        "--seed", rich_help_panel=P_GENERATION, help="Sent as the request's seed where the API supports it; seeds baseline/uniform (default 0).")] = None,
    max_tokens: Annotated[Optional[int], typer.Option("--max-tokens", rich_help_panel=P_GENERATION, help="Answer budget (default: each task's).")] = None,
    json_mode: Annotated[bool, typer.Option("--json-mode/--no-json-mode", rich_help_panel=P_GENERATION, help="Ask for a JSON object response.")] = True,
    stream: Annotated[Optional[bool], typer.Option(
        "--stream/--no-stream", rich_help_panel=P_GENERATION, help="Ask for server-sent events (thinking models' long answers); default: "
        "each preset's (on for DashScope when it thinks).")] = None,
    thinking: Annotated[Optional[str], typer.Option(
        "--thinking", rich_help_panel=P_GENERATION, help="on, off, low, medium or high: mapped to each provider's own switch (enable_thinking, "
        "thinking.type, reasoning_effort ...) and recorded, so reports never compare runs that differ in it "
        "silently. Default: the models' own.")] = None,
    store_reasoning: Annotated[bool, typer.Option(
        "--store-reasoning/--no-store-reasoning", rich_help_panel=P_GENERATION, help="Keep thinking models' reasoning with each record "
        "(predictions.jsonl, the HTML drill-down).")] = True,
    budget_retry: Annotated[Optional[float], typer.Option(
        "--budget-retry", rich_help_panel=P_GENERATION, help="Ask an answer whose budget ran out before any answer (budget_exhausted) once more "
        "with the budget multiplied by FACTOR.")] = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", rich_help_panel=P_GENERATION, help="Seconds per request attempt, the whole answer included.")] = 240.0,
    max_answer_bytes: Annotated[int, typer.Option(
        "--max-answer-bytes", rich_help_panel=P_GENERATION, help="A larger answer is recorded as a request error, not stored.")] = 8 * 1024 * 1024,
    parse: Annotated[str, typer.Option(
        "--parse", rich_help_panel=P_JUDGING, help="strict: an unknown label voids the answer; lenient: drop unknown labels from rankings "
        "and read a clear yes/no from prose, as the authors' scripts do (counted in results).")] = "strict",
    judge: Annotated[Optional[list[str]], typer.Option("--judge", rich_help_panel=P_JUDGING, help="A judge model for ER/VP; repeatable.")] = None,
    judge_base_url: Annotated[Optional[str], typer.Option(
        "--judge-base-url", rich_help_panel=P_JUDGING, help="An OpenAI-compatible endpoint for the judges (default: a preset judge such as "
        "openai/... goes to its provider, any other judge to --base-url).")] = None,
    judge_api_key_env: Annotated[Optional[str], typer.Option(
        "--judge-api-key-env", rich_help_panel=P_JUDGING, help="The environment variable that holds the judges' key "
        "(default: the judge preset's, or OPENAI_API_KEY).")] = None,
    judge_scale: Annotated[str, typer.Option("--judge-scale", rich_help_panel=P_JUDGING, help="likert (1-5) or authors (VP).")] = "likert",
    judge_repeats: Annotated[int, typer.Option(
        "--judge-repeats", min=1, rich_help_panel=P_JUDGING, help="Ask each judge N times per item at its settings "
        "(each a request of its own) and report its flip rate and α across repeats; the first repeat's grade scores.")] = 1,
    bertscore: Annotated[bool, typer.Option("--bertscore/--no-bertscore", rich_help_panel=P_JUDGING, help="BERTScore for ER/VP.")] = True,
    bertscore_model: Annotated[Optional[str], typer.Option(
        "--bertscore-model", rich_help_panel=P_JUDGING, help="BERTScore backbone: a Hugging Face name or a local folder "
        "(default: the packaged all-MiniLM-L6-v2, works offline).")] = None,
    bertscore_layers: Annotated[Optional[int], typer.Option(
        "--bertscore-layers", rich_help_panel=P_JUDGING, help="The backbone layer BERTScore reads (required for a local folder).")] = None,
    bertscore_rescale: Annotated[bool, typer.Option(
        "--bertscore-rescale", rich_help_panel=P_JUDGING, help="Rescale with bert-score's baseline (only for backbones it has one for).")] = False,
    batch: Annotated[bool, typer.Option(
        "--batch", rich_help_panel=P_RUN, help="Send the requests (and the judge's) through the providers' batch "
        "APIs at about half the price; a killed run resumes polling the same batches. See docs/engine.md.")] = False,
    batch_poll: Annotated[float, typer.Option(
        "--batch-poll", rich_help_panel=P_RUN, help="Seconds between two reads of a batch's status.")] = 30.0,
    retry_after_cap: Annotated[float, typer.Option(
        "--retry-after-cap", rich_help_panel=P_RUN, help="The longest Retry-After wait obeyed, in seconds; a request told to wait "
        "longer twice fails.")] = 300.0,
    concurrency: Annotated[int, typer.Option("--concurrency", rich_help_panel=P_RUN, help="Most requests in flight per model.")] = 16,
    max_retries: Annotated[int, typer.Option("--max-retries", rich_help_panel=P_RUN, help="Retries of a transient failure.")] = 5,
    max_failures: Annotated[int, typer.Option(
        "--max-failures", rich_help_panel=P_RUN, help="Stop asking a model after this many failed requests (0: never stop).")] = 50,
    max_cost: Annotated[Optional[float], typer.Option(
        "--max-cost", rich_help_panel=P_RUN, help="Stop (resumably) once this run has spent this many dollars.")] = None,
    retry_errors: Annotated[bool, typer.Option("--retry-errors", rich_help_panel=P_RUN, help="Ask again what failed in earlier runs.")] = False,
    cache_dir: Annotated[Optional[Path], typer.Option(
        "--cache-dir", rich_help_panel=P_RUN, help="A cache folder shared between runs (default: the run directory).")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", rich_help_panel=P_RUN, help="Print the requests, images and estimated tokens and cost per model and task; send "
        "and write nothing.")] = False,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", rich_help_panel=P_RUN, help="Replace a run directory that holds a run with another configuration "
        "(default: refuse; the same configuration resumes).")] = False,
    out: Annotated[Optional[Path], typer.Option(
        "--out", rich_help_panel=P_OUTPUT, help="The run directory (results.json, predictions.jsonl, cache, log); not needed with --dry-run.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", rich_help_panel=P_OUTPUT, help="No progress display or table (CI).")] = False,
) -> None:
    """Evaluate models on the tasks and write the run directory, then print a leaderboard."""
    from rescue.engine.runner import RunConfig, run
    from rescue.tasks import TASK_NAMES, parse_task_options

    if out is None and not dry_run:
        from rescue.engine.runner import RunError

        raise RunError("--out DIR is required (the run directory), except with --dry-run")
    config = RunConfig(
        out=str(out or "."),
        models=list(model or []),
        tasks=tasks.split(",") if tasks is not None else list(TASK_NAMES),
        data=None if data is None else str(data),
        mode=mode,
        video=None if media_root is None else {
            "media_root": str(media_root.resolve()), "media_match": media_match, "video_input": video_input,
            "frame_rate": frame_rate, "max_frames": max_frames, "frame_size": frame_size, "workers": media_workers,
            "image_detail": image_detail},
        context_size=context_size,
        limit_samples=limit_samples,
        sample_choice=sample_choice,
        split=split,
        splits=str(splits.resolve()) if split is not None else None,
        batch_size=batch_size,
        parse=parse,
        rpp_gold=None if rpp_gold is None else rpp_gold.value,
        task_options=parse_task_options(task_option or []),
        base_url=base_url,
        api_key_env=api_key_env,
        temperature=temperature,
        seed=seed,
        max_tokens=max_tokens,
        json_mode=json_mode,
        extra_body=_parse_extras(list(extra or [])),
        timeout=timeout,
        retry_after_cap=retry_after_cap,
        max_answer_bytes=max_answer_bytes,
        stream=stream,
        thinking=thinking,
        store_reasoning=store_reasoning,
        budget_retry=budget_retry,
        batch=batch,
        batch_poll=batch_poll,
        model_settings=_read_model_settings(model_settings),
        concurrency=concurrency,
        max_retries=max_retries,
        max_failures=max_failures or None,
        max_cost=max_cost,
        retry_errors=retry_errors,
        cache_dir=None if cache_dir is None else str(cache_dir.resolve()),
        prices=None if prices is None else str(prices.resolve()),
        judges=list(judge or []),
        judge_base_url=judge_base_url,
        judge_api_key_env=judge_api_key_env,
        judge_scale=judge_scale,
        judge_repeats=judge_repeats,
        bertscore=bertscore,
        bertscore_model=bertscore_model,
        bertscore_layers=bertscore_layers,
        bertscore_rescale=bertscore_rescale,
        quiet=quiet,
        overwrite=overwrite,
    )
    loaded = None
    if suite is not None:
        from click.core import ParameterSource

        from rescue.suites import apply_suite, load_suite

        loaded = load_suite(suite)
        given = {n for n in ctx.params if ctx.get_parameter_source(n) == ParameterSource.COMMANDLINE}  # type: ignore[comparison-overlap]
        renamed = {"judge": "judges", "model": "models"}  # option name -> RunConfig field
        config = apply_suite(config, loaded, explicit={renamed.get(n, n) for n in given})
    if dry_run:
        if loaded is not None:
            from rescue.suites import print_plan

            print_plan(console, loaded, config)
        _print_estimate(config)
        return
    _finish(run(config), quiet)


def _print_estimate(config: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    from rescue.engine.dryrun import estimate_run

    estimate = estimate_run(config)
    from collections.abc import Callable

    media: dict[str, tuple[str, Callable[[Any], str]]] = {"frames": ("images", lambda t: str(t.images)), "clip": ("clip s", lambda t: f"{t.clip_seconds:.0f}")}
    shown = media.get(estimate.video_input or "")
    table = Table(title=f"Dry run, {estimate.mode} mode, {estimate.samples} samples: nothing is sent", title_justify="left")
    for header in ("model", "task", "requests", *((shown[0], "media tok ~") if shown else ()), "in tok ~",
                   "cacheable", "out max"):
        table.add_column(header, justify="left" if header in ("model", "task") else "right", no_wrap=True)
    for model in estimate.models:
        for n, t in enumerate(model.tasks):
            cells = (shown[1](t), f"{t.media_tokens:,}") if shown else ()
            share = "—" if t.cacheable_share is None else f"{t.cacheable_share:.0%}"
            table.add_row(model.model if n == 0 else "", t.task, str(t.requests), *cells, f"{t.input_tokens:,}",
                          share, f"{t.max_output_tokens:,}")
    from rich.measure import Measurement

    # Every column whole, even past a narrow terminal's edge: a truncated figure ("ima…") is no figure.
    needed = Measurement.get(console, console.options.update_width(10_000), table).maximum
    if needed <= console.width:
        console.print(table)
    else:  # a console of its own: the shared one keeps following the terminal's width
        from rich.console import Console

        Console(width=needed).print(table)
    console.print("cacheable: the share of prompt text a provider's prefix cache can serve in the order rescue "
                  "sends requests (one sample at a time, rows in order); cached input costs 0.1-0.5x (prices.toml).",
                  highlight=False, soft_wrap=True)
    for model in estimate.models:
        cost = "no price in the table" if model.cost_at_most is None else f"at most ${model.cost_at_most:.2f}"
        console.print(f"{model.model}: {cost}", highlight=False)
    for judge in estimate.judges:
        if not judge.requests_per_model:
            continue
        tokens = sum(t.input_tokens for t in judge.tasks)
        every = f", {judge.requests_per_model * judge.models:,} in all" if judge.models > 1 else ""
        cost = "no price in the table" if judge.cost_at_most is None else f"at most ${judge.cost_per_model:.2f}" + (
            f" per model, ${judge.cost_at_most:.2f} in all" if judge.models > 1 else "")
        console.print(f"judge {judge.judge}: at most {judge.requests_per_model:,} requests per model{every} (one per "
                      f"ER/VP instance, ~{tokens:,} input tokens; failed predictions are not sent): {cost}",
                      highlight=False, soft_wrap=True)
    for warning in estimate.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)


@app.command("rescore")
def rescore_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by `rescue run --out`.")],
    data: Annotated[Optional[Path], typer.Option(
        "--data", help="The data to rescore against (default: the data the run used, as recorded in its "
        "results.json).")] = None,
    media_root: Annotated[Optional[Path], typer.Option(
        "--media-root", help="Video-mode runs: where the media is now, if it moved since the run.")] = None,
    parse: Annotated[Optional[str], typer.Option(
        "--parse", help="Re-read the cached answers as strict or lenient (default: the run's own policy).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display or leaderboard.")] = False,
) -> None:
    """Recompute predictions and metrics of a run from its cached answers; no model is asked."""
    from rescue.engine.runner import rescore

    outcome = rescore(run_dir, data=None if data is None else str(data),
                      media_root=None if media_root is None else str(media_root), parse=parse, quiet=quiet)
    _finish(outcome, quiet)
