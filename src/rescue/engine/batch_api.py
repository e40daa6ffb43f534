"""``--batch``: a run's requests through the providers' batch APIs first (predictions, then the judge's first
request per grade), exactly as the online pass will ask them, so that pass finds their answers in the cache
and asks online only what the batches could not answer.

The ledger (``batches.json``) lives beside the cache, in ``folder`` (``--cache-dir``, or the run directory): runs
that share a cache share it, and its lock (rescue.llm._batch.held_ledger) holds one run's batch phase at a time.
A ledger an earlier run left in the run directory (``left``: before it used ``--cache-dir``) is merged into it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from rescue.data.text import visible_text
from rescue.engine.parts import Asking, Batching, Judging
from rescue.engine.failures import terminal_safe
from rescue.engine.outcome import PairResult
from rescue.engine.plan import batch_plan, epoch_seeds, send_chains
from rescue.engine.reask import prediction_request
from rescue.engine.progress import ProgressDisplay
from rescue.llm._batch import LEDGER, BatchLedger, held_ledger
from rescue.llm import ReliableModel, ChatRequest
from rescue.tasks.base import Instance, Task
from rescue.tasks.render import RowCache


def _batchable(model: ReliableModel) -> bool:
    from rescue.llm import OpenAIModel

    return isinstance(model.inner, OpenAIModel) and model.inner.endpoint.batch


async def _send_batches(model: ReliableModel, requests: list[ChatRequest], purpose: str, label: str,
                        batching: Batching, display: ProgressDisplay, ledger: BatchLedger) -> None:
    from rescue.llm._batch import run_in_batches

    if not requests:
        return
    if not _batchable(model):
        from rescue.llm import PRESETS

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

    outcome = await run_in_batches(model, requests, ledger, purpose=purpose, poll_interval=batching.batch_poll,
                                   settle=batching.batch_settle, on_progress=progress,
                                   on_warning=lambda text: display.warn(visible_text(text)))
    model.log.event("batch_done", model=model.name, purpose=purpose, submitted=outcome.submitted,
                    resumed=outcome.resumed, skipped=outcome.skipped, answered=outcome.answered,
                    left_to_online=outcome.failed, batches=outcome.batches)


def _waiting(display: ProgressDisplay, models: list[ReliableModel]) -> Callable[[str], None]:
    def say(message: str) -> None:
        display.warn(terminal_safe(message))
        for model in models[:1]:
            model.log.event("batch_wait", message=message)

    return say


def _merged(display: ProgressDisplay, models: list[ReliableModel], left: Path) -> Callable[[str], None]:
    def say(message: str) -> None:
        display.warn(terminal_safe(message))
        for model in models[:1]:
            model.log.event("batch_ledger_merged", message=message, left=str(left))

    return say


async def batch_predictions(asking: Asking, batching: Batching, reliable: dict[str, ReliableModel],
                            tasks: dict[str, Task], instances: dict[str, list[Instance]], rows: RowCache,
                            display: ProgressDisplay, folder: Path, run_folder: Path | None = None) -> None:
    """Every prediction request of the run, as run_pair will ask it (:func:`prediction_request`: same messages,
    budget, tag, and per epoch its repeat and seed), in batches: each epoch's request is a line of its own, its
    ``custom_id`` the key the online pass reads; ``folder``: the cache's, which holds the ledger; ``run_folder``:
    the run directory, whose ledger an earlier run may have left there (merged into ``folder``'s)."""
    options = asking.render(rows)
    epochs = list(enumerate(epoch_seeds(asking)))
    requests: list[ChatRequest] = []
    for name, task in tasks.items():
        for chain in send_chains(batch_plan(asking, task, instances[name]).batches, asking.concurrency):
            requests += [prediction_request(task, batch, options, epoch) for epoch in epochs for batch in chain]
    # One ledger for every model: each writes it whole, so each must see the others' batches.
    models = list(reliable.values())
    left = run_folder / LEDGER if run_folder is not None else None
    async with held_ledger(folder, _waiting(display, models), left,
                           _merged(display, models, left) if left is not None else None) as ledger:
        await asyncio.gather(*(_send_batches(model, requests, "predict", "batch", batching, display, ledger)
                               for model in reliable.values()))


async def batch_judges(judging: Judging, batching: Batching, judges: list[ReliableModel], pairs: list[PairResult],
                       instances: dict[str, list[Instance]], display: ProgressDisplay, folder: Path,
                       run_folder: Path | None = None) -> None:
    """The judge's first request for every graded prediction (as rescue.scoring.judge asks it), in batches."""
    from rescue.scoring.judge import JUDGE_MAX_TOKENS, Turn, judge_prompt

    requests: list[ChatRequest] = []
    for pair in pairs:
        by_id = {i.instance_id: i for i in instances[pair.task]}
        for record in pair.records:
            if record.ok:
                prompt = judge_prompt(pair.task, judging.judge_scale, Turn.of(by_id[record.instance_id]),
                                      record.prediction, record.gold)
                requests += [ChatRequest(messages=[{"role": "user", "content": prompt}], max_tokens=JUDGE_MAX_TOKENS,
                                         purpose="judge", repeat=k) for k in range(judging.judge_repeats)]
    left = run_folder / LEDGER if run_folder is not None else None
    async with held_ledger(folder, _waiting(display, judges), left,
                           _merged(display, judges, left) if left is not None else None) as ledger:
        await asyncio.gather(*(_send_batches(judge, requests, "judge", "judge batch", batching, display, ledger)
                               for judge in judges))
