"""``rescue run``: build every task's instances, ask every model, parse, score, aggregate, write the run directory.

Per model and task: ``task.build`` → batches (instances of one sample) → ``task.render`` → a task-free
:class:`~rescue.llm.ChatRequest` to the model through a :class:`rescue.llm.Session` (cache, retries, limiter,
budget; offline baselines answer from the task instead) → ``task.parse`` → instances a batch answer left out
(or could not be parsed, or were refused) are asked again one by one → :class:`PredictionRecord` with
``task.instance_scores`` → ER/VP judge and BERTScore hooks → ``task.aggregate`` over all instances, each
scenario and each sample. All batches of all models and tasks are in flight together; each model's limiter
decides how many requests it really has open.

``results.json`` and ``predictions.jsonl`` are written atomically (temporary file + ``os.replace``), so an
interrupted run never leaves a half-written result; the cache makes the rerun cheap.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rescue.data.errors import RescueError
from rescue.engine.progress import ProgressDisplay, RunLog, TaskProgress
from rescue.engine.types import TaskModel, TaskRequest, as_task_model
from rescue.llm.cache import ResponseCache
from rescue.llm.client import DEFAULT_MAX_ANSWER_BYTES, GenerationSettings
from rescue.llm.cost import PriceTable
from rescue.llm.reliable import DEFAULT_RETRY_AFTER_CAP, Budget, ReliableModel
from rescue.llm.session import Session, stderr_notice
from rescue.llm.types import ChatAnswer, ChatRequest, Model, Usage
from rescue.tasks.base import (
    MODES,
    PARSE_POLICIES,
    TASK_NAMES,
    VIDEO_MODES,
    Instance,
    Prediction,
    PredictionRecord,
    RenderOptions,
    Task,
    make_record,
)

from rescue.tasks.batching import BatchPlan, plan_batches

RESULTS = "results.json"
PREDICTIONS = "predictions.jsonl"
CACHE = "cache.sqlite"
LOG = "run.log"
SCOPES = ("couple", "family")


class RunError(RescueError):
    """A run that cannot start or cannot be rescored; the message says which option or file is wrong."""


@dataclass
class RunConfig:
    """Everything that decides a run's results; stored as ``results.json["config"]`` and read back by rescore."""

    out: str
    models: list[str] = field(default_factory=list)  # empty: the offline baselines
    tasks: list[str] = field(default_factory=lambda: list(TASK_NAMES))
    data: str | None = None  # None: the bundled demo dataset
    mode: str = "dialogue"
    video: Any = None  # video modes: rescue.video.VideoOptions (media root, frames or clip ...); stored as a dict
    context_size: int | None = None  # None: each task's default
    limit_samples: int | None = None
    batch_size: str = "1"  # "1", a number, or "authors" (each task's authors' batch size)
    parse: str = "strict"  # "strict" or "lenient" (rescue.tasks.base.ParsePolicy); rescore can switch it
    rpp_gold: str | None = None  # shorthand for task_options["rpp"]["rpp_gold"]
    task_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # per task: its build options
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    seed: int | None = None  # sent to the API where supported; seeds baseline/uniform
    max_tokens: int | None = None
    json_mode: bool = True
    extra_body: dict[str, Any] = field(default_factory=dict)
    timeout: float = 240.0  # seconds for a whole request, the body included
    retry_after_cap: float = DEFAULT_RETRY_AFTER_CAP  # the longest Retry-After obeyed; asked twice for more: failed
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES  # a larger answer is a request_error, never stored
    model_settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # per model spec: overrides
    concurrency: int = 16
    max_retries: int = 5
    max_failures: int | None = 50
    max_cost: float | None = None
    retry_errors: bool = False
    cache_dir: str | None = None  # None: the run directory
    prices: str | None = None
    judges: list[str] = field(default_factory=list)
    judge_base_url: str | None = None  # None: the judges' presets, or --base-url
    judge_api_key_env: str | None = None
    judge_scale: str = "likert"
    bertscore: bool = True
    bertscore_model: str | None = None
    bertscore_layers: int | None = None  # None: the backbone's default layer
    bertscore_rescale: bool = False
    quiet: bool = False

    def __post_init__(self) -> None:
        self.models = list(dict.fromkeys(self.models))  # a model named twice is run once
        unknown = [t for t in self.tasks if t not in TASK_NAMES]
        if unknown:
            raise RunError(f"--tasks: unknown task(s) {', '.join(unknown)}; choose from {', '.join(TASK_NAMES)}")
        if self.mode not in MODES:
            raise RunError(f"--mode {self.mode!r}: choose one of {', '.join(MODES)}")
        if self.mode in VIDEO_MODES:
            from rescue.video import check_video_config

            self.video = check_video_config(self.video, self.batch_size)
        elif self.video is not None:
            raise RunError(f"--media-root and the video options need --mode {' or '.join(VIDEO_MODES)}")
        if self.batch_size != "authors":
            try:
                if int(self.batch_size) < 1:
                    raise ValueError
            except ValueError:
                raise RunError(f"--batch-size {self.batch_size!r}: a positive number or 'authors'") from None
        if self.context_size is not None and self.context_size < -1:
            raise RunError(f"--context-size {self.context_size}: use -1 (all prior rows), 0 (none) or a positive count")
        if self.parse not in PARSE_POLICIES:
            raise RunError(f"--parse {self.parse!r}: choose one of {', '.join(PARSE_POLICIES)}")
        if self.concurrency < 1:
            raise RunError("--concurrency must be at least 1")
        if not self.timeout > 0:
            raise RunError(f"--timeout {self.timeout}: a positive number of seconds")
        if not self.retry_after_cap >= 0:
            raise RunError(f"--retry-after-cap {self.retry_after_cap}: 0 or more seconds")
        if self.max_answer_bytes < 1:
            raise RunError(f"--max-answer-bytes {self.max_answer_bytes}: a positive number of bytes")
        if self.limit_samples is not None and self.limit_samples < 1:
            raise RunError("--limit-samples must be at least 1")
        self.task_options = _checked_task_options(self.task_options, self.rpp_gold)

    @property
    def model_specs(self) -> list[str]:
        if self.models:
            return list(self.models)
        from rescue.engine.baselines import BASELINE_NAMES

        return list(BASELINE_NAMES)

    def settings_for(self, spec: str) -> GenerationSettings:
        base: dict[str, Any] = {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
                                "json_mode": self.json_mode, "extra_body": dict(self.extra_body), "timeout": self.timeout,
                                "max_answer_bytes": self.max_answer_bytes}
        own = self.model_settings.get(spec, {})
        merged = {**base, **{k: v for k, v in own.items() if k != "extra_body"}}
        merged["extra_body"] = {**base["extra_body"], **own.get("extra_body", {})}
        allowed = set(GenerationSettings.__dataclass_fields__)
        bad = set(merged) - allowed
        if bad:
            raise RunError(f"model settings for {spec!r}: unknown field(s) {', '.join(sorted(bad))}; "
                           f"known: {', '.join(sorted(allowed))}")
        return GenerationSettings(**merged)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["models"] = self.model_specs
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], origin: str) -> RunConfig:
        known = set(cls.__dataclass_fields__)
        data = dict(data)
        # results.json records the BERTScore backbone under "bertscore" (None: BERTScore was off).
        if not isinstance(data.get("bertscore"), bool):
            data["bertscore"] = data.get("bertscore") is not None
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as exc:
            raise RunError(f"{origin}: field config: {exc}") from None


@dataclass
class PairResult:
    """One model on one task."""

    model: str
    task: str
    records: list[PredictionRecord]
    judge_usage: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RunOutcome:
    results: dict[str, Any]
    records: list[PredictionRecord]
    out: Path
    complete: bool
    stopped: str | None


# ---------------------------------------------------------------------------------------------------------
# Building blocks


def load_task(name: str) -> Task:
    from rescue.tasks import get_task

    return get_task(name)


def batch_plan(config: RunConfig, task: Task, instances: list[Instance]) -> BatchPlan:
    """The run's batches of one task: the requested grouping, split wherever it would leak (tasks.batching)."""
    from rescue.tasks.prompts import context_size

    return plan_batches(task, instances, _batch_size(config, task),
                        context_size(config.context_size, int(task.default_context_size)))


def _batch_size(config: RunConfig, task: Task) -> int:
    return int(task.default_batch_size) if config.batch_size == "authors" else int(config.batch_size)


def _names_preset(spec: str) -> bool:
    from rescue.llm.providers import PRESETS

    prefix, _, rest = spec.partition("/")
    return bool(rest) and prefix in PRESETS


def _checked_task_options(options: dict[str, dict[str, Any]], rpp_gold: str | None) -> dict[str, dict[str, Any]]:
    """Per-task build options, each checked against its task's options model before any work."""
    from rescue.tasks import get_task
    from rescue.tasks.spec import validate_options

    checked: dict[str, dict[str, Any]] = {}
    for name, values in options.items():
        task = get_task(name)
        checked[task.name] = dict(values)
    if rpp_gold:
        checked.setdefault("rpp", {}).setdefault("rpp_gold", rpp_gold)
    for name, values in checked.items():
        validate_options(name, get_task(name).declaration.options, values)
    return checked


def _build_options(config: RunConfig, task: Task) -> dict[str, Any]:
    return dict(config.task_options.get(task.name, {}))


def values_used(config: RunConfig, tasks: dict[str, Task], instances: dict[str, list[Instance]]) -> dict[str, Any]:
    """What the run really used where its config says "default" (None): a report compares runs on these."""
    from rescue.data.fingerprint import data_sha256
    from rescue.tasks.spec import validate_options

    used: dict[str, Any] = {
        "data_sha256": data_sha256(config.data),
        "task_options": {n: validate_options(n, t.declaration.options, _build_options(config, t)).model_dump(mode="json")
                         for n, t in tasks.items()},
        "context_size": {n: config.context_size if config.context_size is not None else int(t.default_context_size)
                         for n, t in tasks.items()},
        "batch_size": {n: _batch_size(config, t) for n, t in tasks.items()},
        "parse": getattr(config, "parse", None) or "strict",
    }
    if "rpp" in instances:
        used["rpp_gold"] = used["task_options"]["rpp"].get("rpp_gold")
        used["rpp_gold_field"] = {i.sample_id: i.extra.get("gold_field") for i in instances["rpp"]}
    return used


def _from_answer(task: Task, answer: ChatAnswer, batch: list[Instance], policy: str = "strict") -> dict[str, Prediction]:
    if answer.status != "ok":
        return {i.instance_id: Prediction(i.instance_id, answer.status, raw=answer.text, error=answer.error)
                for i in batch}
    predictions = task.parse(answer.text or "", batch, policy)  # type: ignore[arg-type]
    if answer.meta.get("finish_reason") == "length":
        for p in predictions.values():
            if p.status != "ok":
                p.error = f"{p.error} (the answer hit max_tokens: finish_reason=length)".strip()
    for instance in batch:  # a parser that forgets an instance must not drop it
        if instance.instance_id not in predictions:
            predictions[instance.instance_id] = Prediction(instance.instance_id, "missing", raw=answer.text,
                                                           error="no answer item for this instance")
    return predictions


async def _ask(model: TaskModel, task: Task, batch: list[Instance], options: RenderOptions) -> ChatAnswer:
    # The request itself is task-free; the tag and ids only group accounting and name the instances in logs.
    request = ChatRequest(messages=task.render(batch, options), max_tokens=int(task.max_tokens), tag=task.name,
                          ids=tuple(i.instance_id for i in batch))
    return await model.solve(TaskRequest(request, task, batch))


async def _run_batch(model: TaskModel, task: Task, batch: list[Instance], options: RenderOptions,
                     progress: TaskProgress, policy: str = "strict") -> dict[str, Prediction]:
    answer = await _ask(model, task, batch, options)
    predictions = _from_answer(task, answer, batch, policy)
    if len(batch) > 1:
        # The authors' rule, minus their fallbacks: what a batch answer did not settle is asked alone.
        again = [i for i in batch if predictions[i.instance_id].status in ("missing", "parse_error", "refused")]
        singles = await asyncio.gather(*(_ask(model, task, [i], options) for i in again))
        for instance, single in zip(again, singles):
            predictions.update(_from_answer(task, single, [instance], policy))
    progress.advance(len(batch), sum(1 for p in predictions.values() if p.status != "ok"))
    return predictions


async def run_pair(model: TaskModel, task: Task, instances: list[Instance], config: RunConfig,
                   progress: TaskProgress) -> list[PredictionRecord]:
    options = RenderOptions(mode=config.mode, context_size=config.context_size)  # type: ignore[arg-type]
    model.prepare(task, instances)
    batches = batch_plan(config, task, instances).batches
    # A batch renders its prompt as soon as it starts; without a gate every prompt of the run would sit in
    # memory at once while waiting for the limiter. Twice the concurrency keeps the limiter fed.
    gate = asyncio.Semaphore(max(2 * config.concurrency, 8))

    async def gated(batch: list[Instance]) -> dict[str, Prediction]:
        async with gate:
            return await _run_batch(model, task, batch, options, progress, config.parse)

    answered = await asyncio.gather(*(gated(b) for b in batches))
    predictions: dict[str, Prediction] = {}
    for part in answered:
        predictions.update(part)
    return [make_record(task, model.name, i, predictions[i.instance_id]) for i in instances]


def aggregate_scopes(task: Task, records: list[PredictionRecord]) -> dict[str, Any]:
    """``{"all": .., "couple": .., "family": .., "samples": {sample_id: ..}}``: micro over instances per scope."""
    from rescue.tasks import scoped_aggregates

    return scoped_aggregates(task, records)


# ---------------------------------------------------------------------------------------------------------
# Generative scoring hooks (ER, VP)


async def _judge(pair: PairResult, instances: list[Instance], judges: list[Model], config: RunConfig) -> None:
    from rescue.scoring.judge import judge_records

    by_id = {i.instance_id: i for i in instances}
    pairs = [(by_id[r.instance_id], r) for r in pair.records]
    stats = await judge_records(pairs, judges=judges, task_name=pair.task, scale=config.judge_scale,  # type: ignore[arg-type]
                                concurrency=config.concurrency)
    pair.judge_usage = [s.to_dict() for s in stats.values()]


def _bertscore(pairs: list[PairResult], config: RunConfig) -> dict[str, Any] | None:
    generative = [p for p in pairs if load_task(p.task).declaration.bertscore is not None]
    if not config.bertscore or not generative:
        return None
    from rescue.scoring.bertscore import BertScoreConfig, score_bertscore

    bert = BertScoreConfig.from_option(config.bertscore_model, num_layers=config.bertscore_layers,
                                       rescale=config.bertscore_rescale)
    for pair in generative:
        score_bertscore(pair.records, bert, task_name=pair.task)
    return bert.describe()  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------------------
# Writing


def write_atomic(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def write_predictions(path: Path, records: Iterable[PredictionRecord]) -> None:
    write_atomic(path, "".join(r.model_dump_json() + "\n" for r in records))


def _usage_block(model: ReliableModel | None, judge_usage: dict[str, list[dict[str, Any]]],
                 prices: PriceTable, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    usage: dict[str, Any] = {}
    cost: dict[str, Any] = {"tasks": {}, "judge": None, "total": 0.0}
    total: float | None = 0.0
    if model is not None:
        for (purpose, task), stats in model.stats.items():
            if purpose != "predict":
                continue
            usage[task] = stats.as_dict()
            task_cost = prices.cost(name, stats.usage)
            cost["tasks"][task] = None if task_cost is None else round(task_cost, 6)
            total = None if total is None or task_cost is None else total + task_cost
    if judge_usage:
        usage["judge"] = judge_usage
        judge_cost: float | None = 0.0
        for entries in judge_usage.values():
            for entry in entries:
                spent = prices.cost(entry["judge"], Usage(entry["input_tokens"], entry["output_tokens"],
                                                          entry["cached_input_tokens"]))
                judge_cost = None if judge_cost is None or spent is None else judge_cost + spent
        cost["judge"] = None if judge_cost is None else round(judge_cost, 6)
        total = None if total is None or judge_cost is None else total + judge_cost
    cost["total"] = None if total is None else round(total, 6)
    return usage, cost


# ---------------------------------------------------------------------------------------------------------
# The run


class Runner:
    """One run. ``models`` adds model objects of your own (any :class:`~rescue.llm.types.Model`, e.g. an HF
    pipeline behind ``complete``, or a :class:`~rescue.engine.types.TaskModel`) to the specs in the config;
    they are evaluated under their ``name`` like any other."""

    def __init__(self, config: RunConfig, *, offline: bool = False, models: Iterable[Model | TaskModel] = ()):
        self.config = config
        self.offline = offline  # rescore: answers come from the cache only, nothing is requested
        self.out = Path(config.out)
        self.prices = PriceTable.load(config.prices)
        self.plans: dict[str, BatchPlan] = {}
        self.given: dict[str, Model | TaskModel] = {m.name: m for m in models}
        if self.given:
            config.models = list(dict.fromkeys([*config.models, *self.given]))

    def _cache_folder(self) -> Path:
        return Path(self.config.cache_dir) if self.config.cache_dir else self.out

    def _cache(self) -> ResponseCache:
        return ResponseCache(self._cache_folder() / CACHE)

    def _locate_media(self, samples: list[Any]) -> Any:
        if self.config.mode not in VIDEO_MODES:
            return None
        from rescue.video import VideoContext

        return VideoContext.locate(self.config.video, samples, self._cache_folder() / "media")

    def _session(self, cache: ResponseCache, budget: Budget, log: RunLog) -> Session:
        config = self.config
        return Session(cache=cache, concurrency=config.concurrency, max_retries=config.max_retries,
                       retry_errors=config.retry_errors, max_failures=config.max_failures, prices=self.prices,
                       budget=budget, log=log, offline=self.offline, retry_after_cap=config.retry_after_cap,
                       notice=None if config.quiet else stderr_notice)

    def _resolve(self, spec: str, *, judge: bool = False) -> Model | TaskModel:
        from rescue.engine.resolve import resolve_model

        if spec in self.given and not judge:
            return self.given[spec]
        base_url, key_env = self.config.base_url, self.config.api_key_env
        if judge and self.config.judge_base_url:
            base_url, key_env = self.config.judge_base_url, self.config.judge_api_key_env
        elif judge and _names_preset(spec):
            # `--model X --base-url <vLLM> --judge openai/gpt-5.4`: the judge goes to its provider, not to vLLM.
            base_url, key_env = None, self.config.judge_api_key_env
        model = resolve_model(spec, base_url=base_url, api_key_env=key_env, settings=self.config.settings_for(spec),
                              need_key=not self.offline)
        if judge and not callable(getattr(model, "complete", None)):
            raise RunError(f"--judge {spec!r}: a judge must be a model that reads messages, not an offline baseline")
        return model

    async def run(self) -> RunOutcome:
        from rescue.data.loading import load_samples

        config = self.config
        started = time.monotonic()
        # Credentials first: a missing key fails before any data is read or any folder is made.
        raw_models = {spec: self._resolve(spec) for spec in config.model_specs}
        raw_judges: list[Model] = [self._resolve(spec, judge=True) for spec in config.judges]  # type: ignore[misc]
        samples = load_samples(config.data)  # bad data stops the run before any folder is made
        if config.limit_samples:
            samples = samples[: config.limit_samples]
        video = self._locate_media(samples)  # as does a sample without media
        self.out.mkdir(parents=True, exist_ok=True)
        tasks: dict[str, Task] = {name: load_task(name) for name in config.tasks}
        instances = {name: task.build(samples, **_build_options(config, task)) for name, task in tasks.items()}
        self.used = values_used(config, tasks, instances)
        log = RunLog(self.out / LOG)
        cache = self._cache()
        if video is not None:  # every frame or clip is made (or found) before the first request
            tasks = video.wrap_tasks(tasks, instances, config.context_size, log,
                                     show=not (config.quiet or self.offline))
        self.plans = {name: batch_plan(config, task, instances[name]) for name, task in tasks.items()}
        budget = Budget(config.max_cost, self.prices)
        log.event("start", offline=self.offline, models=config.model_specs, tasks=config.tasks,
                  instances={n: len(v) for n, v in instances.items()}, cache=str(cache.path))
        for spec in config.model_specs:
            if config.max_cost is not None and self.prices.price(spec) is None:
                log.event("warning", model=spec, message="no price for this model: --max-cost cannot count its cost")
        session = self._session(cache, budget, log)
        models: dict[str, TaskModel] = {}
        reliable: dict[str, ReliableModel] = {}  # the models that go through the session (not the baselines)
        judges: list[ReliableModel] = []
        pairs: list[PairResult] = []
        try:
            with ProgressDisplay(config.quiet or self.offline) as display:
                trackers: dict[tuple[str, str], TaskProgress] = {}

                def on_retry(request: ChatRequest, spec: str) -> None:
                    if (spec, request.tag) in trackers:
                        trackers[(spec, request.tag)].retry()

                for spec in config.model_specs:
                    raw = raw_models[spec]
                    if callable(getattr(raw, "solve", None)):
                        models[spec] = as_task_model(raw)
                    else:
                        reliable[spec] = session.wrap(raw, on_retry=lambda r, s=spec: on_retry(r, s))  # type: ignore[arg-type]
                        models[spec] = as_task_model(reliable[spec])
                judges = [session.wrap(raw) for raw in raw_judges]
                # A baseline that does not apply to a task (persist has no RPP answer ...) sits that task out.
                todo = [(spec, name) for spec in config.model_specs for name in config.tasks
                        if models[spec].applies_to(name)]
                for spec, name in todo:
                    trackers[(spec, name)] = display.task(spec, name, len(instances[name]))

                async def one(spec: str, name: str) -> PairResult:
                    records = await run_pair(models[spec], tasks[name], instances[name], config, trackers[(spec, name)])
                    pair = PairResult(spec, name, records)
                    if tasks[name].declaration.judge is not None:
                        await _judge(pair, instances[name], list(judges), config)
                    tracker = trackers[(spec, name)]
                    log.event("task_done", model=spec, task=name, instances=len(records), failures=tracker.failures,
                              retries=tracker.retries)
                    return pair

                pairs = list(await asyncio.gather(*(one(s, n) for s, n in todo)))
            bertscore = _bertscore(pairs, config)
        finally:
            for spec, model in models.items():
                if spec not in reliable:
                    await model.aclose()
            await session.aclose()
            cache.close()
        stopped = None
        if budget.exhausted:
            stopped = f"--max-cost {config.max_cost} reached"
        fatal = {s: m.fatal for s, m in reliable.items() if m.fatal}
        if fatal:
            stopped = (stopped + "; " if stopped else "") + "; ".join(f"{s}: {f}" for s, f in fatal.items())
        results = self._results(pairs, reliable, bertscore, budget, stopped, time.monotonic() - started)
        records = [r for p in pairs for r in p.records]
        write_predictions(self.out / PREDICTIONS, records)
        write_atomic(self.out / RESULTS, json.dumps(results, indent=2, ensure_ascii=False) + "\n")
        log.event("done", complete=stopped is None, stopped=stopped, cost=results["cost"],
                  elapsed_s=results["run"]["elapsed_s"])
        log.close()
        return RunOutcome(results, records, self.out, stopped is None, stopped)

    def _results(self, pairs: list[PairResult], models: dict[str, ReliableModel], bertscore: dict[str, Any] | None,
                 budget: Budget, stopped: str | None, elapsed: float) -> dict[str, Any]:
        config_json = self.config.to_json()
        config_json["bertscore"] = bertscore
        from rescue import __version__

        config_json["rescue_version"] = __version__
        config_json["used"] = getattr(self, "used", {})
        block: dict[str, Any] = {}
        total: float | None = 0.0
        ran = {pair.model for pair in pairs}
        # A baseline none of whose tasks were asked for (nearest with --tasks itp) has nothing to report.
        for spec in [s for s in self.config.model_specs if s in ran or self.config.models]:
            entry: dict[str, Any] = {}
            judge_usage: dict[str, list[dict[str, Any]]] = {}
            for pair in pairs:
                if pair.model != spec:
                    continue
                entry[pair.task] = aggregate_scopes(load_task(pair.task), pair.records)
                if pair.judge_usage:
                    judge_usage[pair.task] = pair.judge_usage
            usage, cost = _usage_block(models.get(spec), judge_usage, self.prices, spec)
            entry["usage"] = usage
            entry["cost"] = cost
            block[spec] = entry
            total = None if total is None or cost["total"] is None else total + cost["total"]
        return {
            "config": config_json,
            "run": {"complete": stopped is None, "stopped": stopped, "elapsed_s": round(elapsed, 3),
                    "offline": self.offline},
            "cost": {"total": None if total is None else round(total, 6), "spent_this_run": round(budget.spent, 6)},
            "models": block,
            # How each task's requests were formed (the same for every model), batches split against leaks counted.
            "batching": {name: plan.summary() for name, plan in self.plans.items()},
        }


def run(config: RunConfig, *, models: Iterable[Model | TaskModel] = ()) -> RunOutcome:
    """Run ``config``; ``models`` adds model objects of your own (see :class:`Runner`)."""
    return asyncio.run(Runner(config, models=models).run())


def rescore(run_dir: str | Path, *, data: str | None = None, media_root: str | None = None,
            parse: str | None = None) -> RunOutcome:
    """Recompute a run directory's records and metrics from its cached answers, asking no model.

    A video-mode run needs its media to rebuild the requests; ``media_root`` says where it is now.
    ``parse`` re-reads the cached answers under another parse policy ("strict" or "lenient"): a re-ask the
    original run never sent (strict needs more of them) is then a request_error, never a new request."""
    root = Path(run_dir)
    path = root / RESULTS
    if not path.is_file():
        raise RunError(f"{path}: missing (is this a run directory written by `rescue run --out`?)")
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    if not isinstance(stored, dict) or not isinstance(stored.get("config"), dict):
        raise RunError(f"{path}: field config: missing; cannot know what the run was")
    config = RunConfig.from_json(stored["config"], str(path))
    config.out = str(root)
    if data is not None:
        config.data = data
    if parse is not None:
        if parse not in PARSE_POLICIES:
            raise RunError(f"--parse {parse!r}: choose one of {', '.join(PARSE_POLICIES)}")
        config.parse = parse
    if media_root is not None:
        if config.mode not in VIDEO_MODES:
            raise RunError(f"--media-root: {root} is a {config.mode}-mode run, which uses no media")
        config.video.media_root = str(Path(media_root).resolve())
    return asyncio.run(Runner(config, offline=True).run())


