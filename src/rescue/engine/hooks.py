"""The generative scoring hooks of a run (ER, VP): the judge's grades and BERTScore, after the answers are in.

BERTScore runs in daemon threads (:func:`in_daemon_thread`, named ``WORKER_PREFIX...``) so that Ctrl-C never
waits for a forward pass; ``rescue``'s exit looks for such threads by that name.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rescue.errors import BertScoreInterrupted
from rescue.engine.parts import BertScoring, Judging
from rescue.engine.outcome import PairResult
from rescue.engine.plan import load_task
from rescue.engine.progress import ProgressDisplay, RunLog, TaskProgress
from rescue.llm import Model
from rescue.tasks.base import Instance

if TYPE_CHECKING:
    from rescue.scoring.bertscore import BackboneDescription

T = TypeVar("T")
WORKER_PREFIX = "rescue-compute-"  # the daemon threads of in_daemon_thread


async def judge_pair(pair: PairResult, instances: list[Instance], judges: list[Model], judging: Judging,
                     progress: TaskProgress | None) -> None:
    """Every answer of ``pair`` graded by the judges (its task's rubric); their usage is kept on the pair."""
    from rescue.scoring.judge import judge_records

    by_id = {i.instance_id: i for i in instances}
    pairs = [(by_id[r.instance_id], r) for r in pair.records]
    stats = await judge_records(pairs, judges=judges, task_name=pair.task, scale=judging.judge_scale,
                                concurrency=judging.concurrency, retry_errors=judging.retry_errors,
                                repeats=judging.judge_repeats,
                                on_graded=None if progress is None else lambda ok: progress.advance(1, 0 if ok else 1),
                                on_reask=None if progress is None else progress.retry)
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


class _PoolForLoad:
    """The threads that encode the next chunk of a long stage: when ``RESCUE_THREADS`` is not set, the cores other
    processes left free since the last chunk (rescue.threads.CoreWatch), at most :func:`rescue.threads.thread_count`,
    each change a ``threads`` event in the run log; the user's number when it is set."""

    def __init__(self, log: RunLog):
        from rescue.threads import CoreWatch, thread_count, threads_set_by_user

        self._log = log
        self._most = thread_count()
        self._watch = None if threads_set_by_user() else CoreWatch()
        self._current = self._most

    def threads(self) -> int:
        if self._watch is None:
            return self._most
        count = self._watch.threads(self._most)
        if count != self._current:
            self._log.event("threads", stage="bertscore", threads=count, most=self._most)
            self._current = count
        return count


async def bertscore_pairs(pairs: list[PairResult], scoring: BertScoring, display: ProgressDisplay, log: RunLog,
                          cache_path: Path | None) -> BackboneDescription | None:
    """BERTScore for every ER/VP pair: distinct text pairs once, cached ones not again, the rest in chunks with a
    progress bar; Ctrl-C between two chunks raises :class:`BertScoreInterrupted` (computed scores are kept)."""
    generative = [p for p in pairs if load_task(p.task).declaration.bertscore is not None]
    if not scoring.bertscore or not generative:
        return None
    from rescue.scoring.bertscore import SCORE_CACHE, BertScoreConfig, BertScoreJob, PairScoreCache, _scorer

    bert = BertScoreConfig.from_option(scoring.bertscore_model, num_layers=scoring.bertscore_layers,
                                       rescale=scoring.bertscore_rescale)
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
            pool = _PoolForLoad(log)
            while part := job.next_chunk():
                job.record(part, await in_daemon_thread(job.compute, part, pool.threads()))
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
