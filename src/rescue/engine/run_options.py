"""Every ``rescue run`` option, declared once: its field, type, default, command-line spelling, help and panel.

:class:`RunOptions` is the one declaration. :class:`rescue.engine.config.RunConfig` (pydantic) takes its fields
from it and checks them; ``rescue run`` builds its parameters from it (``rescue.cli._run_cmds``), in the order
written here, which is the order of ``rescue run --help``. Options of the command that are not configuration
(``--dry-run``, ``--suite``, and the video options gathered into ``video``) are class variables: the model ignores
them, the command line reads them like the rest.

This module imports nothing heavy (no pydantic, no task registry), so ``rescue --help`` stays fast. Closed sets of
values are ``Literal`` types, those the library shares written once in ``rescue.data.choices`` (``Mode`` and its
``MODES``, ``Thinking`` and its ``THINKING_LEVELS`` ...).
"""

# No `from __future__ import annotations`: the annotations below are read as objects (declared_options), and
# evaluating sixty strings would cost `rescue --help` more than the rest of this module.
import functools
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Optional, Union

from rescue.display import PLAIN_PROGRESS_INTERVAL
from rescue.llm import DEFAULT_BATCH_SETTLE, DEFAULT_MAX_ANSWER_BYTES, DEFAULT_RETRY_AFTER_CAP
from rescue.video import VideoOptions
from rescue.data.choices import (
    SPLITS_FILE, ImageDetail, JudgeScale, MediaMatch, Mode, ParsePolicy, RppGold, Thinking, VideoInput,
)

# The option panels of `rescue run --help`, shown in the order their first option is declared below
# (tests/cli/test_cli_help.py checks the order).
P_DATA, P_MODELS, P_GENERATION = "Data", "Models", "Generation"
P_JUDGING, P_RUN, P_OUTPUT = "Judging and scoring", "Run control", "Output"

SampleChoice = Literal["first", "stratified"]

DEFAULT_SPLITS_FILE = Path(SPLITS_FILE)

# --task-option's values: per task name, its build options by name, as given (JSON values; each task's options
# model, rescue.tasks.spec.TaskOptions, checks them).
TaskOptionValues = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Opt:
    """How an option is spelled and explained on the command line; its type and default are the field's.

    ``cli`` is the command line's own type where it takes another form than the field stores (a path for a file
    that is read, comma-separated words, repeated KEY=VALUE words), with ``cli_default`` as its default.
    ``list_choices``: a ``Literal`` field whose values the help lists (click checks them before anything else).
    ``check``: a test a value must pass and what the error says when it does not (after the flag and value).
    """

    flags: tuple[str, ...]
    panel: str
    help: str
    cli: Any = None
    cli_default: Any = None
    check: tuple[Callable[[Any], bool], str] | None = None
    list_choices: bool = False  # the Literal's values listed in the help and checked by click, first
    min: int | None = None  # checked by click, before anything else
    video: str = ""  # the rescue.video.VideoOptions field this option fills ("": none)

    @property
    def flag(self) -> str:
        """The option's name in messages, e.g. ``--json-mode``."""
        return self.flags[0].split("/")[0]


def _opt(flag: str | tuple[str, ...], panel: str, help: str, **more: Any) -> Opt:
    return Opt((flag,) if isinstance(flag, str) else flag, panel, help, **more)


# Parts of the help that other commands taking the same option share (rescue.cli._app.run_option).
DATA_HELP = ("A .jsonl file (release format), a folder of .jsonl files, or a folder of per-sample .json "
             "files (<group>/<sample>.json). Default: the bundled demo dataset.")
SPLIT_HELP = "Only the samples of this split (train, dev, test, fold1, ...) of the --splits file `rescue splits` wrote"
SPLITS_HELP = "The splits file --split reads"
TASK_OPTION_HELP = "A task's build option, TASK.OPTION=VALUE (repeatable), e.g. er.checkpoints_per_sample=3"


def _at_least(low: float) -> Callable[[Any], bool]:
    return lambda value: value is None or value >= low


def _above(low: float) -> Callable[[Any], bool]:
    return lambda value: value is None or value > low


# --budget-retry's largest factor: a larger one is no budget a provider takes, and inf or 1e308 would make every
# retry's max_tokens overflow.
MAX_BUDGET_FACTOR = 100.0


def _budget_factor(value: float | None) -> bool:
    return value is None or (math.isfinite(value) and 1 < value <= MAX_BUDGET_FACTOR)


def _count_or_authors(value: str) -> bool:
    if value == "authors":
        return True
    try:
        return int(value) >= 1
    except ValueError:
        return False


class RunOptions:
    """The options of ``rescue run``, in the order of its help; each field is a ``RunConfig`` field."""

    # --- Data ---------------------------------------------------------------------------------------------------
    tasks: Annotated[list[str], _opt(
        "--tasks", P_DATA, "Comma-separated tasks, any case (default: every registered task; `rescue tasks` lists them).",
        cli=Optional[str])]  # no default here: RunConfig fills in every task of the registry
    data: Annotated[Optional[str], _opt("--data", P_DATA, DATA_HELP, cli=Optional[Path])] = None
    mode: Annotated[Mode, _opt(
        "--mode", P_DATA, "dialogue, audio, visual or audiovisual evidence; video or video+cues send each instance's "
        "media too (needs --media-root).")] = "dialogue"
    # video modes: rescue.video.VideoOptions, made of the options below (None in the other modes); stored as a dict
    video: Optional[VideoOptions] = None
    media_root: ClassVar[Annotated[Optional[Path], _opt(
        "--media-root", P_DATA, "Video modes: the folder of the samples' videos, or a `rescue build --out` "
        "folder.", video="media_root")]] = None
    media_match: ClassVar[Annotated[MediaMatch, _opt(
        "--media-match", P_DATA, "How a sample finds its video: source_file, id, or auto (manifest, source_file, "
        "id).", video="media_match")]] = VideoOptions.media_match
    video_input: ClassVar[Annotated[VideoInput, _opt(
        "--video-input", P_DATA, "frames (images sampled inside the context rows) or clip (the window as "
        "video_url).", video="video_input")]] = VideoOptions.video_input
    frame_rate: ClassVar[Annotated[float, _opt("--frame-rate", P_DATA, "Frames per second of context sent.",
                                                            video="frame_rate")]] = VideoOptions.frame_rate
    max_frames: ClassVar[Annotated[int, _opt("--max-frames", P_DATA, "Most frames per request (thinned evenly).",
                                                       video="max_frames")]] = VideoOptions.max_frames
    frame_size: ClassVar[Annotated[int, _opt(
        "--frame-size", P_DATA, "Longest side in pixels of a frame or the cut clip.", video="frame_size")]] = VideoOptions.frame_size
    image_detail: ClassVar[Annotated[Optional[ImageDetail], _opt(
        "--image-detail", P_DATA, "Frames: low, high or auto for OpenAI-style APIs (low: ~85 tokens a "
        "frame).", video="image_detail")]] = VideoOptions.image_detail
    media_workers: ClassVar[Annotated[int, _opt(
        "--media-workers", P_DATA, "ffmpeg processes at once while video mode makes frames and clips.",
        video="workers")]] = VideoOptions.workers
    limit_samples: Annotated[Optional[int], _opt(
        "--limit-samples", P_DATA, "Only N samples (see --sample-choice); the ones taken are listed in results.json.",
        check=(_at_least(1), "must be at least 1"))] = None
    limit: Annotated[Optional[int], _opt(  # rescue.engine.plan.limit_instances, after limit_samples
        "--limit", P_DATA, "Only N instances of each task, each scenario in its share, drawn with a fixed seed (the "
        "ones taken are listed in results.json); beside --limit-samples, which takes whole sessions.",
        check=(_at_least(1), "must be at least 1"))] = None
    # with limit_samples: stratified by scenario and session group (enough groups for intervals), or the first N
    sample_choice: Annotated[SampleChoice, _opt(
        "--sample-choice", P_DATA, "With --limit-samples: 'stratified' (each scenario in its share, from as many "
        "session groups as possible, so intervals can be computed) or 'first' N in file order.")] = "stratified"
    rpp_gold: Annotated[Optional[RppGold], _opt(  # shorthand for task_options["rpp"]["rpp_gold"]
        "--rpp-gold", P_DATA, "The row field holding RPP gold: auto (relation_pattern where a sample has it, else "
        "relation_cycle_state), relation_pattern or relation_cycle_state (docs/tasks.md).",
        list_choices=True)] = None
    split: Annotated[Optional[str], _opt(  # rescue.data.splits, taken before limit_samples
        "--split", P_DATA, f"{SPLIT_HELP}; taken before --limit-samples.")] = None
    splits: Annotated[Optional[str], _opt(  # stored only with --split
        "--splits", P_DATA, f"{SPLITS_HELP}.", cli=Path, cli_default=DEFAULT_SPLITS_FILE)] = None
    task_options: Annotated[TaskOptionValues, _opt(  # per task: its build options
        "--task-option", P_DATA, f"{TASK_OPTION_HELP} or itp.itp_max_per_class=10; `rescue tasks --help` and "
        "docs/tasks.md list them.", cli=Optional[list[str]])] = {}

    # --- Models -------------------------------------------------------------------------------------------------
    models: Annotated[list[str], _opt(  # empty: the offline baselines
        "--model", P_MODELS, "A model to evaluate; repeat for several. PRESET/ID (openai/, deepseek/, dashscope/, "
        "kimi/, openrouter/, ollama/ ...), any id with --base-url, baseline/NAME or local/NAME. "
        "Default: the offline baselines.", cli=Optional[list[str]])] = []
    base_url: Annotated[Optional[str], _opt(
        "--base-url", P_MODELS, "An OpenAI-compatible endpoint for every --model (vLLM, SGLang, llama.cpp, a "
        "gateway).")] = None
    api_key_env: Annotated[Optional[str], _opt(
        "--api-key-env", P_MODELS, "The environment variable that holds the key (default: the preset's, or "
        "OPENAI_API_KEY).")] = None
    extra_body: Annotated[dict[str, Any], _opt(
        "--extra", P_MODELS, "A provider extra for the request body, KEY=JSON (e.g. enable_thinking=false); "
        "repeatable.", cli=Optional[list[str]])] = {}
    model_settings: Annotated[dict[str, dict[str, Any]], _opt(  # per model spec: overrides
        "--model-settings", P_MODELS, "TOML: per-model generation settings, one table per model spec.",
        cli=Optional[Path])] = {}
    prices: Annotated[Optional[str], _opt(
        "--prices", P_MODELS, "A price table (TOML) consulted first.", cli=Optional[Path])] = None
    suite: ClassVar[Annotated[Optional[str], _opt(
        "--suite", P_MODELS, "paper (the paper's ten models, settings and judge) or a suite TOML file of your own: "
        "its models and run settings (options given here win). See docs/report.md.")]] = None

    # --- Generation ---------------------------------------------------------------------------------------------
    context_size: Annotated[Optional[int], _opt(  # None: each task's default
        "--context-size", P_GENERATION, "Prior rows shown (-1: all; default: each task's own).",
        check=(_at_least(-1), "use -1 (all prior rows), 0 (none) or a positive count"))] = None
    batch_size: Annotated[str, _opt(  # "1", a number, or "authors" (each task's authors' batch size)
        "--batch-size", P_GENERATION, "Instances per request (of one sample), or 'authors' for each task's own; "
        "split wherever one item would show another's hidden row.",
        check=(_count_or_authors, "a positive number or 'authors'"))] = "1"
    temperature: Annotated[float, _opt(
        "--temperature", P_GENERATION, "Sampling temperature sent with every request (0: the most likely answer; a "
        "suite may set it per model).")] = 0.0
    seed: Annotated[Optional[int], _opt(  # seeds baseline/uniform too
        "--seed", P_GENERATION, "Sent as every request's seed where the provider takes one (default: 0 for a new "
        "run, none for a run folder made without one; recorded); seeds baseline/uniform.")] = None
    epochs: Annotated[int, _opt(  # rescue.engine.plan.epoch_seeds; 1: results.json as before
        "--epochs", P_GENERATION, "Ask each instance N times, each epoch with a seed of its own (--seed, or 0, plus "
        "the epoch) where the provider takes one; scores are the mean over the epochs, with their spread.", min=1,
        check=(_at_least(1), "must be at least 1"))] = 1
    max_tokens: Annotated[Optional[int], _opt(
        "--max-tokens", P_GENERATION, "Answer budget (default: each task's).")] = None
    json_mode: Annotated[bool, _opt(
        "--json-mode/--no-json-mode", P_GENERATION, "Ask for a JSON object response.")] = True
    stream: Annotated[Optional[bool], _opt(  # None: each preset's default
        "--stream/--no-stream", P_GENERATION, "Ask for server-sent events (thinking models' long answers); default: "
        "each preset's (on for DashScope when it thinks).")] = None
    thinking: Annotated[Optional[Thinking], _opt(  # mapped per provider; None: the models' defaults
        "--thinking", P_GENERATION, "on, off, low, medium or high: mapped to each provider's own switch "
        "(enable_thinking, thinking.type, reasoning_effort ...) and recorded, so reports never compare runs that "
        "differ in it silently. Default: the models' own.")] = None
    store_reasoning: Annotated[bool, _opt(
        "--store-reasoning/--no-store-reasoning", P_GENERATION, "Keep thinking models' reasoning with each record "
        "(predictions.jsonl, the HTML drill-down).")] = True
    budget_retry: Annotated[Optional[float], _opt(
        "--budget-retry", P_GENERATION, "Ask an answer whose budget ran out before any answer (budget_exhausted) "
        "once more with the budget multiplied by FACTOR.",
        check=(_budget_factor, f"a factor above 1 and at most {MAX_BUDGET_FACTOR:g} (2 asks again with twice the "
                               "budget)"))] = None
    timeout: Annotated[float, _opt(  # the whole request, the body included
        "--timeout", P_GENERATION, "Seconds per request attempt, the whole answer included.",
        check=(_above(0), "a positive number of seconds"))] = 240.0
    max_answer_bytes: Annotated[int, _opt(  # the model layer's own limit, declared there
        "--max-answer-bytes", P_GENERATION, "A larger answer is recorded as a request error, not stored.",
        check=(_at_least(1), "a positive number of bytes"))] = DEFAULT_MAX_ANSWER_BYTES

    # --- Judging and scoring ------------------------------------------------------------------------------------
    parse: Annotated[ParsePolicy, _opt(  # rescore can switch it
        "--parse", P_JUDGING, "strict: an unknown label voids the answer; lenient: drop unknown labels from "
        "rankings and read a clear yes/no from prose, as the authors' scripts do (counted in results).")] = "strict"
    judges: Annotated[list[str], _opt(
        "--judge", P_JUDGING, "A judge model for ER/VP; repeatable.", cli=Optional[list[str]])] = []
    judge_base_url: Annotated[Optional[str], _opt(  # None: the judges' presets, or --base-url
        "--judge-base-url", P_JUDGING, "An OpenAI-compatible endpoint for the judges (default: a preset judge such "
        "as openai/... goes to its provider, any other judge to --base-url).")] = None
    judge_api_key_env: Annotated[Optional[str], _opt(
        "--judge-api-key-env", P_JUDGING, "The environment variable that holds the judges' key (default: the judge "
        "preset's, or OPENAI_API_KEY).")] = None
    judge_scale: Annotated[JudgeScale, _opt(
        "--judge-scale", P_JUDGING, "likert (1-5) or authors (VP).")] = "likert"
    judge_repeats: Annotated[int, _opt(  # the first repeat scores
        "--judge-repeats", P_JUDGING, "Ask each judge N times per item at its settings (each a request of its own) "
        "and report its flip rate and α across repeats; the first repeat's grade scores.", min=1,
        check=(_at_least(1), "must be at least 1"))] = 1
    bertscore: Annotated[bool, _opt("--bertscore/--no-bertscore", P_JUDGING, "BERTScore for ER/VP.")] = True
    bertscore_model: Annotated[Optional[str], _opt(
        "--bertscore-model", P_JUDGING, "BERTScore backbone: a Hugging Face name or a local folder (default: the "
        "packaged all-MiniLM-L6-v2, works offline).")] = None
    bertscore_layers: Annotated[Optional[int], _opt(  # None: the backbone's default layer
        "--bertscore-layers", P_JUDGING, "The backbone layer BERTScore reads (required for a local folder).")] = None
    bertscore_rescale: Annotated[bool, _opt(
        "--bertscore-rescale", P_JUDGING, "Rescale with bert-score's baseline (only for backbones it has one "
        "for).")] = False

    # --- Run control --------------------------------------------------------------------------------------------
    batch: Annotated[bool, _opt(  # src/rescue/llm/_batch.py
        "--batch", P_RUN, "Send the requests (and the judge's) through the providers' batch APIs at about half the "
        "price; a killed run resumes polling the same batches. See docs/engine.md.")] = False
    batch_poll: Annotated[float, _opt(
        "--batch-poll", P_RUN, "Seconds between two reads of a batch's status.",
        check=(_above(0), "a positive number of seconds"))] = 30.0
    batch_settle: Annotated[float, _opt(  # src/rescue/llm/_batch.py SETTLE_WINDOW
        "--batch-settle", P_RUN, "Seconds an upload or create whose answer was lost is looked for in the endpoint's "
        "list, counted from when it was sent (a rerun waits out the same window); then a create not seen stops the "
        "run (exit 3), an upload is sent again.",
        check=(_at_least(0), "0 or more seconds"))] = DEFAULT_BATCH_SETTLE
    retry_after_cap: Annotated[float, _opt(  # the model layer's own default, declared there
        "--retry-after-cap", P_RUN, "The longest Retry-After wait obeyed, in seconds; a request told to wait longer "
        "twice fails.", check=(_at_least(0), "0 or more seconds"))] = DEFAULT_RETRY_AFTER_CAP
    concurrency: Annotated[int, _opt(
        "--concurrency", P_RUN, "Most requests in flight per model.", check=(_at_least(1), "must be at least 1"))] = 16
    max_retries: Annotated[int, _opt(
        "--max-retries", P_RUN, "Retries of a transient failure.", check=(_at_least(0), "must be 0 or more"))] = 5
    max_failures: Annotated[Optional[int], _opt(  # None: never stop (the command line's 0)
        "--max-failures", P_RUN, "Stop asking a model after this many failed requests (0: never stop).")] = 50
    max_cost: Annotated[Optional[float], _opt(
        "--max-cost", P_RUN, "Stop (resumably) once this run has spent this many dollars.")] = None
    retry_errors: Annotated[bool, _opt("--retry-errors", P_RUN, "Ask again what failed in earlier runs.")] = False
    cache_dir: Annotated[Optional[str], _opt(  # None: the run directory
        "--cache-dir", P_RUN, "A cache folder shared between runs (default: the run directory).",
        cli=Optional[Path])] = None
    dry_run: ClassVar[Annotated[bool, _opt(
        "--dry-run", P_RUN, "Print the requests, images and estimated tokens and cost per model and task; send and "
        "write nothing.")]] = False
    overwrite: Annotated[bool, _opt(
        "--overwrite", P_RUN, "Replace a run directory that holds a run with another configuration (default: "
        "refuse; the same configuration resumes).")] = False

    # --- Output -------------------------------------------------------------------------------------------------
    out: Annotated[str, _opt(
        "--out", P_OUTPUT, "The run directory (results.json, predictions.jsonl, cache, log); not needed with "
        "--dry-run.", cli=Optional[Path])]
    quiet: Annotated[bool, _opt(("--quiet", "-q"), P_OUTPUT, "No progress display or table (CI).")] = False
    progress_interval: Annotated[float, _opt(  # rescue.display.PlainProgress
        "--progress-interval", P_OUTPUT, "Where the output is no terminal (a log file, CI): seconds between two "
        "plain progress lines, in place of the bars.",
        check=(_above(0), "a positive number of seconds"))] = PLAIN_PROGRESS_INTERVAL


@dataclass(frozen=True)
class Declared:
    """One declared option: its name (a ``RunConfig`` field unless ``in_config`` is false), type and default."""

    name: str
    annotation: Any  # the field's type, without the Opt
    opt: Opt
    default: Any
    in_config: bool

    @property
    def choices(self) -> tuple[str, ...]:
        """The values a ``Literal`` field allows (``()``: any of its type)."""
        return literal_choices(self.annotation)

    def cli_annotation(self) -> Any:
        """The type ``rescue run`` declares: the option's own, else the field's with ``Literal`` read as ``str``
        (the model checks the value and names the option in its error)."""
        if self.opt.cli is not None:
            return self.opt.cli
        if self.opt.list_choices:  # click lists an enum's values; this one is made from the Literal's
            listed = Enum(self.name, {choice: choice for choice in self.choices}, type=str)  # type: ignore[misc]
            return Optional[listed] if _optional(self.annotation) else listed
        if self.choices:
            return Optional[str] if _optional(self.annotation) else str
        return self.annotation

    def cli_default(self) -> Any:
        """The default ``rescue run`` shows: the field's, or ``cli_default`` where the command line has its own form."""
        return self.opt.cli_default if self.opt.cli is not None else self.default


_NO_DEFAULT = object()


@functools.cache
def declared_options(cls: type = RunOptions) -> tuple[Declared, ...]:
    """The options ``cls`` declares, in order."""
    found = []
    for name, hint in vars(cls).get("__annotations__", {}).items():
        in_config = typing.get_origin(hint) is not ClassVar
        if not in_config:
            (hint,) = typing.get_args(hint)
        if typing.get_origin(hint) is not Annotated:
            continue  # a field that is no option of its own (video)
        annotation, *extras = typing.get_args(hint)
        opts = [e for e in extras if isinstance(e, Opt)]
        if opts:
            found.append(Declared(name, annotation, opts[0], getattr(cls, name, _NO_DEFAULT), in_config))
    return tuple(found)


def video_options() -> tuple[Declared, ...]:
    """The options that make up a run's ``video`` field (``--media-root`` and its friends), in order."""
    return tuple(d for d in declared_options() if d.opt.video)


def gather_video(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (option name -> value, as ``rescue run`` and ``rescue.evaluate`` take them) with the video options
    taken out and put together as the ``video`` field: its VideoOptions fields, the media root as an absolute path.
    No video field is made when no media root is given and every other video option is absent or at its default
    (a command line always holds them all). Video options beside a ``video`` field of their own are an error."""
    given = {d: values[d.name] for d in video_options() if d.name in values}
    rest = {name: value for name, value in values.items() if name not in {d.name for d in given}}
    if all(value is None or (d.opt.video != "media_root" and value == d.default) for d, value in given.items()):
        return rest
    if rest.get("video") is not None:
        from rescue.errors import RunError

        raise RunError(f"give the video options either as video= or by name ({', '.join(d.name for d in given)}), "
                       "not both")
    video = {d.opt.video: value for d, value in given.items() if value is not None}
    if video.get("media_root") is not None:
        video["media_root"] = str(Path(video["media_root"]).resolve())
    return {**rest, "video": video}


def literal_choices(annotation: Any) -> tuple[str, ...]:
    """The values of a ``Literal`` (or optional ``Literal``) type; ``()`` for any other type."""
    for arg in (annotation, *typing.get_args(annotation)):
        if typing.get_origin(arg) is Literal:
            return typing.get_args(arg)
    return ()


def _optional(annotation: Any) -> bool:
    return typing.get_origin(annotation) is Union and type(None) in typing.get_args(annotation)


def option(name: str) -> Declared:
    """The declaration of the option or field ``name`` (a :class:`RunOptions` attribute)."""
    for declared in declared_options():
        if declared.name == name:
            return declared
    raise KeyError(name)
