"""Asking one model one task: each batch's request, its answer parsed, and the re-asks a batch answer calls for.

What a batch answer left out (or could not be parsed, or was refused) is asked again one instance at a time
(the authors' rule, minus their fallbacks); an answer whose token budget ran out is asked once more with a
larger one under ``--budget-retry``. Batches of one sample are chained in row order (:func:`send_chains`)
so providers' prompt caches find each prompt's prefix.
"""

from __future__ import annotations

import asyncio
from typing import Any

from rescue.baselines import Baseline
from rescue.engine.parts import Asking
from rescue.engine.plan import batch_plan, epoch_seeds, send_chains
from rescue.engine.progress import TaskProgress
from rescue.engine.types import TaskModel, TaskRequest
from rescue.data.text import visible_text
from rescue.llm import ChatAnswer, ChatRequest
from rescue.tasks.base import Instance, Prediction, PredictionRecord, RenderOptions, Task, make_record
from rescue.tasks.render import RowCache

# (epoch, the seed it sends): --epochs; (0, None) is a run's one asking, as before epochs existed.
Epoch = tuple[int, int | None]


def predictions_from_answer(task: Task, answer: ChatAnswer, batch: list[Instance], policy: str = "strict",
                            store_reasoning: bool = True) -> dict[str, Prediction]:
    """One prediction per instance of ``batch`` from one answer: parsed under ``policy``; a failed request, an
    answer no parser can take, an instance the answer left out and a spent token budget each get their status."""
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


def prediction_request(task: Task, batch: list[Instance], options: RenderOptions, epoch: Epoch = (0, None), *,
                       budget_factor: float | None = None, priority: int = 0) -> ChatRequest:
    """The request asking ``batch`` of ``task`` in ``epoch`` (``--epochs``): what the online pass sends and what
    ``--batch`` puts in a batch ahead of it (rescue.engine.batch_api), so that both key it alike in the cache."""
    # The request itself is task-free; the tag and ids only group accounting and name the instances in logs.
    # An epoch after the first is a repeat of its own (keyed apart in the cache, whether or not the provider
    # takes the seed) with its own seed.
    messages: list[Any] = task.render(batch, options)
    return ChatRequest(messages=messages, max_tokens=int(task.max_tokens), tag=task.name,
                       ids=tuple(i.instance_id for i in batch), budget_factor=budget_factor, priority=priority,
                       repeat=epoch[0], seed=epoch[1])


async def _ask(model: TaskModel, task: Task, batch: list[Instance], options: RenderOptions,
               budget_factor: float | None = None, priority: int = 0, epoch: Epoch = (0, None)) -> ChatAnswer:
    request = prediction_request(task, batch, options, epoch, budget_factor=budget_factor, priority=priority)
    return await model.solve(TaskRequest(request, task, batch))


async def _run_batch(model: TaskModel, task: Task, batch: list[Instance], options: RenderOptions,
                     progress: TaskProgress, policy: Asking, priority: int = 0,
                     epoch: Epoch = (0, None)) -> dict[str, Prediction]:
    """One batch's predictions, its answers read as ``policy`` says (``--parse``, ``--store-reasoning``,
    ``--budget-retry``); ``priority``: the requests left in its chain, its own included (the limiter serves the
    longest chains first); ``epoch``: which asking (``--epochs``) and its seed."""
    answer = await _ask(model, task, batch, options, priority=priority, epoch=epoch)
    predictions = predictions_from_answer(task, answer, batch, policy.parse, policy.store_reasoning)
    if len(batch) > 1:
        # The authors' rule, minus their fallbacks: what a batch answer did not settle is asked alone.
        again = [i for i in batch if predictions[i.instance_id].status in ("missing", "parse_error", "refused")]
        singles = await asyncio.gather(*(_ask(model, task, [i], options, priority=priority, epoch=epoch)
                                         for i in again))
        for instance, single in zip(again, singles):
            predictions.update(predictions_from_answer(task, single, [instance], policy.parse, policy.store_reasoning))
    if policy.budget_retry:
        # A spent budget is never asked again as it was; --budget-retry asks once more with a larger one.
        spent = [i for i in batch if predictions[i.instance_id].status == "budget_exhausted"]
        if spent and len(spent) == len(batch):
            groups = [batch]
        else:
            groups = [[i] for i in spent]
        retried = await asyncio.gather(*(_ask(model, task, g, options, policy.budget_retry, priority, epoch)
                                         for g in groups))
        for group, answer in zip(groups, retried):
            predictions.update(predictions_from_answer(task, answer, group, policy.parse, policy.store_reasoning))
    progress.advance(len(batch), sum(1 for p in predictions.values() if p.status != "ok"))
    return predictions


async def run_pair(model: TaskModel, task: Task, instances: list[Instance], asking: Asking,
                   progress: TaskProgress, rows: RowCache | None = None,
                   share: int | None = None, *, seeded: bool = True) -> list[PredictionRecord]:
    """Every instance of ``task`` asked of ``model``, once per epoch (``--epochs``: the epochs one after the
    other, each with its seed, :func:`rescue.engine.plan.epoch_seeds`); ``rows``: the run's row cache, shared by
    all its pairs (a row's prompt JSON depends on the mode alone, and a run has one mode), else one for this pair;
    ``share``: the longest chain the model's whole run allows (:func:`rescue.engine.plan.chain_share`);
    ``seeded``: whether the model's requests carry the seed (records name the seed only then)."""
    options = asking.render(rows if rows is not None else RowCache())
    _prepare(model, task, instances, options, progress)
    seeds = epoch_seeds(asking)
    records: list[PredictionRecord] = []
    for epoch, seed in enumerate(seeds):
        predictions = await _ask_epoch(model, task, instances, asking, progress, options, share, (epoch, seed))
        records += [make_record(task, model.name, i, predictions[i.instance_id],
                                epoch=epoch if len(seeds) > 1 else None, seed=seed if seeded else None)
                    for i in instances]
    return records


def _prepare(model: TaskModel, task: Task, instances: list[Instance], options: RenderOptions,
             progress: TaskProgress) -> None:
    """The model's preparation for the task, once whatever the epochs (a trained baseline fits here)."""
    if isinstance(model, Baseline):  # a trained baseline fits first: its bar says so, fold by fold
        progress.describe(f"{progress.label} · preparing")
        model.prepare(task, instances, options, progress=progress.fitting)
        progress.describe(progress.label)
    else:
        model.prepare(task, instances, options)


async def _ask_epoch(model: TaskModel, task: Task, instances: list[Instance], asking: Asking,
                     progress: TaskProgress, options: RenderOptions, share: int | None,
                     epoch: Epoch) -> dict[str, Prediction]:
    """One epoch's predictions of every instance, its batches chained per sample (:func:`send_chains`)."""
    chains = send_chains(batch_plan(asking, task, instances).batches, asking.concurrency, share)
    # A batch renders its prompt as soon as it starts; without a gate every prompt of the run would sit in
    # memory at once while waiting for the limiter. Twice the concurrency keeps the limiter fed; the chains
    # come longest first, so the longest pass the gate first.
    gate = asyncio.Semaphore(max(2 * asking.concurrency, 8))

    async def chained(chain: list[list[Instance]]) -> dict[str, Prediction]:
        async with gate:
            out: dict[str, Prediction] = {}
            for n, batch in enumerate(chain):  # in row order, each sent once the one before it is answered
                out.update(await _run_batch(model, task, batch, options, progress, asking, len(chain) - n, epoch))
            return out

    answered = await asyncio.gather(*(chained(c) for c in chains))
    predictions: dict[str, Prediction] = {}
    for part in answered:
        predictions.update(part)
    return predictions
