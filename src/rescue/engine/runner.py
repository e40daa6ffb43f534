"""``rescue run``: build every task's instances, ask every model, parse, score, aggregate, write the run directory.

Per model and task: ``task.build`` → batches (instances of one sample; :mod:`rescue.engine.plan`) →
``task.render`` → a task-free :class:`~rescue.llm.ChatRequest` to the model through a
:class:`rescue.llm.ModelSession` (cache, retries, limiter, budget; offline baselines answer from the task instead)
→ ``task.parse`` → re-asks (:mod:`rescue.engine.reask`) → :class:`PredictionRecord` with
``task.instance_scores`` → ER/VP judge and BERTScore hooks (:mod:`rescue.engine.hooks`) → ``task.aggregate``
over all instances, each scenario and each sample (:mod:`rescue.engine.accounting`). All pairs are asked at
once (:mod:`rescue.engine.execute`); a folder holding a run is resumed or refused (:mod:`rescue.engine.resume`).

``results.json`` and ``predictions.jsonl`` are written atomically (:func:`rescue.runs.folder.write_run`), so an
interrupted run never leaves a half-written result; the cache makes the rerun cheap.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rescue.errors import (
    BertScoreInterrupted as BertScoreInterrupted,
    RescueError,
    RunInterrupted as RunInterrupted,
    RunTerminated,
)
from rescue.data.models import Sample
from rescue.engine.accounting import RunCounts, config_block, models_block, run_counts
from rescue.engine.config import RunConfig, RunError
from rescue.engine.execute import Execution, RunModels
from rescue.engine.failures import credential_error_for_judge, endpoint_alarm, stop_reason, terminal_safe
from rescue.engine.hooks import WORKER_PREFIX, bertscore_pairs
from rescue.engine.outcome import PairResult, RunOutcome
from rescue.engine.parts import Asking, Batching, BertScoring, Judging, Resuming, Roster, Selection
from rescue.engine.plan import (
    batch_plan,
    build_options,
    check_extras,
    check_local_models,
    LIMIT_SEED,
    limit_instances,
    load_task,
    names_preset,
    samples_sha256,
    select_samples,
    values_used,
    Used,
)
from rescue.engine.progress import ProgressDisplay, RunLog
from rescue.engine.resume import DEFAULT_SEED, Growth, plan_growth, prepare_folder, stored_growth
from rescue.engine.stop import RunSignals
from rescue.engine.types import TaskModel
from rescue.files import DirectoryLock, check_out_folder
from rescue.llm import ResponseCache, PriceTable, Budget, ReliableModel
from rescue.llm._secrets import refused_notes
from rescue.llm import ModelSession, Model
from rescue.llm._types import require_model
from rescue.runs.folder import CACHE, LOG, RunDirError, lock_run, locked_message, read_results, write_run
from rescue.runs.results import RESULTS, SCHEMA_VERSION, DataInfo, RunResults
from rescue.tasks.base import PARSE_POLICIES, Instance, ParsePolicy, PredictionRecord, Task
from rescue.tasks.batching import BatchingSummary, BatchPlan
from rescue.tasks.render import RowCache

if TYPE_CHECKING:
    from rescue.scoring.bertscore import BackboneDescription
    from rescue.video import VideoContext

# WORKER_PREFIX stays importable here: `rescue`'s exit looks for the BERTScore threads through this module.
__all__ = ["WORKER_PREFIX", "RunConfig", "RunError", "RunOutcome", "Runner", "rescore", "run", "run_async"]


class Runner:
    """One run. ``models`` adds model objects of your own (any :class:`~rescue.llm.Model`, e.g. an HF
    pipeline behind ``complete``, or a :class:`~rescue.engine.types.TaskModel`) to the specs in the config;
    they are evaluated under their ``name`` like any other."""

    def __init__(self, config: RunConfig, *, offline: bool = False, write: bool = True,
                 models: Iterable[Model | TaskModel] = (), samples: list[Sample] | None = None,
                 only: Mapping[str, Collection[str]] | None = None, samples_sha256: str | None = None):
        self.config = config
        self.samples = samples  # samples already in memory (the notebook API); None: read config.data
        # The data digest of ``samples`` when they were read from config.data (rescue verify reads them once for
        # both its checks and the rescore); None: the digest of the samples themselves.
        self.samples_sha256 = samples_sha256
        # task -> the instance ids asked, in build order (a benchmark project's --sample; no CLI option): None, all
        self.only = only
        self.offline = offline  # rescore: answers come from the cache only, nothing is requested
        self.write = write  # False: nothing is written (the notebook API without out=); no cache either
        self.out = Path(config.out)
        self.prices = PriceTable.load(config.prices)
        self.saved_answers = 0
        self.interrupted_note: str | None = None  # set when Ctrl-C stopped BERTScore and the results were written
        self.stopped_cleanly = False  # a signal stopped the asking and the results were written
        self.take_signals = False  # Ctrl-C and SIGTERM handled by the run (rescue.engine.stop): run() sets it
        self.signals: RunSignals | None = None
        self.plans: dict[str, BatchPlan] = {}  # while the run asks; then their summaries (batching)
        self.batching: dict[str, BatchingSummary] = {}
        self._stale: list[Path] = []  # leftover temporary files removed from the run directory
        self.used: Used | None = None  # what the run really used where its config says "default" (run() finds it)
        # The models and tasks added to the run the folder holds (run() finds them), and the steps it grew by.
        self.growth = Growth(list(config.models), list(config.tasks))
        # A model of your own that lacks part of the protocol fails here, before any work.
        self.given: dict[str, Model | TaskModel] = {
            m.name: m if isinstance(m, TaskModel) else require_model(m) for m in models}
        if self.given:
            config.models = list(dict.fromkeys([*config.models, *self.given]))

    def _cache_folder(self) -> Path:
        return Path(self.config.cache_dir) if self.config.cache_dir else self.out

    def _cache(self) -> ResponseCache | None:
        if not self.write and not self.config.cache_dir:
            return None
        return ResponseCache(self._cache_folder() / CACHE)

    def _locate_media(self, samples: list[Sample]) -> VideoContext | None:
        if self.config.video is None:  # not a video mode
            return None
        from rescue.video import VideoContext

        return VideoContext.locate(self.config.video, samples, self._cache_folder() / "media")

    def _session(self, cache: ResponseCache | None, budget: Budget, log: RunLog) -> ModelSession:
        config = self.config
        return ModelSession(cache=cache, concurrency=config.concurrency, max_retries=config.max_retries,
                       retry_errors=config.retry_errors, max_failures=config.max_failures, prices=self.prices,
                       budget=budget, log=log, offline=self.offline, retry_after_cap=config.retry_after_cap,
                       notice=None)

    def _resolve(self, spec: str, *, judge: bool = False) -> Model | TaskModel:
        from rescue.engine.resolve import resolve_model

        if spec in self.given and not judge:
            return self.given[spec]
        base_url, key_env = self.config.base_url, self.config.api_key_env
        if judge and self.config.judge_base_url:
            base_url, key_env = self.config.judge_base_url, self.config.judge_api_key_env
        elif judge and names_preset(spec):
            # `--model X --base-url <vLLM> --judge openai/gpt-5.4`: the judge goes to its provider, not to vLLM.
            base_url, key_env = None, self.config.judge_api_key_env
        try:
            model = resolve_model(spec, base_url=base_url, api_key_env=key_env,
                                  settings=self.config.settings_for(spec), need_key=not self.offline)
        except RescueError as exc:
            if judge:
                raise credential_error_for_judge(exc, spec) from None
            raise
        if judge and isinstance(model, TaskModel):
            raise RunError(f"--judge {spec!r}: a judge must be a model that reads messages, not an offline baseline")
        return model

    def check(self) -> tuple[dict[str, Model | TaskModel], list[Model]]:
        """Every check of the options a run makes before any work, and every ``--model`` and ``--judge``
        resolved: a missing key (unless ``offline``), an unknown preset or local model, a bad ``--base-url``, a
        ``--thinking`` level the provider cannot be told, a baseline as judge, a missing extra and an ``--out`` or
        ``--cache-dir`` that is no folder fail here, before any data is read or any folder is made. ``--dry-run`` makes the
        same checks (:func:`check_run`)."""
        config = self.config
        check_local_models(config.model_specs, "--model")
        check_local_models(config.judges, "--judge")
        if not self.offline and any(s.startswith("local/") for s in [*config.model_specs, *config.judges]):
            from rescue.llm.local import check_llama_server

            check_llama_server()  # the 'local' extra, named, before any work
        raw_models = {spec: self._resolve(spec) for spec in config.model_specs}
        raw_judges: list[Model] = [self._resolve(spec, judge=True) for spec in config.judges]  # type: ignore[misc]
        check_extras(config.bertscore, {name: load_task(name) for name in config.tasks})
        if self.write:
            check_out_folder(self.out)
        if config.cache_dir:
            check_out_folder(config.cache_dir, "--cache-dir")
        return raw_models, raw_judges

    def _load_samples(self) -> tuple[list[Sample], str, DataInfo]:
        """The samples the run evaluates, their fingerprint, and results.json's ``data`` block."""
        from rescue.data.fingerprint import data_sha256
        from rescue.data.loading import load_samples

        config = self.config
        if self.samples is not None:
            samples = list(self.samples)
            data_sha = self.samples_sha256 or samples_sha256(samples)
        else:
            # Bad data stops the run before any folder is made; a run exports nothing, so no record text is kept.
            samples = load_samples(config.data, keep_text=False)
            data_sha = data_sha256(config.data)
        samples, choice = select_samples(config.part(Selection), samples)
        # Absolute, beside its sha256: `rescue rescore` finds the data from any folder.
        data_info = DataInfo(path=str(Path(config.data).resolve()) if config.data else None, sha256=data_sha,
                             samples=len(samples), sample_choice=choice,
                             sample_ids=[s.sample_id for s in samples] if choice != "all" else None,
                             split=config.split)
        return samples, data_sha, data_info

    def _lock(self) -> DirectoryLock | None:
        """The run directory, made and locked (None when the run writes nothing)."""
        if not self.write:
            return None
        self.out.mkdir(parents=True, exist_ok=True)
        try:
            return lock_run(self.out)
        except RunDirError as exc:
            raise RunError(f"--out {exc}") from None

    async def run(self) -> RunOutcome:
        """The run: resolve the models, read the samples, build the instances, lock and prepare the folder,
        ask, score and write."""
        config = self.config
        started = time.monotonic()
        if self.write and not self.offline:  # a run that adds models or tasks to the one in --out grows it
            self.growth = plan_growth(config.part(Resuming), config.model_specs, bool(config.models), config.tasks,
                                      self.out)
            config.models, config.tasks = list(self.growth.models), list(self.growth.tasks)
        if config.seed is None and not self.offline:
            # A seed is sent by default where the provider takes one; a folder's run made before keeps its own.
            config.seed = self.growth.held_seed if self.growth.holds else DEFAULT_SEED
        # Options and credentials first: they fail before any data is read or any folder is made.
        raw_models, raw_judges = self.check()
        samples, data_sha, data_info = self._load_samples()
        tasks: dict[str, Task] = {name: load_task(name) for name in config.tasks}
        video = self._locate_media(samples)  # as does a sample without media
        limit = config.part(Selection).limit
        instances = {name: limit_instances(limit, name, task.build(samples, **build_options(config.task_options, task)))
                     for name, task in tasks.items()}
        if self.only is not None:
            kept = {name: set(self.only.get(name, ())) for name in instances}
            instances = {name: [i for i in found if i.instance_id in kept[name]] for name, found in instances.items()}
        if limit is not None:
            data_info.limit, data_info.limit_seed = limit, LIMIT_SEED
        if limit is not None or self.only is not None:  # which instances --limit (or ``only``) took, per task
            data_info.instance_ids = {name: [i.instance_id for i in found] for name, found in instances.items()}
        self.used = values_used(config.part(Asking), config.task_options, tasks, instances, data_sha)
        del samples  # held by the instances alone from here, which _run lets go once every pair is asked
        self._stale = []
        lock = self._lock()
        try:
            if self.write:
                self._stale = prepare_folder(config.part(Resuming), config.result_fields(), self.out, data_sha,
                                             offline=self.offline)
            return await self._run(config, started, raw_models, raw_judges, tasks, instances, data_info, video)
        finally:
            if lock is not None:
                lock.release()

    def _log_start(self, log: RunLog, cache: ResponseCache | None, instances: dict[str, list[Instance]],
                   data_info: DataInfo) -> None:
        config = self.config
        log.event("start", rescore=self.offline, models=config.model_specs, tasks=config.tasks,
                  instances={n: len(v) for n, v in instances.items()}, cache=str(cache.path) if cache else None,
                  samples=data_info.samples, sample_ids=data_info.sample_ids)
        if self._stale:
            log.event("cleanup", removed=[p.name for p in self._stale])
        for spec in config.model_specs:
            if config.max_cost is not None and self.prices.price(spec) is None:
                log.event("warning", model=spec, message="no price for this model: --max-cost cannot count its cost")

    @staticmethod
    def _listen(log: RunLog, session: ModelSession, display: ProgressDisplay, endpoints: dict[str, str]) -> None:
        """What the terminal shows while the run asks: an unreachable endpoint at once, the model layer's notices
        (a Retry-After over the cap) above the bars, quiet or not, and keys too short to mask."""
        log.listeners.append(endpoint_alarm(display, endpoints))
        session.notice = lambda message: display.warn(terminal_safe(message))
        for note in refused_notes():  # a key too short to mask: said once, never quoted
            log.event("warning", message=note)
            display.warn(note)

    def _phase(self, phase: str) -> None:
        if self.signals is not None:
            self.signals.phase = phase

    async def _bertscore(self, pairs: list[PairResult], display: ProgressDisplay, log: RunLog,
                         cache: ResponseCache | None, budget: Budget) -> tuple[BackboneDescription | None, str | None]:
        """BERTScore's backbone description, and the note of a Ctrl-C that stopped it (or the asking before it:
        a stopping run computes none)."""
        if budget.stopped is not None:
            self.stopped_cleanly = True
            log.event("interrupted", reason=budget.stopped)
            return None, budget.stopped
        try:
            return await bertscore_pairs(pairs, self.config.part(BertScoring), display, log,
                                         self._cache_folder() if cache is not None else None), None
        except BertScoreInterrupted as exc:
            # Every answer is in: the results are written (without BERTScore) and say they are incomplete.
            return None, exc.note

    def _let_go(self, execution: Execution) -> None:
        """What only the asking needs let go before the records are unpacked: the instances, with them the
        samples, and the encoded rows (the memory the records then reuse; benchmarks/README.md). The
        instances' dict is emptied in place: every holder of it (the run, the execution) lets go at once."""
        self.batching = {name: plan.summary() for name, plan in self.plans.items()}
        self.plans = {}
        execution.instances.clear()
        execution.rows = RowCache()

    def _describe_baselines(self, models: dict[str, TaskModel]) -> None:
        # How a trained baseline answered (its folds and features) is part of what the run used.
        described: dict[str, dict[str, Any]] = {spec: getattr(m, "describe", dict)() for spec, m in models.items()}
        if any(described.values()) and self.used is not None:
            self.used["baselines"] = {spec: d for spec, d in described.items() if d}

    async def _run(self, config: RunConfig, started: float, raw_models: dict[str, Model | TaskModel],
                   raw_judges: list[Model], tasks: dict[str, Task], instances: dict[str, list[Instance]],
                   data_info: DataInfo, video: VideoContext | None) -> RunOutcome:
        log = RunLog(self.out / LOG if self.write else None)
        cache = self._cache()
        if video is not None:  # every frame or clip is made (or found) before the first request
            tasks = video.wrap_tasks(tasks, instances, config.context_size, log,
                                     show=not (config.quiet or self.offline))
        asking = config.part(Asking)
        self.plans = {name: batch_plan(asking, task, instances[name]) for name, task in tasks.items()}
        budget = Budget(config.max_cost, self.prices)
        self._log_start(log, cache, instances, data_info)
        endpoints = {spec: str(getattr(raw, "cache_identity", None) or spec) for spec, raw in raw_models.items()}
        judge_endpoints = {raw.name: str(getattr(raw, "cache_identity", None) or raw.name) for raw in raw_judges}
        session = self._session(cache, budget, log)
        run_models = RunModels()
        interrupted = False
        try:
            with ProgressDisplay(config.quiet, config.progress_interval) as display, \
                    RunSignals(budget, display, log).taken(self.take_signals) as self.signals:
                self._listen(log, session, display, {**endpoints, **judge_endpoints})
                if self.growth.grows:
                    log.event("grow", models=self.growth.added_models, tasks=self.growth.added_tasks)
                    display.note(f"growing the run in {terminal_safe(str(self.out))}: adding "
                                 f"{terminal_safe(self.growth.describe())} (what it holds is answered from the cache)")
                run_models.wrap(session, config.model_specs, raw_models, raw_judges)
                if self.used is not None:  # which models' requests carry the seed
                    self.used["seeds"] = {spec: config.seed if seeded else None
                                          for spec, seeded in run_models.seeded.items()}
                execution = Execution(asking, config.part(Judging), config.part(Batching), run_models, tasks, instances,
                                      display, log, self._cache_folder(),
                                      batched=config.batch and self.write and not self.offline,
                                      on_phase=self._phase, stopping=lambda: budget.stopped is not None,
                                      run_folder=self.out if config.cache_dir else None)
                pairs = await execution.ask_all()
                self._describe_baselines(run_models.models)
                self._let_go(execution)
                for pair in pairs:
                    pair.unpack()
                bertscore, interrupted_note = await self._bertscore(pairs, display, log, cache, budget)
        except (KeyboardInterrupt, asyncio.CancelledError):
            interrupted = True
            raise
        finally:
            await run_models.aclose()
            await session.aclose()
            if cache is not None:
                cache.close()
            self.saved_answers = sum(s.answered for s in run_models.stats())
            if interrupted:
                log.event("interrupted", new_answers_saved=self.saved_answers)
                log.close()
        first = [interrupted_note] if interrupted_note else []
        if budget.exhausted:
            first.append(f"--max-cost {config.max_cost} reached")
        stopped = stop_reason(first, run_models.reliable, pairs, endpoints, judge_endpoints)
        records = [r for p in pairs for r in p.records]
        results = self._results(pairs, run_models.reliable, bertscore, budget, stopped, time.monotonic() - started,
                                data_info, run_counts(run_models.stats(), records))
        return self._finish(results, records, log, started, interrupted_note)

    def _finish(self, results: RunResults, records: list[PredictionRecord], log: RunLog, started: float,
                interrupted_note: str | None) -> RunOutcome:
        """The run directory written (predictions, then results), the log closed, the outcome handed back."""
        stopped = results.run.stopped if results.run is not None else None
        if self.write:
            write_run(self.out, results, records)
        log.event("done", complete=stopped is None, stopped=stopped, cost=results.cost.model_dump(),
                  elapsed_s=round(time.monotonic() - started, 3))
        log.close()
        if interrupted_note:
            self.interrupted_note = interrupted_note
            raise asyncio.CancelledError  # the caller says so and exits as on any Ctrl-C
        return RunOutcome(results.model_dump(mode="json"), records, self.out, stopped is None, stopped,
                          typed=results)

    def _results(self, pairs: list[PairResult], models: dict[str, ReliableModel], bertscore: BackboneDescription | None,
                 budget: Budget, stopped: str | None, elapsed: float, data_info: DataInfo,
                 status: RunCounts) -> RunResults:
        config, judging = self.config, self.config.part(Judging)
        assert self.used is not None, "run() finds what the run used before it asks"
        config_json = config_block(config.to_json(), judging, config.bertscore, bertscore, self.used)
        block, total = models_block(config.part(Roster), judging, pairs, models, self.prices)
        run_id = uuid.uuid4().hex
        return RunResults.model_validate({
            "schema_version": SCHEMA_VERSION,
            "config": config_json,
            "run": {"complete": stopped is None, "stopped": stopped, "elapsed_s": round(elapsed, 3),
                    "rescored": self.offline, "run_id": run_id, **status},
            "data": data_info,
            "cost": {"total": None if total is None else round(total, 6), "spent_this_run": round(budget.spent, 6)},
            "models": block,
            # How each task's requests were formed (the same for every model), batches split against leaks counted.
            "batching": self.batching,
            "growth": [step.model_dump(mode="json") for step in self.growth.steps(run_id)],
        })


async def run_async(config: RunConfig, *, write: bool = True, models: Iterable[Model | TaskModel] = (),
                    samples: list[Sample] | None = None) -> RunOutcome:
    """The run, for callers that already have an event loop (a notebook); ``write=False`` writes nothing."""
    runner = Runner(config, write=write, models=models, samples=samples)
    try:
        return await runner.run()
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise _interrupted(runner) from None


def _interrupted(runner: Runner) -> RunInterrupted:
    """The error a stopped run ends with: what is saved, what is written, how to continue; exit 143 after
    SIGTERM, 130 after Ctrl-C."""
    terminated = runner.signals is not None and runner.signals.terminated
    saved = (f"{runner.saved_answers} new answer(s) of this run are saved in the cache; rerun the same command to "
             "resume (saved answers are not asked again)")
    where = f"; {runner.out / RESULTS} is written and marked incomplete" if runner.write else ""
    if runner.stopped_cleanly:
        message = f"{runner.interrupted_note}: {saved}{where}"
    elif runner.interrupted_note:
        message = f"{runner.interrupted_note}{where}"
    else:
        message = f"{'terminated (SIGTERM)' if terminated else 'interrupted'}: {saved}"
    return RunTerminated(message) if terminated else RunInterrupted(message)


def check_run(config: RunConfig) -> None:
    """What ``--dry-run`` checks before it counts: every check a run makes before any work (:meth:`Runner.check`),
    keys aside (a dry run sends nothing, so it needs none). Resolving a model opens no connection."""
    Runner(config, offline=True, write=config.out not in (None, "", ".")).check()


def run(config: RunConfig, *, models: Iterable[Model | TaskModel] = (),
        only: Mapping[str, Collection[str]] | None = None) -> RunOutcome:
    """Run ``config``; ``models`` adds model objects of your own (see :class:`Runner`), ``only`` keeps each task's
    instances of those ids. Ctrl-C and SIGTERM stop it as :mod:`rescue.engine.stop` says (in the main thread)."""
    runner = Runner(config, models=models, only=only)
    runner.take_signals = True
    try:
        return asyncio.run(runner.run())
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise _interrupted(runner) from None


def rescore(run_dir: str | Path, *, data: str | None = None, media_root: str | None = None,
            parse: str | None = None, quiet: bool = False) -> RunOutcome:
    """Recompute a run directory's records and metrics from its cached answers, asking no model.

    A video-mode run needs its media to rebuild the requests; ``media_root`` says where it is now.
    ``parse`` re-reads the cached answers under another parse policy ("strict" or "lenient"): a re-ask the
    original run never sent (strict needs more of them) is then a request_error, never a new request."""
    root = Path(run_dir)
    locked = locked_message(root)  # before reading: a running run may not have written results.json yet
    if locked:
        raise RunError(locked)
    try:
        stored = read_results(root / RESULTS)
    except RescueError as exc:
        raise RunError(str(exc)) from None
    config = RunConfig.from_json(stored.config.as_dict(), str(root / RESULTS))
    config.out = str(root)
    if data is not None:
        config.data = data
    elif stored.data is not None and stored.data.path:
        config.data = stored.data.path  # absolute since #28; older runs stored the path as given
    if parse is not None:
        if parse not in PARSE_POLICIES:
            raise RunError(f"--parse {parse!r}: choose one of {', '.join(PARSE_POLICIES)}")
        config.parse = cast(ParsePolicy, parse)
    if media_root is not None:
        if config.video is None:  # not a video mode
            raise RunError(f"--media-root: {root} is a {config.mode}-mode run, which uses no media")
        config.video.media_root = str(Path(media_root).resolve())
    config.quiet = quiet
    runner = Runner(config, offline=True)
    runner.growth = stored_growth(stored)
    try:
        return asyncio.run(runner.run())
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise _interrupted(runner) from None
