"""``rescue run`` and ``rescue rescore``: thin wrappers over :mod:`rescue.engine.runner`.

Heavy modules (the openai SDK, the tasks, pandas, torch) are imported inside the commands, never at start-up.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rescue.display import terminal_console, terminal_text

from rescue.cli._app import app, console, err_console, run_option
from rescue.cli._startup import (
    engine_dryrun,
    engine_runner,
    report_summary,
    rich_measure,
    rich_table,
    suites,
    task_registry,
    tomllib,
)
from rescue.engine.run_options import declared_options
from rescue.errors import EXIT_INCOMPLETE

if TYPE_CHECKING:
    from rescue.engine.runner import RunOutcome


def _parse_extras(values: list[str]) -> dict[str, Any]:
    extras: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise engine_runner.RunError(f"--extra {item!r}: expected KEY=VALUE, e.g. enable_thinking=false")
        try:
            extras[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            extras[key.strip()] = raw  # a bare word is a string
    return extras


def _read_model_settings(path: Path | None) -> dict[str, dict[str, Any]]:
    """``--model-settings FILE``: a TOML table per model spec, e.g. ``["dashscope/qwen3-8b"] max_tokens = 800``."""
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise engine_runner.RunError(f"--model-settings {path}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise engine_runner.RunError(f"--model-settings {path}: {exc}") from None
    for spec, table in data.items():
        if not isinstance(table, dict):
            raise engine_runner.RunError(f"--model-settings {path}: [{spec}]: expected a table of generation settings")
    return data


def _finish(outcome: RunOutcome, quiet: bool) -> None:
    results = outcome.typed
    if not quiet:
        report_summary.print_run_summary(console, results, outcome.out)
    report_summary.print_failure_summary(err_console, results, outcome.out)
    run = results.run
    if run is not None and run.cache_hits:
        err_console.print(f"{run.cache_hits} answer(s) came from the cache, {run.requests} new "
                          "request(s) were sent.", highlight=False)
    data = results.data
    if data is not None and data.sample_ids and not quiet:
        ids = data.sample_ids
        shown = ", ".join(terminal_text(i) for i in ids[:8]) + (f" … ({len(ids) - 8} more)" if len(ids) > 8 else "")
        err_console.print(f"{len(ids)} sample(s) taken ({data.sample_choice}): {shown}", highlight=False)
    if not outcome.complete:
        err_console.print(f"[yellow]incomplete:[/] {terminal_text(str(outcome.stopped))}. Rerun the same command to "
                          "continue (instances without an answer are asked again).", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INCOMPLETE)


def run_command(ctx: typer.Context, **options: Any) -> None:
    """Evaluate models on the tasks and write the run directory, then print a leaderboard."""
    if options["out"] is None and not options["dry_run"]:
        raise engine_runner.RunError("--out DIR is required (the run directory), except with --dry-run")
    config = engine_runner.RunConfig(**_config_fields(options))
    loaded = None
    if options["suite"] is not None:
        loaded = suites.load_suite(options["suite"])
        given = {name for name in ctx.params if _given(ctx, name)}
        config = suites.apply_suite(config, loaded, explicit=given)
    if options["dry_run"]:
        if loaded is not None:
            suites.print_plan(console, loaded, config, explicit=given)
        _print_estimate(config)
        return
    _finish(engine_runner.run(config), options["quiet"])


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the user gave option ``name`` (on the command line, or through its environment variable), so that
    it wins over a suite's value. The source's own enum class is asked, whichever click carries it: typer 0.29
    runs on a click copy of its own, whose ParameterSource is not click's."""
    source = ctx.get_parameter_source(name)
    return source is not None and source not in (type(source).DEFAULT, type(source).DEFAULT_MAP)


def _resolved(path: Path | None) -> str | None:
    return None if path is None else str(path.resolve())


def _task_options(words: list[str] | None) -> dict[str, dict[str, Any]]:
    return task_registry.parse_task_options(words or [])


# RunConfig field -> how its command-line form becomes the field's value; any other is taken as given (a path as
# its text; --tasks as its comma-separated words, None for every task).
_FROM_COMMAND_LINE: dict[str, Any] = {
    "out": lambda v, o: str(v or "."),
    "splits": lambda v, o: _resolved(v) if o["split"] is not None else None,
    "task_options": lambda v, o: _task_options(v),
    "models": lambda v, o: list(v or []),
    "judges": lambda v, o: list(v or []),
    "extra_body": lambda v, o: _parse_extras(list(v or [])),
    "model_settings": lambda v, o: _read_model_settings(v),
    "max_failures": lambda v, o: v or None,  # 0: never stop
    "cache_dir": lambda v, o: _resolved(v),
    "prices": lambda v, o: _resolved(v),
}


def _config_fields(options: dict[str, Any]) -> dict[str, Any]:
    """The RunConfig fields of ``rescue run``'s option values."""
    fields = {}
    for declared in declared_options():
        if declared.in_config or declared.opt.video:  # RunConfig gathers the video options into its video field
            value = options[declared.name]
            convert = _FROM_COMMAND_LINE.get(declared.name)
            if convert is not None:
                value = convert(value, options)
            if isinstance(value, Enum):  # an option whose choices click lists
                value = value.value
            fields[declared.name] = str(value) if isinstance(value, Path) else value
    return fields


def _signature() -> inspect.Signature:
    """``rescue run``'s parameters, one per declared option, in the declaration's order."""
    params = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)]
    for declared in declared_options():
        opt = declared.opt
        option = typer.Option(*opt.flags, rich_help_panel=opt.panel, help=opt.help, min=opt.min)
        params.append(inspect.Parameter(declared.name, inspect.Parameter.KEYWORD_ONLY,
                                        annotation=Annotated[declared.cli_annotation(), option],
                                        default=declared.cli_default()))
    return inspect.Signature(params, return_annotation=None)


run_command.__signature__ = _signature()  # type: ignore[attr-defined]
# Example lines, as lm-eval and inspect show them: a minimal call and the local-server flag.
RUN_EXAMPLES = (
    ("the quick start, offline", "rescue run --model baseline/majority --out runs/first"),
    ("a provider (its key in the environment)", "rescue run --model openai/gpt-4o-mini --tasks itp,rpp --out runs/mini"),
    ("a server on this machine (vLLM, SGLang, llama.cpp): no key needed",
     "rescue run --model my-model --base-url http://127.0.0.1:8000/v1 --out runs/m"),
)


def _examples() -> str:
    """The help's example lines, each command on a line of its own under its comment (fits 80 columns)."""
    return "Examples:\n" + "\n".join(f"  # {what}\n  {command}" for what, command in RUN_EXAMPLES)


app.command("run", epilog=_examples())(run_command)


def _print_estimate(config: Any) -> None:
    estimate = engine_dryrun.estimate_run(config)

    media: dict[str, tuple[str, Callable[[Any], str]]] = {"frames": ("images", lambda t: str(t.images)), "clip": ("clip s", lambda t: f"{t.clip_seconds:.0f}")}
    shown = media.get(estimate.video_input or "")
    table = rich_table.Table(title=f"Dry run, {estimate.mode} mode, {estimate.samples} samples: nothing is sent", title_justify="left")
    for header in ("model", "task", "requests", *((shown[0], "media tok ~") if shown else ()), "in tok ~",
                   "cacheable", "out max"):
        table.add_column(header, justify="left" if header in ("model", "task") else "right", no_wrap=True)
    for model in estimate.models:
        for n, t in enumerate(model.tasks):
            cells = (shown[1](t), f"{t.media_tokens:,}") if shown else ()
            share = "—" if t.cacheable_share is None else f"{t.cacheable_share:.0%}"
            table.add_row(terminal_text(model.model) if n == 0 else "", t.task, str(t.requests), *cells, f"{t.input_tokens:,}",
                          share, f"{t.max_output_tokens:,}")

    # Every column whole, even past a narrow terminal's edge: a truncated figure ("ima…") is no figure.
    needed = rich_measure.Measurement.get(console, console.options.update_width(10_000), table).maximum
    if needed <= console.width:
        console.print(table)
    else:  # a console of its own: the shared one keeps following the terminal's width

        terminal_console(width=needed).print(table)
    console.print("cacheable: the share of prompt text a provider's prefix cache can serve in the order rescue "
                  "sends requests (one sample at a time, rows in order); cached input costs 0.1-0.5x (prices.toml).",
                  highlight=False, soft_wrap=True)
    for model in estimate.models:
        cost = "no price in the table" if model.cost_at_most is None else f"at most ${model.cost_at_most:.2f}"
        console.print(f"{terminal_text(model.model)}: {cost}", highlight=False)
    for judge in estimate.judges:
        if not judge.requests_per_model:
            continue
        tokens = sum(t.input_tokens for t in judge.tasks)
        every = f", {judge.requests_per_model * judge.models:,} in all" if judge.models > 1 else ""
        cost = "no price in the table" if judge.cost_at_most is None else f"at most ${judge.cost_per_model:.2f}" + (
            f" per model, ${judge.cost_at_most:.2f} in all" if judge.models > 1 else "")
        console.print(f"judge {terminal_text(judge.judge)}: at most {judge.requests_per_model:,} requests per model{every} (one per "
                      f"ER/VP instance, ~{tokens:,} input tokens; failed predictions are not sent): {cost}",
                      highlight=False, soft_wrap=True)
    for warning in estimate.warnings:
        err_console.print(f"[yellow]warning:[/] {terminal_text(warning)}", highlight=False, soft_wrap=True)


@app.command("rescore")
def rescore_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by `rescue run --out`.")],
    # rescue run's options of these names (their flags from rescue.engine.run_options), with what they mean here.
    data: Annotated[Optional[Path], run_option(
        "data", "The data to rescore against (default: the data the run used, as recorded in its "
        "results.json).")] = None,
    media_root: Annotated[Optional[Path], run_option(
        "media_root", "Video-mode runs: where the media is now, if it moved since the run.")] = None,
    parse: Annotated[Optional[str], run_option(
        "parse", "Re-read the cached answers as strict or lenient (default: the run's own policy).")] = None,
    quiet: Annotated[bool, run_option("quiet", "No progress display or leaderboard.")] = False,
) -> None:
    """Recompute predictions and metrics of a run from its cached answers; no model is asked."""
    outcome = engine_runner.rescore(run_dir, data=None if data is None else str(data),
                                    media_root=None if media_root is None else str(media_root), parse=parse, quiet=quiet)
    _finish(outcome, quiet)
