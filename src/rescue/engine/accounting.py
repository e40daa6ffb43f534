"""A run's accounting, as results.json carries it: per model the usage and cost of its predictions and of its
judges, the run's request counts, and the ``config`` and ``models`` blocks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from rescue.engine.parts import Judging, Roster
from rescue.engine.failures import judge_failures
from rescue.engine.outcome import PairResult
from rescue.llm import PriceTable, ReliableModel, CallStats, Usage
from rescue.runs.failures import failure_reasons
from rescue.runs.results import ModelResults
from rescue.tasks.base import PredictionRecord


if TYPE_CHECKING:
    from rescue.scoring.bertscore import BackboneDescription
    from rescue.engine.plan import Used
    from rescue.llm._reliable import CallCounts
    from rescue.scoring.judge import JudgeUsage


class CostEntry(TypedDict):
    """One model's ``cost`` as the run counts it (``rescue.runs.results.ModelCost`` reads it into results.json)."""

    tasks: dict[str, float | None]  # per task its predictions' cost (None: a price is missing)
    judge: float | None  # the judges' grades of its answers
    total: float | None
    batch: NotRequired[float | None]  # --batch: what the batch answers cost, at batch rates
    incomplete: NotRequired[bool]  # some answers came without a readable usage: total is a lower bound


# One model's ``usage``: per task its requests' counts, and under "judge" its judges' per task.
UsageBlock = dict[str, "CallCounts | dict[str, list[JudgeUsage]]"]


class RunCounts(TypedDict):
    """results.json's ``run`` counts (``rescue.runs.results.RunStatus``)."""

    requests: int
    cache_hits: int
    request_errors: int
    judge_failures: int
    budget_exhausted: NotRequired[int]  # only when some answer's budget ran out, so other runs read as before


def _add(total: float | None, part: float | None) -> float | None:
    # A cost is unknown (None) as soon as one of its parts is.
    return None if total is None or part is None else total + part


def predict_usage(model: ReliableModel, prices: PriceTable, name: str,
                  cost: CostEntry) -> tuple[dict[str, CallCounts], float | None]:
    """Usage per task of ``model``'s prediction requests; fills ``cost``'s ``tasks``, ``batch`` and
    ``incomplete``, and returns the usage and the tasks' total cost (None when a price is missing)."""
    usage: dict[str, CallCounts] = {}
    total: float | None = 0.0
    for (purpose, task), stats in model.stats.items():
        if purpose != "predict":
            continue
        usage[task] = stats.as_dict()
        task_cost = _task_cost(stats, prices, name)
        if stats.batch_answers:
            batch_cost = prices.cost(name, stats.batch_usage, batch=True)
            so_far = cost.get("batch", 0.0)
            cost["batch"] = None if batch_cost is None or so_far is None else round(so_far + batch_cost, 6)
        cost["tasks"][task] = None if task_cost is None else round(task_cost, 6)
        if stats.usage.unknown:  # answers kept without a readable usage: the cost is a lower bound
            cost["incomplete"] = True
        total = _add(total, task_cost)
    return usage, total


def _task_cost(stats: CallStats, prices: PriceTable, name: str) -> float | None:
    price = prices.price(name)
    # Time-of-day prices bill each answer at its hour, batch answers at batch rates (both counted as the
    # answers came); flat online prices the total.
    if price is not None and (price.peak is not None or stats.batch_answers):
        return stats.cost
    return prices.cost(name, stats.usage)


def judge_cost(judge_usage: dict[str, list[JudgeUsage]], prices: PriceTable) -> float | None:
    """What the judges' grades of one model's answers cost, batch answers at batch rates; None when a price
    is missing."""
    total: float | None = 0.0
    for entries in judge_usage.values():
        for entry in entries:
            batch = Usage(entry.get("batch_input_tokens", 0), entry.get("batch_output_tokens", 0),
                          entry.get("batch_cached_input_tokens", 0))
            online = Usage(entry["input_tokens"] - batch.input_tokens, entry["output_tokens"] - batch.output_tokens,
                           entry["cached_input_tokens"] - batch.cached_input_tokens)
            spent = prices.cost(entry["judge"], online)
            if batch.input_tokens or batch.output_tokens:
                spent = _add(spent, prices.cost(entry["judge"], batch, batch=True))
            total = _add(total, spent)
    return total


def usage_block(model: ReliableModel | None, judge_usage: dict[str, list[JudgeUsage]],
                prices: PriceTable, name: str) -> tuple[UsageBlock, CostEntry]:
    """One model's ``usage`` and ``cost`` blocks: its predictions per task, then its judges'."""
    usage: UsageBlock = {}
    cost: CostEntry = {"tasks": {}, "judge": None, "total": 0.0}
    total: float | None = 0.0
    if model is not None:
        predicted, total = predict_usage(model, prices, name, cost)
        usage.update(predicted)
    if judge_usage:
        usage["judge"] = judge_usage
        judged = judge_cost(judge_usage, prices)
        cost["judge"] = None if judged is None else round(judged, 6)
        total = _add(total, judged)
    cost["total"] = None if total is None else round(total, 6)
    return usage, cost


def run_counts(stats: list[CallStats], records: list[PredictionRecord]) -> RunCounts:
    """results.json's ``run`` counts: requests sent, cache hits, instances left without an answer, grades a
    judge could not give, and (when any) answers whose token budget ran out."""
    counts: RunCounts = {"requests": sum(s.requests for s in stats), "cache_hits": sum(s.cache_hits for s in stats),
              "request_errors": sum(1 for r in records if r.status == "request_error"),
              "judge_failures": judge_failures(records)}
    spent = sum(1 for r in records if r.status == "budget_exhausted")
    if spent:  # answers whose budget ran out before any answer (thinking): the summary names the fix
        counts["budget_exhausted"] = spent
    return counts


def config_block(options: dict[str, Any], judging: Judging, bertscore_enabled: bool,
                 bertscore: BackboneDescription | None, used: Used) -> dict[str, Any]:
    """results.json's ``config``: the run's ``options`` (``RunConfig.to_json``), whether BERTScore was on and its
    backbone, the version, the values used and (when judged) the judge prompts' hashes."""
    from rescue._version import __version__

    block = dict(options)
    block["bertscore_enabled"] = bertscore_enabled
    block["bertscore"] = bertscore
    block["rescue_version"] = __version__
    block["used"] = used
    if judging.judges:
        from rescue.scoring.judge import prompt_hashes

        block["judge_prompt_sha256"] = prompt_hashes(judging.judge_scale)
    return block


def models_block(roster: Roster, judging: Judging, pairs: list[PairResult], models: dict[str, ReliableModel],
                 prices: PriceTable) -> tuple[dict[str, ModelResults], float | None]:
    """results.json's ``models``: per model its tasks' metrics, usage and cost; and the cost of them all."""
    block: dict[str, ModelResults] = {}
    total: float | None = 0.0
    ran = {pair.model for pair in pairs}
    # A baseline none of whose tasks were asked for (nearest with --tasks itp) has nothing to report.
    for spec in [s for s in roster.model_specs if s in ran or roster.models]:
        entry = _model_entry(judging, spec, pairs)
        judge_usage = {pair.task: pair.judge_usage for pair in pairs if pair.model == spec and pair.judge_usage}
        usage, cost = usage_block(models.get(spec), judge_usage, prices, spec)
        entry["usage"] = usage
        entry["cost"] = cost
        block[spec] = ModelResults.model_validate(entry)
        total = _add(total, cost["total"])
    return block, total


def _model_entry(judging: Judging, spec: str, pairs: list[PairResult]) -> dict[str, Any]:
    from rescue.engine.plan import load_task
    from rescue.tasks import epoch_aggregates

    entry: dict[str, Any] = {pair.task: epoch_aggregates(load_task(pair.task), pair.records)
                             for pair in pairs if pair.model == spec}
    reasons = {pair.task: failure_reasons(pair.records) for pair in pairs if pair.model == spec}
    entry["failure_reasons"] = {task: [r.model_dump() for r in found] for task, found in reasons.items() if found}
    if judging.judges and judging.judge_repeats > 1:
        from rescue.scoring.judge_agreement import judge_stability

        entry["judge_stability"] = judge_stability([r for p in pairs if p.model == spec for r in p.records])
    return entry
