"""``rescue run``: build every task's instances, ask every model, parse, score, aggregate, write the run directory.

Per model and task: ``task.build`` → batches (instances of one sample) → ``task.render`` → a task-free
:class:`~rescue.llm.ChatRequest` to the model through a :class:`rescue.llm.ModelSession` (cache, retries, limiter,
budget; offline baselines answer from the task instead) → ``task.parse`` → instances a batch answer left out
(or could not be parsed, or were refused) are asked again one by one → :class:`PredictionRecord` with
``task.instance_scores`` → ER/VP judge and BERTScore hooks → ``task.aggregate`` over all instances, each
scenario and each sample. All batches of all models and tasks are in flight together; each model's limiter
decides how many requests it really has open.

``results.json`` and ``predictions.jsonl`` are written atomically (:func:`rescue.runs.folder.write_run`), so an
interrupted run never leaves a half-written result; the cache makes the rerun cheap.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from rescue.data.errors import (
    BertScoreInterrupted as BertScoreInterrupted,
    RescueError,
    RunInterrupted as RunInterrupted,
)
from rescue.data.models import Sample
from rescue.engine.config import RunConfig, RunError, config_differences
from rescue.engine.progress import ProgressDisplay, RunLog, TaskProgress
from rescue.engine.types import TaskModel, TaskRequest, as_task_model
from rescue.llm.cache import ResponseCache
from rescue.llm.cost import PriceTable
from rescue.llm.reliable import Budget, ReliableModel
from rescue.llm.secrets import refused_notes
from rescue.llm.session import ModelSession
from rescue.llm.types import ChatAnswer, ChatRequest, Model, Usage, require_model
from rescue.tasks.base import PARSE_POLICIES, VIDEO_MODES, ParsePolicy, Instance, Prediction, PredictionRecord, RenderOptions, Task, make_record
from rescue.tasks.batching import BatchPlan, plan_batches
from rescue.tasks.render import RowCache

from rescue.io import check_out_folder, remove_stale_temporaries, visible_text
from rescue.runs.folder import CACHE, LOG, RunDirError, lock_run, locked_message, read_results, write_run
from rescue.runs.results import PREDICTIONS, RESULTS, SCHEMA_VERSION, RunResults

__all__ = ["RunConfig", "RunError", "RunOutcome", "Runner", "rescore", "run", "run_async"]

T = TypeVar("T")
WORKER_PREFIX = "rescue-compute-"  # the daemon threads of in_daemon_thread


@dataclass
class PairResult:
    """One model on one task."""

    model: str
    task: str
    records: list[PredictionRecord]
    judge_usage: list[dict[str, Any]] = field(default_factory=list)


@dataclass(repr=False)
class RunOutcome:
    """What a run produced: results (JSON and typed), records, the folder, whether it completed or why it stopped."""

    results: dict[str, Any]
    records: list[PredictionRecord]
    out: Path
    complete: bool
    stopped: str | None
    typed: RunResults  # the results as the typed model; ``results`` is its JSON form, as in results.json

    @property
    def cache_hits(self) -> int:
        """Answers the run took from the cache."""
        return int(self.results.get("run", {}).get("cache_hits", 0))

    def __repr__(self) -> str:
        # Short on purpose: asyncio.run formats the finished main task, result included, when it restores the
        # SIGINT handler, and the generated repr of every record cost a release-sized run a noticeable moment.
        return (f"RunOutcome(out={str(self.out)!r}, complete={self.complete}, stopped={self.stopped!r}, "
                f"records={len(self.records)})")


# ---------------------------------------------------------------------------------------------------------
# Building blocks


def load_task(name: str) -> Task:
    """The registered task called ``name``."""
    from rescue.tasks import get_task

    return get_task(name)


def batch_plan(config: RunConfig, task: Task, instances: list[Instance]) -> BatchPlan:
    """The run's batches of one task: the requested grouping, split wherever it would leak (tasks.batching)."""
    from rescue.tasks.prompts import resolve_context_size

    return plan_batches(task, instances, _batch_size(config, task),
                        resolve_context_size(config.context_size, int(task.default_context_size)))


def _batch_size(config: RunConfig, task: Task) -> int:
    return int(task.default_batch_size) if config.batch_size == "authors" else int(config.batch_size)


def _names_preset(spec: str) -> bool:
    from rescue.llm.providers import PRESETS

    prefix, _, rest = spec.partition("/")
    return bool(rest) and prefix in PRESETS


def _build_options(config: RunConfig, task: Task) -> dict[str, Any]:
    return dict(config.task_options.get(task.name, {}))


def values_used(config: RunConfig, tasks: dict[str, Task], instances: dict[str, list[Instance]],
                data_sha: str) -> dict[str, Any]:
    """What the run really used where its config says "default" (None): a report compares runs on these."""
    from rescue.tasks.spec import validate_options

    used: dict[str, Any] = {
        "data_sha256": data_sha,
        "task_options": {n: validate_options(n, t.declaration.options, _build_options(config, t)).model_dump(mode="json")
                         for n, t in tasks.items()},
        "context_size": {n: config.context_size if config.context_size is not None else int(t.default_context_size)
                         for n, t in tasks.items()},
        "batch_size": {n: _batch_size(config, t) for n, t in tasks.items()},
        "parse": getattr(config, "parse", None) or "strict",
    }
    for name, task in tasks.items():
        if "rpp_gold" in task.declaration.options.model_fields:  # the option choosing a gold field (RPP)
            used["rpp_gold"] = used["task_options"][name].get("rpp_gold")
            used["rpp_gold_field"] = {i.sample_id: i.extra.get("gold_field") for i in instances.get(name, [])}
    return used


def select_samples(config: RunConfig, samples: list[Sample]) -> tuple[list[Sample], str]:
    """The samples a run evaluates: its ``--split`` of the splits file, then ``--limit-samples`` of those;
    and how they were chosen (``all``, ``first``, ``stratified``; ``split:NAME`` for a whole split)."""
    from rescue.data.loading import choose_samples

    choice = "all"
    if config.split is not None:
        from rescue.data.splits import SPLITS_FILE, select_split

        samples = select_split(samples, config.splits or SPLITS_FILE, config.split)
        choice = f"split:{config.split}"
    if not config.limit_samples:
        return samples, choice
    return choose_samples(samples, config.limit_samples, config.sample_choice), config.sample_choice


def _from_answer(task: Task, answer: ChatAnswer, batch: list[Instance], policy: str = "strict",
                 store_reasoning: bool = True) -> dict[str, Prediction]:
    reasoning = answer.meta.get("reasoning") if store_reasoning else None
    reasoning = reasoning if isinstance(reasoning, str) and reasoning else None
    if answer.status != "ok":
        return {i.instance_id: Prediction(i.instance_id, answer.status, raw=answer.text, error=answer.error,
                                          reasoning=reasoning) for i in batch}
    try:
        predictions = task.parse(answer.text or "", batch, policy)  # type: ignore[arg-type]
    except Exception as exc:  # noqa: BLE001 - an answer no parser can take fails its instances, never the run
        error = visible_text(f"the answer could not be parsed: {type(exc).__name__}: {exc}", max_length=300)
        predictions = {i.instance_id: Prediction(i.instance_id, "parse_error", raw=answer.text, error=error)
                       for i in batch}
    for instance in batch:  # a parser that forgets an instance must not drop it
        if instance.instance_id not in predictions:
            predictions[instance.instance_id] = Prediction(instance.instance_id, "missing", raw=answer.text,
                                                           error="no answer item for this instance")
    if answer.meta.get("finish_reason") == "length":
        # The budget ran out before a usable answer: its own outcome, whose fix is a larger budget.
        for p in predictions.values():
            if p.status != "ok":
                p.status = "budget_exhausted"
                p.error = f"budget_exhausted: {p.error} (the answer hit max_tokens: finish_reason=length)".strip()
    for p in predictions.values():
        p.reasoning = reasoning
    return predictions


async def _ask(model: TaskModel, task: Task, batch: list[Instance], options: RenderOptions,
               budget_factor: float | None = None) -> ChatAnswer:
    # The request itself is task-free; the tag and ids only group accounting and name the instances in logs.
    messages: list[Any] = task.render(batch, options)
    request = ChatRequest(messages=messages, max_tokens=int(task.max_tokens), tag=task.name,
                          ids=tuple(i.instance_id for i in batch), budget_factor=budget_factor)
    return await model.solve(TaskRequest(request, task, batch))


@dataclass(frozen=True)
class AnswerPolicy:
    """How a run reads answers: the parse policy, whether reasoning is kept, and --budget-retry."""

    parse: str = "strict"
    store_reasoning: bool = True
    budget_retry: float | None = None


async def _run_batch(model: TaskModel, task: Task, batch: list[Instance], options: RenderOptions,
                     progress: TaskProgress, policy: AnswerPolicy = AnswerPolicy()) -> dict[str, Prediction]:
    answer = await _ask(model, task, batch, options)
    predictions = _from_answer(task, answer, batch, policy.parse, policy.store_reasoning)
    if len(batch) > 1:
        # The authors' rule, minus their fallbacks: what a batch answer did not settle is asked alone.
        again = [i for i in batch if predictions[i.instance_id].status in ("missing", "parse_error", "refused")]
        singles = await asyncio.gather(*(_ask(model, task, [i], options) for i in again))
        for instance, single in zip(again, singles):
            predictions.update(_from_answer(task, single, [instance], policy.parse, policy.store_reasoning))
    if policy.budget_retry:
        # A spent budget is never asked again as it was; --budget-retry asks once more with a larger one.
        spent = [i for i in batch if predictions[i.instance_id].status == "budget_exhausted"]
        if spent and len(spent) == len(batch):
            groups = [batch]
        else:
            groups = [[i] for i in spent]
        retried = await asyncio.gather(*(_ask(model, task, g, options, policy.budget_retry) for g in groups))
        for group, answer in zip(groups, retried):
            predictions.update(_from_answer(task, answer, group, policy.parse, policy.store_reasoning))
    progress.advance(len(batch), sum(1 for p in predictions.values() if p.status != "ok"))
    return predictions


def send_chains(batches: list[list[Instance]], concurrency: int) -> list[list[list[Instance]]]:
    """The order a task's requests are sent in, for providers' prompt caches: one chain per sample, its
    batches in row order, each sent after the one before it is answered, so each prompt finds the prefix it
    shares with the previous one (RPP's all-prior-rows context makes it a prefix extension) already cached.
    Chains run side by side; when there are fewer samples than ``concurrency``, chains are cut into
    consecutive segments so that as many requests as before are in flight."""
    chains: dict[str, list[list[Instance]]] = {}
    for batch in batches:
        chains.setdefault(batch[0].sample_id, []).append(batch)
    ordered = [sorted(chain, key=lambda b: b[0].row_index) for chain in chains.values()]
    if len(ordered) >= concurrency or not batches:
        return ordered
    length = max(1, math.ceil(len(batches) / concurrency))
    return [chain[i : i + length] for chain in ordered for i in range(0, len(chain), length)]


async def run_pair(model: TaskModel, task: Task, instances: list[Instance], config: RunConfig,
                   progress: TaskProgress, rows: RowCache | None = None) -> list[PredictionRecord]:
    """Every instance of ``task`` asked of ``model``; ``rows``: the run's row cache, shared by all its pairs
    (a row's prompt JSON depends on the mode alone, and a run has one mode), else one for this pair."""
    options = RenderOptions(mode=config.mode, context_size=config.context_size,
                            rows=rows if rows is not None else RowCache())
    model.prepare(task, instances, options)
    chains = send_chains(batch_plan(config, task, instances).batches, config.concurrency)
    # A batch renders its prompt as soon as it starts; without a gate every prompt of the run would sit in
    # memory at once while waiting for the limiter. Twice the concurrency keeps the limiter fed.
    gate = asyncio.Semaphore(max(2 * config.concurrency, 8))

    policy = AnswerPolicy(config.parse, config.store_reasoning, config.budget_retry)

    async def chained(chain: list[list[Instance]]) -> dict[str, Prediction]:
        async with gate:
            out: dict[str, Prediction] = {}
            for batch in chain:  # in row order, each sent once the one before it is answered
                out.update(await _run_batch(model, task, batch, options, progress, policy))
            return out

    answered = await asyncio.gather(*(chained(c) for c in chains))
    predictions: dict[str, Prediction] = {}
    for part in answered:
        predictions.update(part)
    return [make_record(task, model.name, i, predictions[i.instance_id]) for i in instances]


# ---------------------------------------------------------------------------------------------------------
# --batch: the providers' batch APIs


def _batchable(model: ReliableModel) -> bool:
    from rescue.llm.client import OpenAIModel

    return isinstance(model.inner, OpenAIModel) and model.inner.endpoint.batch


async def _send_batches(model: ReliableModel, requests: list[ChatRequest], purpose: str, label: str,
                        config: RunConfig, display: ProgressDisplay, out: Path) -> None:
    from rescue.llm.batch import LEDGER, BatchLedger, run_in_batches

    if not requests:
        return
    if not _batchable(model):
        from rescue.llm.providers import PRESETS

        able = ", ".join(name for name, p in PRESETS.items() if p.batch)
        display.warn(f"--batch: {terminal_safe(model.name)} has no batch API in rescue (presets with one: {able}); "
                     "its requests go online")
        return
    bar = display.task(model.name, label, len(requests))
    done: dict[str, int] = {}

    def progress(batch_id: str, completed: int, failed: int, total: int) -> None:
        # Requests done per batch, as the provider counts them.
        step = completed + failed - done.get(batch_id, 0)
        if step > 0:
            bar.advance(step, failed - (done.get(batch_id + ":failed", 0)))
            done[batch_id] = completed + failed
            done[batch_id + ":failed"] = failed

    outcome = await run_in_batches(model, requests, BatchLedger(out / LEDGER), purpose=purpose,
                                   poll_interval=config.batch_poll, on_progress=progress)
    model.log.event("batch_done", model=model.name, purpose=purpose, submitted=outcome.submitted,
                    resumed=outcome.resumed, skipped=outcome.skipped, answered=outcome.answered,
                    left_to_online=outcome.failed, batches=outcome.batches)


async def _batch_predictions(config: RunConfig, reliable: dict[str, ReliableModel], tasks: dict[str, Task],
                             instances: dict[str, list[Instance]], rows: RowCache, display: ProgressDisplay,
                             out: Path) -> None:
    """Every prediction request of the run, as run_pair will ask it (same messages, budget, tag), in batches."""
    options = RenderOptions(mode=config.mode, context_size=config.context_size, rows=rows)
    requests: list[ChatRequest] = []
    for name, task in tasks.items():
        for chain in send_chains(batch_plan(config, task, instances[name]).batches, config.concurrency):
            for batch in chain:
                messages: list[Any] = task.render(batch, options)
                requests.append(ChatRequest(messages=messages, max_tokens=int(task.max_tokens), tag=task.name,
                                            ids=tuple(i.instance_id for i in batch)))
    await asyncio.gather(*(_send_batches(model, requests, "predict", "batch", config, display, out)
                           for model in reliable.values()))


async def _batch_judges(config: RunConfig, judges: list[ReliableModel], pairs: list[PairResult],
                        instances: dict[str, list[Instance]], display: ProgressDisplay, out: Path) -> None:
    """The judge's first request for every graded prediction (as rescue.scoring.judge asks it), in batches."""
    from rescue.scoring.judge import JUDGE_MAX_TOKENS, Turn, judge_prompt

    requests: list[ChatRequest] = []
    for pair in pairs:
        by_id = {i.instance_id: i for i in instances[pair.task]}
        for record in pair.records:
            if record.ok:
                prompt = judge_prompt(pair.task, config.judge_scale, Turn.of(by_id[record.instance_id]),
                                      record.prediction, record.gold)
                requests += [ChatRequest(messages=[{"role": "user", "content": prompt}], max_tokens=JUDGE_MAX_TOKENS,
                                         purpose="judge", repeat=k) for k in range(config.judge_repeats)]
    await asyncio.gather(*(_send_batches(judge, requests, "judge", "judge batch", config, display, out)
                           for judge in judges))


def aggregate_scopes(task: Task, records: list[PredictionRecord]) -> dict[str, Any]:
    """``{"all": .., "couple": .., "family": .., "samples": {sample_id: ..}}``: micro over instances per scope."""
    from rescue.tasks import scoped_aggregates

    return scoped_aggregates(task, records)


# ---------------------------------------------------------------------------------------------------------
# Generative scoring hooks (ER, VP)


async def _judge(pair: PairResult, instances: list[Instance], judges: list[Model], config: RunConfig,
                 progress: TaskProgress | None) -> None:
    from rescue.scoring.judge import judge_records

    by_id = {i.instance_id: i for i in instances}
    pairs = [(by_id[r.instance_id], r) for r in pair.records]
    stats = await judge_records(pairs, judges=judges, task_name=pair.task, scale=config.judge_scale,
                                concurrency=config.concurrency, retry_errors=config.retry_errors,
                                repeats=config.judge_repeats,
                                on_graded=None if progress is None else lambda ok: progress.advance(1, 0 if ok else 1))
    pair.judge_usage = [s.to_dict() for s in stats.values()]


async def in_daemon_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a daemon thread. Unlike ``asyncio.to_thread``, a cancelled caller (Ctrl-C) does not wait for
    it, nor does the interpreter at exit: a model call that cannot be stopped half-way (loading weights, a forward
    pass) no longer holds the run up; its result is dropped."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(setter: Callable[[Any], None], value: Any) -> None:
        if not future.done():
            setter(value)

    def work() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:  # handed to the awaiting coroutine, whatever it is
            outcome: tuple[Callable[[Any], None], Any] = (future.set_exception, exc)
        else:
            outcome = (future.set_result, result)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    threading.Thread(target=work, name=f"{WORKER_PREFIX}{getattr(fn, '__name__', 'work')}", daemon=True).start()
    return await future


async def _bertscore(pairs: list[PairResult], config: RunConfig, display: ProgressDisplay, log: RunLog,
                     cache_path: Path | None) -> dict[str, Any] | None:
    """BERTScore for every ER/VP pair: distinct text pairs once, cached ones not again, the rest in chunks with a
    progress bar; Ctrl-C between two chunks raises :class:`BertScoreInterrupted` (computed scores are kept)."""
    generative = [p for p in pairs if load_task(p.task).declaration.bertscore is not None]
    if not config.bertscore or not generative:
        return None
    from rescue.scoring.bertscore import SCORE_CACHE, BertScoreConfig, BertScoreJob, PairScoreCache, _scorer

    bert = BertScoreConfig.from_option(config.bertscore_model, num_layers=config.bertscore_layers,
                                       rescale=config.bertscore_rescale)
    started = time.monotonic()
    cache = None if cache_path is None else PairScoreCache(cache_path / SCORE_CACHE)
    try:
        job = BertScoreJob([(p.task, p.records) for p in generative], bert, cache)
        log.event("bertscore_start", pairs=len(job.pairs), cached=job.cached, todo=len(job.todo))
        bar = display.phase(f"BERTScore · {len(job.todo)} new pairs, {job.cached} cached", len(job.todo))
        try:
            if job.todo:
                bar.describe("BERTScore · loading the backbone")
                await in_daemon_thread(_scorer, bert)
                bar.describe(f"BERTScore · {len(job.todo)} new pairs, {job.cached} cached")
            while part := job.next_chunk():
                job.record(part, await in_daemon_thread(job.compute, part))
                bar.advance(len(part))
        except (KeyboardInterrupt, asyncio.CancelledError):
            log.event("bertscore_interrupted", computed=job.computed, todo=len(job.todo),
                      elapsed_s=round(time.monotonic() - started, 3))
            saved = f"; the {job.computed} computed are saved and not computed again" if cache else ""
            raise BertScoreInterrupted(f"interrupted during BERTScore ({job.computed} of {len(job.todo)} new "
                                       f"pairs scored{saved}); rerun the same command to finish") from None
        job.finish()
    finally:
        if cache is not None:
            cache.close()
    log.event("bertscore_done", pairs=len(job.pairs), cached=job.cached, computed=job.computed,
              elapsed_s=round(time.monotonic() - started, 3))
    return bert.describe()


# ---------------------------------------------------------------------------------------------------------
# Writing


def _first_error(errors: list[str]) -> str:
    # "not requested: ..." only repeats the cause; the first real answer from the endpoint names it.
    real = [e for e in errors if not e.startswith("not requested")]
    return visible_text((real or errors)[0], max_length=300)


def _error_class(error: str) -> str:
    head, sep, _ = error.partition(":")
    return head.strip() if sep and " " not in head.strip() else "request_error"


def request_error_summary(name: str, endpoint: str, records: list[PredictionRecord]) -> str | None:
    """One line about the instances of one model left without an answer, or None when every one has one."""
    errors = [r.error for r in records if r.status == "request_error"]
    if not errors:
        return None
    first = _first_error(errors)
    what = "every request failed" if len(errors) == len(records) else \
        f"{len(errors)} of {len(records)} instances have no answer"
    return f"{terminal_safe(name)}: {what} at {terminal_safe(endpoint)} ({_error_class(first)}): {first}"


def judge_failures(records: list[PredictionRecord]) -> int:
    """Grades a judge could not give (requests that failed, answers that never validated, refusals)."""
    return sum(1 for r in records if r.judge is not None
               for grade in r.judge.judges.values() if grade.status == "failed")


def judge_error_summary(name: str, endpoint: str, records: list[PredictionRecord]) -> str | None:
    """One line about the grades one judge could not give: its requests failed, it refused, or its answers
    never validated. Any of them leaves the run incomplete, as a request error of the evaluated model does."""
    asked = 0
    errors: list[str] = []
    for record in records:
        grade = None if record.judge is None else record.judge.judges.get(name)
        if grade is None or grade.status == "minimum":
            continue
        asked += 1
        if grade.status == "failed":
            errors.append(grade.error)
    if not errors:
        return None
    first = _first_error([e.removeprefix("request_error:").strip() for e in errors])
    kind = "invalid_answer" if first.startswith("invalid answer") else _error_class(first)
    what = "every grade failed" if len(errors) == asked else f"{len(errors)} of {asked} grades failed"
    line = f"judge {terminal_safe(name)}: {what} at {terminal_safe(endpoint)} ({kind}): {first}"
    if any(not e.startswith("request_error") for e in errors):
        # Answers the judge gave are cached: only --retry-errors asks for them again.
        line += " (add --retry-errors to ask the judge again for the grades it could not give)"
    return line


def terminal_safe(text: str) -> str:
    """``text`` made safe to print (control characters shown, at most 200 characters)."""
    return visible_text(text, max_length=200)


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
            price = prices.price(name)
            # Time-of-day prices bill each answer at its hour, batch answers at batch rates (both counted as the
            # answers came); flat online prices the total.
            if price is not None and (price.peak is not None or stats.batch_answers):
                task_cost = stats.cost
            else:
                task_cost = prices.cost(name, stats.usage)
            if stats.batch_answers:
                batch_cost = prices.cost(name, stats.batch_usage, batch=True)
                cost["batch"] = None if batch_cost is None or cost.get("batch", 0.0) is None else \
                    round(cost.get("batch", 0.0) + batch_cost, 6)
            cost["tasks"][task] = None if task_cost is None else round(task_cost, 6)
            if stats.usage.unknown:  # answers kept without a readable usage: the cost is a lower bound
                cost["incomplete"] = True
            total = None if total is None or task_cost is None else total + task_cost
    if judge_usage:
        usage["judge"] = judge_usage
        judge_cost: float | None = 0.0
        for entries in judge_usage.values():
            for entry in entries:
                batch = Usage(entry.get("batch_input_tokens", 0), entry.get("batch_output_tokens", 0),
                              entry.get("batch_cached_input_tokens", 0))
                online = Usage(entry["input_tokens"] - batch.input_tokens, entry["output_tokens"] - batch.output_tokens,
                               entry["cached_input_tokens"] - batch.cached_input_tokens)
                spent = prices.cost(entry["judge"], online)
                if batch.input_tokens or batch.output_tokens:
                    in_batch = prices.cost(entry["judge"], batch, batch=True)
                    spent = None if spent is None or in_batch is None else spent + in_batch
                judge_cost = None if judge_cost is None or spent is None else judge_cost + spent
        cost["judge"] = None if judge_cost is None else round(judge_cost, 6)
        total = None if total is None or judge_cost is None else total + judge_cost
    cost["total"] = None if total is None else round(total, 6)
    return usage, cost


# ---------------------------------------------------------------------------------------------------------
# The run


def _credential_error_for_judge(exc: Exception, spec: str) -> RunError:
    # The provider layer words its errors for --model; a judge's key is set with other options.
    text = str(exc).replace(f"--model {spec!r}", f"--judge {spec!r}").replace("--api-key-env", "--judge-api-key-env")
    return RunError(text)


BERTSCORE_EXTRA_HINT = ("pip install 'rescue-bench[bertscore]' (on a CPU-only machine first: pip install torch "
                        "--index-url https://download.pytorch.org/whl/cpu), or pass --no-bertscore")


def _check_extras(config: RunConfig, tasks: dict[str, Task]) -> None:
    """A feature whose optional dependencies are missing fails before any work, naming its extra."""
    import importlib.util

    if config.bertscore and any(t.declaration.bertscore is not None for t in tasks.values()):
        missing = [m for m in ("torch", "bert_score") if importlib.util.find_spec(m) is None]
        if missing:
            raise RunError(f"BERTScore (on by default for ER and VP) needs the 'bertscore' extra (missing: "
                           f"{', '.join(missing)}): {BERTSCORE_EXTRA_HINT}")


def _check_local_models(specs: list[str], option: str) -> None:
    from rescue.llm.local import LOCAL_MODELS

    for spec in specs:
        prefix, _, name = spec.partition("/")
        if prefix == "local" and name not in LOCAL_MODELS:
            known = ", ".join(f"local/{n}" for n in LOCAL_MODELS)
            raise RunError(f"{option} {spec!r}: unknown local model; known: {known}")


class Runner:
    """One run. ``models`` adds model objects of your own (any :class:`~rescue.llm.types.Model`, e.g. an HF
    pipeline behind ``complete``, or a :class:`~rescue.engine.types.TaskModel`) to the specs in the config;
    they are evaluated under their ``name`` like any other."""

    def __init__(self, config: RunConfig, *, offline: bool = False, write: bool = True,
                 models: Iterable[Model | TaskModel] = (), samples: list[Sample] | None = None):
        self.config = config
        self.samples = samples  # samples already in memory (the notebook API); None: read config.data
        self.offline = offline  # rescore: answers come from the cache only, nothing is requested
        self.write = write  # False: nothing is written (the notebook API without out=); no cache either
        self.out = Path(config.out)
        self.prices = PriceTable.load(config.prices)
        self.saved_answers = 0
        self.interrupted_note: str | None = None  # set when Ctrl-C stopped BERTScore and the results were written
        self.plans: dict[str, BatchPlan] = {}
        self._stale: list[Path] = []  # leftover temporary files removed from the run directory
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

    def _locate_media(self, samples: list[Any]) -> Any:
        if self.config.mode not in VIDEO_MODES:
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
        elif judge and _names_preset(spec):
            # `--model X --base-url <vLLM> --judge openai/gpt-5.4`: the judge goes to its provider, not to vLLM.
            base_url, key_env = None, self.config.judge_api_key_env
        try:
            model = resolve_model(spec, base_url=base_url, api_key_env=key_env,
                                  settings=self.config.settings_for(spec), need_key=not self.offline)
        except RescueError as exc:
            if judge:
                raise _credential_error_for_judge(exc, spec) from None
            raise
        if judge and isinstance(model, TaskModel):
            raise RunError(f"--judge {spec!r}: a judge must be a model that reads messages, not an offline baseline")
        return model

    def _select_samples(self, samples: list[Sample]) -> tuple[list[Sample], str]:
        return select_samples(self.config, samples)

    def _prepare_folder(self, data_sha: str) -> None:
        """Refuse a folder that holds a run with another configuration, unless --overwrite; clean leftovers."""
        config = self.config
        results_path = self.out / RESULTS
        if not self.offline and results_path.exists():
            try:
                stored = read_results(results_path)
                stored_fields = RunConfig.from_json(stored.config.as_dict(), str(results_path)).result_fields()
                stored_sha = stored.data.sha256 if stored.data is not None else None
            except RescueError as exc:
                if not config.overwrite:
                    raise RunError(f"--out {self.out}: holds a results.json this run cannot read ({exc}); "
                                   "add --overwrite to replace it, or choose another --out") from None
                stored_fields, stored_sha = {}, None
            current = config.result_fields()
            differences = config_differences(stored_fields, current) if stored_fields else []
            if stored_sha is not None and stored_sha != data_sha:
                differences.insert(0, f"data: sha256 {stored_sha[:12]}… → {data_sha[:12]}… "
                                      f"({stored.config.data or 'demo'} → {config.data or 'demo'})")
            elif stored_sha is None and stored_fields and stored.config.data != config.data:
                differences.insert(0, f"data: {stored.config.data!r} → {config.data!r}")
            if differences and not config.overwrite:
                shown = "; ".join(differences[:4]) + (f"; and {len(differences) - 4} more" if len(differences) > 4 else "")
                raise RunError(f"--out {self.out}: holds a run with another configuration ({shown}). Rerun with "
                               "the same options to resume it, choose another --out, or add --overwrite to "
                               "replace it")
            if differences or (config.overwrite and not stored_fields):
                self._clear_folder()
        elif config.overwrite and not self.offline:
            self._clear_folder()
        removed = remove_stale_temporaries(self.out)
        if removed:
            self._stale = removed

    def _clear_folder(self) -> None:
        names = [RESULTS, PREDICTIONS, LOG]
        if not self.config.cache_dir:
            from rescue.scoring.bertscore import SCORE_CACHE

            names += [CACHE, CACHE + "-wal", CACHE + "-shm", SCORE_CACHE, SCORE_CACHE + "-wal", SCORE_CACHE + "-shm"]
        for name in names:
            (self.out / name).unlink(missing_ok=True)

    async def run(self) -> RunOutcome:
        """Run every model on every task: check, plan, ask, parse, score, judge and write the run folder."""
        from rescue.data.fingerprint import data_sha256
        from rescue.data.loading import load_samples

        config = self.config
        started = time.monotonic()
        # Credentials first: a missing key fails before any data is read or any folder is made.
        _check_local_models(config.model_specs, "--model")
        _check_local_models(config.judges, "--judge")
        if not self.offline and any(s.startswith("local/") for s in [*config.model_specs, *config.judges]):
            from rescue.llm.local import check_llama_server

            check_llama_server()  # the 'local' extra, named, before any work
        raw_models = {spec: self._resolve(spec) for spec in config.model_specs}
        raw_judges: list[Model] = [self._resolve(spec, judge=True) for spec in config.judges]  # type: ignore[misc]
        if self.write:
            check_out_folder(self.out)
        if self.samples is not None:
            samples = list(self.samples)
            data_sha = _samples_sha256(samples)
        else:
            samples = load_samples(config.data)  # bad data stops the run before any folder is made
            data_sha = data_sha256(config.data)
        samples, choice = self._select_samples(samples)
        tasks: dict[str, Task] = {name: load_task(name) for name in config.tasks}
        _check_extras(config, tasks)
        video = self._locate_media(samples)  # as does a sample without media
        instances = {name: task.build(samples, **_build_options(config, task)) for name, task in tasks.items()}
        self.used = values_used(config, tasks, instances, data_sha)
        # Absolute, beside its sha256: `rescue rescore` finds the data from any folder.
        data_info = {"path": str(Path(config.data).resolve()) if config.data else None, "sha256": data_sha, "samples": len(samples), "sample_choice": choice,
                     "sample_ids": [s.sample_id for s in samples] if choice != "all" else None,
                     "split": config.split}
        lock = None
        self._stale = []
        if self.write:
            self.out.mkdir(parents=True, exist_ok=True)
            try:
                lock = lock_run(self.out)
            except RunDirError as exc:
                raise RunError(f"--out {exc}") from None
        try:
            if self.write:
                self._prepare_folder(data_sha)
            return await self._run(config, started, raw_models, raw_judges, tasks, instances, data_info, video)
        finally:
            if lock is not None:
                lock.release()

    async def _run(self, config: RunConfig, started: float, raw_models: dict[str, Model | TaskModel], raw_judges: list[Model],
                   tasks: dict[str, Task], instances: dict[str, list[Instance]],
                   data_info: dict[str, Any], video: Any) -> RunOutcome:
        log = RunLog(self.out / LOG if self.write else None)
        cache = self._cache()
        if video is not None:  # every frame or clip is made (or found) before the first request
            tasks = video.wrap_tasks(tasks, instances, config.context_size, log,
                                     show=not (config.quiet or self.offline))
        self.plans = {name: batch_plan(config, task, instances[name]) for name, task in tasks.items()}
        budget = Budget(config.max_cost, self.prices)
        log.event("start", offline=self.offline, models=config.model_specs, tasks=config.tasks,
                  instances={n: len(v) for n, v in instances.items()}, cache=str(cache.path) if cache else None,
                  samples=data_info["samples"], sample_ids=data_info["sample_ids"])
        if self._stale:
            log.event("cleanup", removed=[p.name for p in self._stale])
        for spec in config.model_specs:
            if config.max_cost is not None and self.prices.price(spec) is None:
                log.event("warning", model=spec, message="no price for this model: --max-cost cannot count its cost")
        endpoints = {spec: str(getattr(raw, "cache_identity", None) or spec) for spec, raw in raw_models.items()}
        judge_endpoints = {raw.name: str(getattr(raw, "cache_identity", None) or raw.name) for raw in raw_judges}
        session = self._session(cache, budget, log)
        models: dict[str, TaskModel] = {}
        reliable: dict[str, ReliableModel] = {}  # the models that go through the session (not the baselines)
        judges: list[ReliableModel] = []
        pairs: list[PairResult] = []
        interrupted = False
        interrupted_note: str | None = None
        try:
            with ProgressDisplay(config.quiet) as display:
                log.listeners.append(_endpoint_alarm(display, {**endpoints, **judge_endpoints}))
                # The model layer's notices (a Retry-After over the cap) appear above the bars, quiet or not.
                session.notice = lambda message: display.warn(terminal_safe(message))
                for note in refused_notes():  # a key too short to mask: said once, never quoted
                    log.event("warning", message=note)
                    display.warn(note)
                trackers: dict[tuple[str, str], TaskProgress] = {}

                def on_retry(request: ChatRequest, spec: str) -> None:
                    if (spec, request.tag) in trackers:
                        trackers[(spec, request.tag)].retry()

                for spec in config.model_specs:
                    raw = raw_models[spec]
                    if isinstance(raw, TaskModel):
                        models[spec] = raw
                    else:
                        reliable[spec] = session.wrap(raw, on_retry=lambda r, s=spec: on_retry(r, s))  # type: ignore[misc]
                        models[spec] = as_task_model(reliable[spec])
                judges = [session.wrap(raw) for raw in raw_judges]
                # A baseline that does not apply to a task (persist has no RPP answer ...) sits that task out.
                todo = [(spec, name) for spec in config.model_specs for name in config.tasks
                        if models[spec].applies_to(name)]
                # One that cannot learn from these data (uniform's ER phrases come from other samples; a
                # one-segment export has none) sits the task out with a note; the run goes on.
                for spec, name in list(todo):
                    # Asked of whatever offers it (the baselines), so an endpoint's run never imports scikit-learn.
                    sits_out = getattr(models[spec], "sits_out", None)
                    reason = sits_out(tasks[name], instances[name]) if sits_out is not None else None
                    if reason:
                        todo.remove((spec, name))
                        note = f"{spec} skips {name.upper()}: {reason}"
                        log.event("warning", model=spec, task=name, message=note)
                        display.warn(note)
                for spec, name in todo:
                    trackers[(spec, name)] = display.task(spec, name, len(instances[name]))

                # Samples do not change during a run, so every task and model renders from one row cache.
                rows = RowCache()
                # --batch: every request goes through the providers' batch APIs first; the online pass then reads
                # their answers from the cache and asks online only what the batches could not answer.
                batched = config.batch and self.write and not self.offline
                if batched:
                    await _batch_predictions(config, reliable, tasks, instances, rows, display, self.out)

                async def judge_pair(pair: PairResult) -> None:
                    judge_bar = None
                    if judges:
                        judge_bar = display.task(pair.model, f"{pair.task} judge",
                                                 len(judges) * sum(1 for r in pair.records if r.ok))
                    await _judge(pair, instances[pair.task], list(judges), config, judge_bar)

                async def one(spec: str, name: str) -> PairResult:
                    records = await run_pair(models[spec], tasks[name], instances[name], config, trackers[(spec, name)],
                                             rows)
                    pair = PairResult(spec, name, records)
                    if tasks[name].declaration.judge is not None and not batched:
                        await judge_pair(pair)
                    tracker = trackers[(spec, name)]
                    log.event("task_done", model=spec, task=name, instances=len(records), failures=tracker.failures,
                              retries=tracker.retries)
                    return pair

                pairs = list(await asyncio.gather(*(one(s, n) for s, n in todo)))
                # How a trained baseline answered (its folds and features) is part of what the run used.
                described: dict[str, dict[str, Any]] = {spec: getattr(m, "describe", dict)() for spec, m in models.items()}
                if any(described.values()):
                    self.used["baselines"] = {spec: d for spec, d in described.items() if d}
                if batched:  # the judge's requests need every prediction: one batch for them, then the grades
                    graded = [p for p in pairs if tasks[p.task].declaration.judge is not None]
                    await _batch_judges(config, judges, graded, instances, display, self.out)
                    await asyncio.gather(*(judge_pair(p) for p in graded))
                try:
                    bertscore = await _bertscore(pairs, config, display, log,
                                                 self._cache_folder() if cache is not None else None)
                except BertScoreInterrupted as exc:
                    # Every answer is in: the results are written (without BERTScore) and say they are incomplete.
                    bertscore, interrupted_note = None, exc.note
        except (KeyboardInterrupt, asyncio.CancelledError):
            interrupted = True
            raise
        finally:
            for spec, model in models.items():
                if spec not in reliable:
                    await model.aclose()
            await session.aclose()
            if cache is not None:
                cache.close()
            self.saved_answers = sum(s.requests - s.failures for m in [*reliable.values(), *judges]
                                     for s in m.stats.values())
            if interrupted:
                log.event("interrupted", new_answers_saved=self.saved_answers)
                log.close()
        stopped_parts: list[str] = [interrupted_note] if interrupted_note else []
        if budget.exhausted:
            stopped_parts.append(f"--max-cost {config.max_cost} reached")
        stopped_parts += [f"{terminal_safe(s)}: {terminal_safe(m.fatal)}" for s, m in reliable.items() if m.fatal]
        records_by_model: dict[str, list[PredictionRecord]] = {}
        for pair in pairs:
            records_by_model.setdefault(pair.model, []).extend(pair.records)
        for spec, model_records in records_by_model.items():
            line = request_error_summary(spec, endpoints.get(spec, spec), model_records)
            if line:
                stopped_parts.append(line)
        judged = [r for p in pairs for r in p.records if r.judge]
        for name, endpoint in judge_endpoints.items():
            line = judge_error_summary(name, endpoint, judged)
            if line:
                stopped_parts.append(line)
        stopped = "; ".join(dict.fromkeys(stopped_parts)) or None
        all_stats = [s for m in [*reliable.values(), *judges] for s in m.stats.values()]
        records = [r for p in pairs for r in p.records]
        status = {"requests": sum(s.requests for s in all_stats), "cache_hits": sum(s.cache_hits for s in all_stats),
                  "request_errors": sum(1 for r in records if r.status == "request_error"),
                  "judge_failures": judge_failures(records)}
        spent = sum(1 for r in records if r.status == "budget_exhausted")
        if spent:  # answers whose budget ran out before any answer (thinking): the summary names the fix
            status["budget_exhausted"] = spent
        results = self._results(pairs, reliable, bertscore, budget, stopped, time.monotonic() - started,
                                data_info, status)
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

    def _results(self, pairs: list[PairResult], models: dict[str, ReliableModel], bertscore: dict[str, Any] | None,
                 budget: Budget, stopped: str | None, elapsed: float, data_info: dict[str, Any],
                 status: dict[str, int]) -> RunResults:
        config_json = self.config.to_json()
        config_json["bertscore_enabled"] = self.config.bertscore
        config_json["bertscore"] = bertscore
        from rescue._version import __version__

        config_json["rescue_version"] = __version__
        config_json["used"] = getattr(self, "used", {})
        if self.config.judges:
            from rescue.scoring.judge import prompt_hashes

            config_json["judge_prompt_sha256"] = prompt_hashes(self.config.judge_scale)
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
            if self.config.judges and self.config.judge_repeats > 1:
                from rescue.scoring.judge_agreement import judge_stability

                entry["judge_stability"] = judge_stability([r for p in pairs if p.model == spec for r in p.records])
            usage, cost = _usage_block(models.get(spec), judge_usage, self.prices, spec)
            entry["usage"] = usage
            entry["cost"] = cost
            block[spec] = entry
            total = None if total is None or cost["total"] is None else total + cost["total"]
        return RunResults.model_validate({
            "schema_version": SCHEMA_VERSION,
            "config": config_json,
            "run": {"complete": stopped is None, "stopped": stopped, "elapsed_s": round(elapsed, 3),
                    "offline": self.offline, "run_id": uuid.uuid4().hex, **status},
            "data": data_info,
            "cost": {"total": None if total is None else round(total, 6), "spent_this_run": round(budget.spent, 6)},
            "models": block,
            # How each task's requests were formed (the same for every model), batches split against leaks counted.
            "batching": {name: plan.summary() for name, plan in self.plans.items()},
        })


def _endpoint_alarm(display: ProgressDisplay, endpoints: dict[str, str]) -> Any:
    """A run.log listener that names an unreachable or refusing endpoint on the terminal at once, once per model."""
    told: set[str] = set()

    def listen(event: str, fields: dict[str, Any]) -> None:
        model = str(fields.get("model", ""))
        if model in told or event not in ("retry", "fatal", "failure"):
            return
        error = str(fields.get("error", ""))
        kind = str(fields.get("error_class") or _error_class(error))
        if event == "retry" and kind != "connection":
            return
        if event == "failure" and fields.get("status") != "request_error":
            return
        told.add(model)
        where = endpoints.get(model, model)
        then = "retrying" if event == "retry" else "its remaining requests are not sent" if event == "fatal" else \
            "this request failed"
        display.warn(f"{terminal_safe(model)} at {terminal_safe(where)}: {kind}: "
                     f"{visible_text(error, max_length=200)} ({then})")

    return listen


def _samples_sha256(samples: list[Sample]) -> str:
    """The fingerprint of samples given in memory: their JSON, in order."""
    digest = hashlib.sha256()
    for sample in samples:
        digest.update(sample.model_dump_json().encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


async def run_async(config: RunConfig, *, write: bool = True, models: Iterable[Model | TaskModel] = (),
                    samples: list[Sample] | None = None) -> RunOutcome:
    """The run, for callers that already have an event loop (a notebook); ``write=False`` writes nothing."""
    runner = Runner(config, write=write, models=models, samples=samples)
    try:
        return await runner.run()
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise RunInterrupted(_interrupt_message(runner)) from None


def _interrupt_message(runner: Runner) -> str:
    if runner.interrupted_note:
        where = f"; {runner.out / RESULTS} is written and marked incomplete" if runner.write else ""
        return f"{runner.interrupted_note}{where}"
    return (f"interrupted: {runner.saved_answers} new answer(s) of this run are saved in the cache; "
            "rerun the same command to resume (saved answers are not asked again)")


def run(config: RunConfig, *, models: Iterable[Model | TaskModel] = ()) -> RunOutcome:
    """Run ``config``; ``models`` adds model objects of your own (see :class:`Runner`)."""
    runner = Runner(config, models=models)
    try:
        return asyncio.run(runner.run())
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise RunInterrupted(_interrupt_message(runner)) from None


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
        if config.mode not in VIDEO_MODES:
            raise RunError(f"--media-root: {root} is a {config.mode}-mode run, which uses no media")
        config.video.media_root = str(Path(media_root).resolve())
    config.quiet = quiet
    runner = Runner(config, offline=True)
    try:
        return asyncio.run(runner.run())
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise RunInterrupted(_interrupt_message(runner)) from None
