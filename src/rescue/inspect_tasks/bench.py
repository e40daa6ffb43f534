"""RESCUE-Bench inside inspect_ai: one inspect task per RESCUE task (``inspect eval rescue/itp``).

Each task is rescue's own, wrapped:

- **Dataset**: a ``MemoryDataset`` with one ``Sample`` per instance; its input is the exact messages
  ``rescue run`` sends for that instance (``task.render``), its target the gold answer in the task's schema
  (``task.format_answer``), its metadata the instance id, sample, scenario, row and gold.
- **Solver**: :func:`rescue_generate` sends those messages as they are, with the task's answer budget and
  temperature 0 (``rescue run``'s defaults; ``--max-tokens``/``--temperature`` override them as in inspect),
  whatever the model's name: inspect drops ``temperature`` for names it takes for reasoning models (every name
  it does not know, a local server's included), so both also travel in the request body (:func:`wire_config`),
  and what was sent is recorded with each score (``GENERATE_KEY``) for ``rescue report`` to check.
- **Scorer**: the answer goes through the runner's answer reading and the task's ``parse`` (``parse`` policy),
  becomes a :class:`~rescue.tasks.base.PredictionRecord` with the task's per-instance scores; ER and VP are
  graded with the task's judge rubric (``rescue.scoring.judge``) by the model(s) of inspect's ``grader`` role
  (``--model-role grader=openai/gpt-4o``; without it the judge keys are absent, as in a run without ``--judge``).
  The record is kept in the score's metadata, so ``rescue report`` reads the log as a run.
- **Metric**: :func:`rescue_metrics`, the task's own ``aggregate`` over the records (every key the task reports).

This module imports inspect_ai: it is what inspect's entry point (``[project.entry-points.inspect_ai]``) loads.
"""

from __future__ import annotations

import inspect as pyinspect
from collections.abc import Callable, Sequence
from typing import Any

from inspect_ai import Task as InspectTask
from inspect_ai import task as inspect_task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ContentReasoning,
    GenerateConfig,
    Model,
    ModelOutput,
    model_roles,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from rescue.data.choices import JudgeScale, Mode, ParsePolicy
from rescue.engine.run_options import SampleChoice
from rescue.inspect_tasks.plan import BenchError, BenchOptions, BenchPlan, build_plan
from rescue.data.shapes import JsonObject
from rescue.llm import ChatAnswer, ChatRequest, Message, MessageLike, ModelBase, Usage
from rescue.runs.inspect_logs import CONFIG_KEY, GENERATE_KEY, GRADER, RECORD_KEY, SentGenerate
from rescue.tasks import TASKS, get_task
from rescue.tasks.base import PredictionRecord, gold_value, make_record

__all__ = ["GRADER", "InspectJudge", "bench_dataset", "chat_answer", "rescue_generate", "rescue_metrics",
           "rescue_scorer", "rescue_task", "wire_config", *TASKS]


# ---------------------------------------------------------------------------------------------------------
# Messages and answers between rescue and inspect


def chat_messages(messages: Sequence[MessageLike]) -> list[ChatMessage]:
    """rescue's rendered messages (``{"role", "content"}``) as inspect chat messages, text unchanged."""
    kinds: dict[str, Callable[..., ChatMessage]] = {
        "system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    out = []
    for message in messages:
        role, content = ((message.role, message.content) if isinstance(message, Message)
                         else (message["role"], message["content"]))
        if role not in kinds or not isinstance(content, str):
            raise BenchError(f"a {role} message with {type(content).__name__} content cannot be sent through inspect "
                             "by this adapter (transcript modes only)")
        out.append(kinds[role](content=content))
    return out


def chat_answer(output: ModelOutput) -> ChatAnswer:
    """An inspect model output as the answer rescue's client would have returned for the same completion."""
    usage = Usage()
    if output.usage is not None:
        usage = Usage(output.usage.input_tokens, output.usage.output_tokens, output.usage.input_tokens_cache_read or 0)
    if output.error:
        return ChatAnswer(None, "request_error", f"request_error: {output.error}", usage)
    text = output.completion
    stop = output.stop_reason
    meta: JsonObject = {"finish_reason": "length" if stop == "max_tokens" else stop}  # ChatAnswer.meta: open
    message = output.choices[0].message if output.choices else None
    if message is not None and not isinstance(message.content, str):
        reasoning = "\n".join(c.reasoning for c in message.content if isinstance(c, ContentReasoning))
        if reasoning:
            meta["reasoning"] = reasoning
    if stop == "content_filter":
        return ChatAnswer(text, "refused", "refused: finish_reason=content_filter", usage, meta)
    if not text.strip():
        if stop == "max_tokens":
            return ChatAnswer(None, "budget_exhausted", "budget_exhausted: the answer budget ran out before any "
                              "answer (finish_reason=length)", usage, meta)
        return ChatAnswer(None, "request_error", f"empty_answer: the answer has no content (stop_reason={stop})",
                          usage, meta)
    return ChatAnswer(text, "ok", "", usage, meta)


def _uses_responses_api(model: Model) -> bool:
    # OpenAI's Responses API names the budget max_output_tokens (inspect sets it) and refuses max_tokens.
    return bool(getattr(model.api, "responses_api", False))


def wire_config(model: Model, temperature: float | None, max_tokens: int) -> tuple[GenerateConfig, SentGenerate]:
    """The generate config of one request as ``rescue run`` sends it: ``temperature`` (None: 0) and the answer
    budget, also put in the request body itself (``extra_body``), so a provider that drops them for a model name
    it takes for a reasoning model (inspect's ``openai/`` provider does for every name it does not know) sends them
    all the same; and what is sent, as recorded with the score."""
    heat, budget = 0.0 if temperature is None else float(temperature), int(max_tokens)
    extra: JsonObject = {"temperature": heat}  # a request body's extras, open as inspect's extra_body is
    if not _uses_responses_api(model):
        extra["max_tokens"] = budget
    return (GenerateConfig(temperature=heat, max_tokens=budget, extra_body=extra),
            {"temperature": heat, "max_tokens": budget})


# The one private name of inspect_ai rescue uses, and the inspect_ai version it was verified on (pyproject's
# `inspect` extra is bounded to it; tests/inspect_tasks/test_inspect_private.py fails on any other version).
# inspect_ai offers no public reader of the eval's generate config inside a solver: `generate(state, ...)`
# applies it but does not say what it is, and `get_model().config` holds the eval's `--temperature` only when
# inspect made the model from its name (not for a Model object given to eval()). rescue needs the values
# before the request, to put them in its body too and to record them (docs/architecture.md).
ACTIVE_CONFIG_READER = "inspect_ai.model._generate_config.active_generate_config"
VERIFIED_INSPECT_VERSION = "0.3.285"


def _active_config(model: Model) -> GenerateConfig:
    """The generate config inspect would use for the evaluated model: the model's own, the task's and the eval's
    (``--temperature`` ...) merged, as inspect merges them. An inspect_ai without the reader stops the sample
    with an error that says so: never a request without the eval's temperature."""
    try:
        from inspect_ai.model._generate_config import active_generate_config
    except ImportError as exc:
        from importlib.metadata import version

        raise BenchError(f"inspect_ai {version('inspect-ai')} has no {ACTIVE_CONFIG_READER}, which rescue reads the "
                       "eval's generate config (--temperature, --max-tokens) with; rescue sends no request without "
                       f"it. Install inspect-ai=={VERIFIED_INSPECT_VERSION} (pip install "
                       f"'rescue-bench[inspect]').") from exc
    return model.config.merge(active_generate_config())


class InspectJudge(ModelBase):
    """An inspect model (a ``grader`` role) as the rescue :class:`~rescue.llm.Model` the judge asks; inspect
    does the retrying and caching, so answers here are final."""

    def __init__(self, model: Model):
        self.model = model
        self.name = str(model)

    async def complete(self, request: ChatRequest) -> ChatAnswer:
        """One judge answer from the inspect model, at the judge's budget and temperature 0 (as ``rescue run``)."""
        config, _ = wire_config(self.model, request.temperature, request.max_tokens)
        try:
            output = await self.model.generate(chat_messages(request.messages), config=config)
        except Exception as exc:  # noqa: BLE001 - a grade the judge could not give is a judge failure, not a crash
            return ChatAnswer(None, "request_error", f"request_error: {type(exc).__name__}: {exc}")
        return chat_answer(output)


def graders() -> list[InspectJudge]:
    """The models bound to the ``grader`` role of the running eval (none: ER/VP judge keys stay absent)."""
    bound = model_roles().get(GRADER)
    if bound is None:
        return []
    return [InspectJudge(m) for m in (bound if isinstance(bound, list) else [bound])]


# ---------------------------------------------------------------------------------------------------------
# Dataset, solver, scorer, metric


def bench_dataset(plan: BenchPlan) -> MemoryDataset:
    """One inspect sample per instance: rescue's exact prompt, the gold answer as target, the instance in metadata."""
    task = plan.task
    samples = []
    for instance in plan.instances:
        target = task.format_answer([instance], {instance.instance_id: gold_value(task, instance)})
        samples.append(Sample(
            id=instance.instance_id, input=chat_messages(plan.messages(instance)), target=target,
            metadata={"instance_id": instance.instance_id, "sample_id": instance.sample_id,
                      "scenario": instance.scenario, "row_index": instance.row_index, "gold": instance.gold}))
    return MemoryDataset(samples, name=f"rescue-{task.name}")


@solver
def rescue_generate(max_tokens: int | None = None) -> Solver:
    """Ask the model with the sample's messages as they are: rescue's prompt, nothing added or changed, at
    rescue's generate config whatever the model's name (:func:`wire_config`; ``max_tokens``: the task's answer
    budget where the eval sets none), recorded in the sample's metadata for the scorer to keep."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        from inspect_ai.model import get_model

        model = get_model()
        active = _active_config(model)
        budget = active.max_tokens or max_tokens
        if budget is None:  # a solver used outside rescue_task: inspect's own config, unchanged
            return await generate(state)
        config, sent = wire_config(model, active.temperature, budget)
        state.metadata[GENERATE_KEY] = sent
        extra = {**(active.extra_body or {}), **(config.extra_body or {})}
        return await generate(state, temperature=config.temperature, max_tokens=config.max_tokens, extra_body=extra)

    return solve


@metric
def rescue_metrics(task: str) -> Metric:
    """The task's own metrics (``task.aggregate``) over the prediction records the scorer kept."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        records = [PredictionRecord.model_validate(s.score.metadata[RECORD_KEY]) for s in scores
                   if s.score.metadata and RECORD_KEY in s.score.metadata]
        values = get_task(task).aggregate(records)
        return {k: float(v) for k, v in values.items() if isinstance(v, int | float) and not isinstance(v, bool)}

    return compute


def rescue_scorer(plan: BenchPlan) -> Scorer:
    """Parse and score each answer as ``rescue run`` does (judging ER/VP with the ``grader`` role)."""
    task = plan.task
    policy, scale = plan.config.parse, plan.config.judge_scale

    @scorer(metrics=[rescue_metrics(task.name)], name=f"rescue_{task.name}")
    def rescue_score() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            from rescue.engine.reask import predictions_from_answer

            instance = plan.instance(str(state.sample_id))
            prediction = predictions_from_answer(task, chat_answer(state.output), [instance], policy)[instance.instance_id]
            record = make_record(task, str(state.model), instance, prediction)
            if task.declaration.judge is not None:
                from rescue.scoring.judge import judge_records

                await judge_records([(instance, record)], judges=graders(), task_name=task.name,
                                    scale=scale)  # type: ignore[arg-type]
            kept: JsonObject = {RECORD_KEY: record.model_dump(mode="json")}  # inspect's Score.metadata: open
            if GENERATE_KEY in state.metadata:
                kept[GENERATE_KEY] = state.metadata[GENERATE_KEY]
            return Score(value=dict(record.scores), answer=record.raw, explanation=record.error or None,
                         metadata=kept)

        return score

    return rescue_score()


# ---------------------------------------------------------------------------------------------------------
# The tasks


def rescue_task(task: str, *, mode: Mode = BenchOptions.mode, context_size: int | None = None,
                scenario: str | None = None, split: str | None = None, splits: str | None = None,
                parse: ParsePolicy = BenchOptions.parse, data: str | None = None, limit_samples: int | None = None,
                sample_choice: SampleChoice = BenchOptions.sample_choice,
                options: JsonObject | None = None,  # open: as the user gives them, checked by the task's options model
                judge_scale: JudgeScale = BenchOptions.judge_scale) -> InspectTask:
    """The inspect task of one RESCUE task (what ``inspect eval rescue/<task>`` builds); parameters as ``rescue
    run``'s options of the same names, plus ``scenario`` (couple or family only) and ``options`` (the task's build
    options, e.g. ``{"rpp_gold": "relation_pattern"}``)."""
    plan = build_plan(BenchOptions(task, mode=mode, context_size=context_size, scenario=scenario, split=split,
                                   splits=splits, parse=parse, data=data, limit_samples=limit_samples,
                                   sample_choice=sample_choice, options=dict(options or {}), judge_scale=judge_scale))
    return InspectTask(dataset=bench_dataset(plan), solver=rescue_generate(int(plan.task.max_tokens)),
                       scorer=rescue_scorer(plan),
                       config=GenerateConfig(max_tokens=int(plan.task.max_tokens), temperature=0.0),
                       metadata={CONFIG_KEY: plan.metadata()}, name=f"rescue/{plan.task.name}")


def _registered(factory: Callable[..., InspectTask], short: str) -> Callable[..., InspectTask]:
    """``factory`` registered with inspect as ``rescue/<short>``. inspect prefixes its package ("rescue/") only
    where it sees rescue installed under that name; an editable install of the rescue-bench distribution is not,
    so there the prefix is given (never twice). inspect's public ``registry_info`` says which name it gave."""
    from inspect_ai.util import registry_info

    registered: Callable[..., InspectTask] = inspect_task(name=short)(factory)
    if registry_info(registered).name == f"rescue/{short}":
        return registered
    # The short name stays registered too ("itp"): inspect's registry has no public way to take it back.
    prefixed: Callable[..., InspectTask] = inspect_task(name=f"rescue/{short}")(factory)
    return prefixed


def _register(name: str) -> Callable[..., InspectTask]:
    def factory(**params: Any) -> InspectTask:
        return rescue_task(name, **params)

    # inspect reads a task's parameters (-T NAME=VALUE) from its signature: rescue_task's, less the task's name.
    parameters = list(pyinspect.signature(rescue_task).parameters.values())[1:]
    factory.__signature__ = pyinspect.Signature(parameters, return_annotation="InspectTask")  # type: ignore[attr-defined]
    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = f"RESCUE-Bench {TASKS[name].title} ({name.upper()}), rescue's own prompt, parsing and metrics."
    return _registered(factory, name)


# One inspect task per task of the registry, named rescue/<task> (itp, rpp, stp, ssp, er, vp).
for _name in TASKS:
    globals()[_name] = _register(_name)
