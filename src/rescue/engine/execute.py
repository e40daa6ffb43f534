"""The executor: a run's models behind its session, then every (model, task) pair asked at once.

All batches of all models and tasks are in flight together; each model's limiter decides how many requests
it really has open. A pair whose task is graded by a judge is graded as soon as its answers are in (with
``--batch``: once every prediction is, so the judge's requests go in one batch too).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rescue.engine.batch_api import batch_judges, batch_predictions
from rescue.engine.parts import Asking, Batching, Judging
from rescue.engine.hooks import judge_pair
from rescue.engine.outcome import PairResult
from rescue.engine.plan import batch_plan, chain_share
from rescue.engine.progress import ProgressDisplay, RunLog, TaskProgress
from rescue.engine.reask import run_pair
from rescue.engine.types import TaskModel, as_task_model
from rescue.llm import CallStats, ReliableModel, ModelSession, ChatRequest, Model
from rescue.tasks.base import Instance, Task
from rescue.tasks.render import RowCache


@dataclass
class RunModels:
    """A run's models: every ``--model`` as a :class:`TaskModel` (those that read messages behind the session's
    cache, retries and limiter, the offline baselines as they are), the judges, and each pair's progress bar."""

    models: dict[str, TaskModel] = field(default_factory=dict)
    reliable: dict[str, ReliableModel] = field(default_factory=dict)  # those behind the session (not the baselines)
    judges: list[ReliableModel] = field(default_factory=list)
    trackers: dict[tuple[str, str], TaskProgress] = field(default_factory=dict)
    seeded: dict[str, bool] = field(default_factory=dict)  # whether a model's requests carry a seed (its provider's)

    def wrap(self, session: ModelSession, specs: list[str], raw_models: Mapping[str, Model | TaskModel],
             raw_judges: list[Model]) -> None:
        """Every model of ``specs`` and every judge, wrapped by ``session`` unless it is a baseline."""
        for spec in specs:
            raw = raw_models[spec]
            self.seeded[spec] = bool(getattr(raw, "takes_seed", False))
            if isinstance(raw, TaskModel):
                self.models[spec] = raw
            else:
                self.reliable[spec] = session.wrap(raw, on_retry=lambda r, s=spec: self._on_retry(r, s))  # type: ignore[misc]
                self.models[spec] = as_task_model(self.reliable[spec])
        self.judges = [session.wrap(raw) for raw in raw_judges]

    def _on_retry(self, request: ChatRequest, spec: str) -> None:
        if (spec, request.tag) in self.trackers:
            self.trackers[(spec, request.tag)].retry()

    def stats(self) -> list[CallStats]:
        """The request counts of every model and judge that went through the session."""
        return [s for m in [*self.reliable.values(), *self.judges] for s in m.stats.values()]

    async def aclose(self) -> None:
        """Close the baselines; the session closes the models it wrapped."""
        for spec, model in self.models.items():
            if spec not in self.reliable:
                await model.aclose()


@dataclass
class Execution:
    """One run's asking: which pairs are asked, each pair's answers and grades, ``--batch`` first when asked
    (``batching``: how it waits; its ledger beside the cache, in ``cache_folder``). The pairs are the run's models (``run_models``, in the order
    of ``--model``) by its tasks (``tasks``, in the order of ``--tasks``)."""

    asking: Asking
    judging: Judging
    batching: Batching
    run_models: RunModels
    tasks: dict[str, Task]
    instances: dict[str, list[Instance]]
    display: ProgressDisplay
    log: RunLog
    cache_folder: Path
    batched: bool
    # Samples do not change during a run, so every task and model renders from one row cache.
    rows: RowCache = field(default_factory=RowCache)
    shares: dict[str, int] = field(default_factory=dict)  # model -> the longest chain its requests allow
    # Told "batch" while the batch API is polled and "asking" while requests go out (rescue.engine.stop).
    on_phase: Callable[[str], None] = lambda phase: None
    stopping: Callable[[], bool] = lambda: False  # a stopping run submits no batch of judge requests
    # The run directory, where it is not cache_folder: a batches.json an earlier run left there is merged.
    run_folder: Path | None = None

    def todo(self) -> list[tuple[str, str]]:
        """The (model, task) pairs to ask, each given its progress bar."""
        models = self.run_models.models
        # A baseline that does not apply to a task (persist has no RPP answer ...) sits that task out.
        todo = [(spec, name) for spec in models for name in self.tasks if models[spec].applies_to(name)]
        # One that cannot learn from these data (uniform's ER phrases come from other samples; a
        # one-segment export has none) sits the task out with a note; the run goes on.
        for spec, name in list(todo):
            # Asked of whatever offers it (the baselines), so an endpoint's run never imports scikit-learn.
            sits_out = getattr(models[spec], "sits_out", None)
            reason = sits_out(self.tasks[name], self.instances[name]) if sits_out is not None else None
            if reason:
                todo.remove((spec, name))
                note = f"{spec} skips {name.upper()}: {reason}"
                self.log.event("warning", model=spec, task=name, message=note)
                self.display.warn(note)
        for spec, name in todo:  # each instance once per epoch
            self.run_models.trackers[(spec, name)] = self.display.task(spec, name,
                                                                       self.asking.epochs * len(self.instances[name]))
        return todo

    async def judge(self, pair: PairResult) -> None:
        """The judges' grades of one pair's answers, with a progress bar of their own."""
        judges = self.run_models.judges
        judge_bar = None
        if judges:
            judge_bar = self.display.task(pair.model, f"{pair.task} judge",
                                          len(judges) * sum(1 for r in pair.records if r.ok))
        await judge_pair(pair, self.instances[pair.task], list(judges), self.judging, judge_bar)

    async def one(self, spec: str, name: str) -> PairResult:
        """One model on one task: every instance asked, then graded when the task has a judge."""
        tracker = self.run_models.trackers[(spec, name)]
        records = await run_pair(self.run_models.models[spec], self.tasks[name], self.instances[name], self.asking,
                                 tracker, self.rows, self.shares.get(spec), seeded=self.run_models.seeded.get(spec, False))
        pair = PairResult(spec, name, records)
        judged = self.tasks[name].declaration.judge is not None
        if judged and not self.batched:
            await self.judge(pair)
        if not (judged and self.batched):  # done: packed while the other pairs are asked (PairResult.pack)
            pair.pack()
        self.log.event("task_done", model=spec, task=name, instances=len(records), failures=tracker.failures,
                       retries=tracker.retries)
        return pair

    def _share(self, todo: list[tuple[str, str]]) -> None:
        """Each model's longest chain: all its requests in the run over its slots, so no chain outlasts the rest."""
        requests = {n: len(batch_plan(self.asking, self.tasks[n], self.instances[n]).batches) for n in {n for _, n in todo}}
        for spec in {s for s, _ in todo}:
            self.shares[spec] = chain_share([requests[n] for s, n in todo if s == spec], self.asking.concurrency)

    async def ask_all(self) -> list[PairResult]:
        """Every pair asked (and graded), its records packed (:meth:`PairResult.pack`: the caller unpacks them);
        with ``--batch`` every request goes through the providers' batch APIs first, and the online pass reads
        their answers from the cache and asks only what they could not answer."""
        todo = self.todo()
        self._share(todo)
        if self.batched:
            self.on_phase("batch")
            await batch_predictions(self.asking, self.batching, self.run_models.reliable, self.tasks, self.instances,
                                    self.rows, self.display, self.cache_folder, self.run_folder)
        self.on_phase("asking")
        pairs = list(await asyncio.gather(*(self.one(s, n) for s, n in todo)))
        if self.batched:  # the judge's requests need every prediction: one batch for them, then the grades
            graded = [p for p in pairs if self.tasks[p.task].declaration.judge is not None]
            if not self.stopping():
                self.on_phase("batch")
                await batch_judges(self.judging, self.batching, self.run_models.judges, graded, self.instances,
                                   self.display, self.cache_folder, self.run_folder)
                self.on_phase("asking")
            await asyncio.gather(*(self.judge(p) for p in graded))
            for pair in graded:
                pair.pack()
        self.on_phase("")
        return pairs
