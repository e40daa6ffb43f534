"""LLM-as-judge scoring for the generative tasks ER and VP.

The runner calls, once per evaluated model and task, after predictions are parsed::

    from rescue.scoring.judge import judge_records
    stats = await judge_records(pairs, judges=judge_models, task_name="er", scale="likert")
    # pairs: list[tuple[Instance, PredictionRecord]] (the instance gives the judged turn: speaker, dialogue)
    # judge_models: list[Model] from resolve_model(spec) for every --judge (empty list: no judge)
    # scale: "likert" (1-5, the paper's) or "authors" (VP only: 0-2 pairing + 0-4 viewpoint, --judge-scale)
    # stats: {judge name: JudgeStats}; the runner reports [s.to_dict() for s in stats.values()] in results.json
    # under models.MODEL.usage.judge.TASK

It fills, in place, ``record.scores`` and ``record.judge``:

- ER: ``judge_emotion`` (S_emo, 1-5, mean over judges), ``intensity`` (S_int = max(1, 5 - |pred - gold|),
  by formula, never by the judge) and ``s_er`` = (S_emo + S_int) / 2, the paper's ER score.
- VP: ``judge`` (1-5). With ``scale="authors"`` also ``judge_source_target`` (0-2), ``judge_viewpoint`` (0-4) and
  ``judge_total`` (0-6, recomputed from the parts); ``judge`` is then 1 + 4 * total / 6 (a linear map that keeps
  both ends; the authors never published theirs).
- ``record.judge``: a :class:`~rescue.tasks.base.JudgeResults` (``scale``, ``judges``: per name a
  :class:`~rescue.tasks.base.JudgeGrade` with ``status``, ``scores``, ``verdict``, ``notes``, ``attempts``,
  ``error``; ``failures``, ``note``); in ``predictions.jsonl`` the same keys as JSON.

Rules that make the scores checkable: the judge sees only the turn (speaker, dialogue), the prediction and the
gold (never the evaluated model's name, its reasoning, gold intensity or internal fields); one request per
instance (a cached rating then does not depend on which other predictions shared a batch); answers must be JSON
that validates against the rubric, with integer scores inside the scale; totals and S_ER are recomputed here.
An answer that does not validate is asked again, with the validation error, up to ``max_attempts``; after that
the instance counts as a judge failure for that judge (scores ``None``, never a made-up number). A prediction
that failed (``status`` not "ok") is not sent to the judge: it scores the scale minimum, as every failure
scores as wrong. Without a judge the judge keys are ``None`` and ``record.judge.note`` says why.

What is task-specific (rubric text per scale, grade models, what the judge sees, S_int and S_ER) is the
task's own declaration (:class:`rescue.tasks.spec.JudgeRubric`, in ``rescue.tasks.er`` / ``rescue.tasks.vp``);
this module runs any declared rubric. Aggregation (means per scope, failures at the scale's floor) is
:func:`rescue.tasks.generative.aggregate_scores`, which reads the judge counts back with
:mod:`rescue.tasks.rubric`.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from pydantic import ValidationError

from rescue.data.shapes import ChatMessage
from rescue.data.choices import JUDGE_SCALES, JudgeScale
from rescue.tasks import TASKS, judged_tasks
from rescue.tasks.base import Instance, JudgeGrade, JudgeResults, PredictionRecord
from rescue.tasks.parsing import AnswerError, extract_json
from rescue.tasks.rubric import Grade
from rescue.tasks.spec import JudgeRubric
from rescue.errors import JudgeAnswerError as JudgeAnswerError, JudgeConfigError as JudgeConfigError
from rescue.llm._types import UsageCount

if TYPE_CHECKING:
    from rescue.llm import Model

Scale = JudgeScale
SCALES: tuple[str, ...] = JUDGE_SCALES

NO_JUDGE_NOTE = "no judge configured (offline run): judge scores are absent, not zero; pass --judge MODEL"
FAILED_PREDICTION_NOTE = "prediction status {status}: scored the scale minimum without asking the judge"

__all__ = [
    "FAILED_PREDICTION_NOTE", "NO_JUDGE_NOTE", "SCALES", "JudgeAnswerError", "JudgeConfigError", "JudgeStats",
    "JudgeUsage", "Turn", "judge_prompt", "judge_records", "parse_grade", "prompt_hashes", "rubric_for",
]


def rubric_for(task_name: str) -> JudgeRubric:
    """The judge rubric ``task_name`` declares; JudgeConfigError for a task without one."""
    task = TASKS.get(task_name)
    rubric = task.declaration.judge if task is not None else None
    if rubric is None:
        raise JudgeConfigError(f"no judge for task {task_name!r}; judged tasks: {', '.join(judged_tasks())}")
    return rubric


def prompt_hashes(scale: Scale) -> dict[str, str]:
    """The SHA-256 of each judged task's rubric prompt at ``scale`` (what results.json records, so that two
    runs' judge scores are known to come from the same instructions)."""
    import hashlib

    return {name: hashlib.sha256(rubric_for(name).prompts[scale].encode("utf-8")).hexdigest()
            for name in judged_tasks()}


# ---------------------------------------------------------------------------------------------------------
# Prompts: one user message (the protocol sends no system message), data as JSON at the end


@dataclass(frozen=True)
class Turn:
    """What the judge sees of the judged turn."""

    speaker: str
    dialogue: str

    @classmethod
    def of(cls, instance: Instance) -> Turn:
        """The turn an instance is about: its speaker and words."""
        row = instance.sample.row(instance.row_index)
        return cls(speaker=row.speaker, dialogue=row.dialogue_cleaned)


JUDGE_MAX_TOKENS = 1800  # the authors' judge budget: reasoning models spend tokens before answering

_RETRY_PROMPT = "Your answer could not be used: {error}. Answer again with only the JSON object in the schema."


def judge_prompt(task_name: str, scale: Scale, turn: Turn, prediction: Any, gold: Any) -> str:
    """The judge's user message for one instance."""
    rubric = rubric_for(task_name)
    data: dict[str, Any] = {"turn": {"speaker": turn.speaker, "dialogue": turn.dialogue}}
    data.update(rubric.data(prediction, gold))
    return rubric.prompts[scale] + "\n\nInstance:\n" + json.dumps(data, ensure_ascii=False, indent=1)


# ---------------------------------------------------------------------------------------------------------
# Answer validation


def parse_grade(raw: str | None, task_name: str, scale: Scale) -> Grade:
    """Validate one judge answer: a JSON object with integer scores inside the rubric's range."""
    rubric = rubric_for(task_name)
    try:
        payload = extract_json(raw or "")
    except AnswerError as exc:
        raise JudgeAnswerError(str(exc)) from None
    # A judge that wraps its grade ({"graded": [{...}]}, {"predictions": [{...}]}) still answered one instance.
    for key in ("graded", "predictions"):
        inner = payload.get(key)
        if isinstance(inner, list) and len(inner) == 1 and isinstance(inner[0], dict):
            payload = inner[0]
    try:
        grade: Grade = rubric.grades[scale].model_validate(payload)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'answer'}: {err['msg']}" for err in exc.errors()
        )
        raise JudgeAnswerError(problems) from None
    return grade


# ---------------------------------------------------------------------------------------------------------
# Running the judges


class JudgeUsage(TypedDict):
    """One judge's counts on one model's task, as ``results.json`` records them (``models[m].usage.judge``) and
    the run prices them (``rescue.engine.accounting``)."""

    judge: str
    task: str
    scale: str
    instances: int
    requests: int
    retries: int
    failures: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    errors: list[str]
    # Only when some answers came through a batch API (--batch): runs without it read as before.
    batch_input_tokens: NotRequired[int]
    batch_output_tokens: NotRequired[int]
    batch_cached_input_tokens: NotRequired[int]


@dataclass
class JudgeStats:
    """What one judge model did in one call of :func:`judge_records` (reported apart from the evaluated model)."""

    judge: str
    task: str
    scale: str
    instances: int = 0  # instances sent to this judge
    requests: int = 0  # including re-asks
    retries: int = 0  # re-asks after an invalid answer
    failures: int = 0  # instances without a valid grade after all attempts
    errors: list[str] = field(default_factory=list)  # first few failure reasons, for the log
    # Tokens of every answer, and of those that came through a batch API (--batch), billed at batch rates.
    tokens: UsageCount = field(default_factory=UsageCount)

    @property
    def input_tokens(self) -> int:
        """Prompt tokens of every answer the judge gave."""
        return self.tokens.usage.input_tokens

    def to_dict(self) -> JudgeUsage:
        """The judge's counts as JSON (batch counts only when a batch was used)."""
        usage, batch = self.tokens.usage, self.tokens.batch_usage
        data: JudgeUsage = {
            "judge": self.judge, "task": self.task, "scale": self.scale, "instances": self.instances,
            "requests": self.requests, "retries": self.retries, "failures": self.failures,
            "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cached_input_tokens": usage.cached_input_tokens, "errors": list(self.errors)}
        if batch.input_tokens or batch.output_tokens:  # runs without --batch read as before
            data["batch_input_tokens"] = batch.input_tokens
            data["batch_output_tokens"] = batch.output_tokens
            data["batch_cached_input_tokens"] = batch.cached_input_tokens
        return data


async def _grade_one(
    judge: Model,
    prompt: str,
    task_name: str,
    scale: Scale,
    max_attempts: int,
    max_tokens: int,
    stats: JudgeStats,
    retry_errors: bool = False,
    repeat: int = 0,
    on_reask: Callable[[], None] | None = None,
) -> JudgeGrade:
    from rescue.llm import ChatRequest

    messages: list[ChatMessage] = [{"role": "user", "content": prompt}]
    error = ""

    async def ask(fresh: bool) -> Any:
        answer = await judge.complete(ChatRequest(messages=list(messages), max_tokens=max_tokens, purpose="judge",
                                                  fresh=fresh, repeat=repeat))
        stats.requests += 1
        stats.tokens.add(answer.usage, batch=bool(answer.meta.get("batch")))
        return answer

    for attempt in range(1, max_attempts + 1):
        answer = await ask(False)
        if retry_errors and answer.status == "ok" and answer.meta.get("cached") and \
                not _gradable(answer.text, task_name, scale):
            # A cached answer an earlier run could not use: --retry-errors asks the judge again for it.
            answer = await ask(True)
        if answer.status != "ok":
            # The engine has already retried transport errors; a refusal will not change on asking again.
            return JudgeGrade(status="failed", attempts=attempt, error=f"{answer.status}: {answer.error}")
        try:
            grade = parse_grade(answer.text, task_name, scale)
        except JudgeAnswerError as exc:
            error = f"invalid answer: {exc}"
            if attempt < max_attempts:
                stats.retries += 1
                if on_reask is not None:  # a progress bar counts the re-asks results.json counts
                    on_reask()
                # Asking again with the error changes the request, so a caching judge does not replay the
                # same invalid answer.
                messages += [
                    {"role": "assistant", "content": answer.text or ""},
                    {"role": "user", "content": _RETRY_PROMPT.format(error=exc)},
                ]
            continue
        return JudgeGrade(status="ok", attempts=attempt, scores=grade.scores(), verdict=grade.verdict,
                          notes=grade.notes)
    return JudgeGrade(status="failed", attempts=max_attempts, error=error)


def _gradable(text: str | None, task_name: str, scale: Scale) -> bool:
    try:
        parse_grade(text, task_name, scale)
    except JudgeAnswerError:
        return False
    return True


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _combine(record: PredictionRecord, rubric: JudgeRubric, scale: Scale, per_judge: dict[str, JudgeGrade]) -> None:
    """Mean over the judges that gave a valid grade; then the rubric's formula scores (ER: S_int, S_ER)."""
    for key in rubric.judged_keys(scale):
        record.scores[key] = _mean(grade.scores.get(key) for grade in per_judge.values() if grade.graded)
    if rubric.finish is not None:
        rubric.finish(record)


async def judge_records(
    pairs: Sequence[tuple[Instance, PredictionRecord]],
    *,
    judges: Sequence[Model],
    task_name: str,
    scale: Scale = "likert",
    max_attempts: int = 3,
    max_tokens: int = JUDGE_MAX_TOKENS,
    concurrency: int = 8,
    on_graded: Callable[[bool], None] | None = None,
    retry_errors: bool = False,
    repeats: int = 1,
    on_reask: Callable[[], None] | None = None,
) -> dict[str, JudgeStats]:
    """Grade every (instance, record) pair with every judge; fills ``record.scores`` and ``record.judge``.

    Args:
        pairs: the instance (for the turn the judge sees) and its prediction record, for one task.
        judges: judge models (engine ``Model``s, with their own cache and retries); empty: no judge, the
            judge keys are set to ``None`` with a note, and ER's ``intensity`` is still computed.
        task_name: a task that declares a judge rubric (ER, VP).
        scale: "likert" (1-5) or, for VP, "authors" (0-2 + 0-4, mapped to ``judge`` by :func:`rescue.tasks.vp.authors_to_likert`).
        max_attempts: requests per instance and judge before it counts as a judge failure.
        max_tokens: the judge's answer budget (the authors' 1800: reasoning models spend tokens before answering).
        concurrency: judge requests in flight at once, over all judges.
        retry_errors: ask the judge again where its cached answer is not a valid grade (``--retry-errors``).
        repeats: how often each judge is asked for each grade (``--judge-repeats``), each repeat its own request
            (keyed apart in the cache). The first repeat's grade is the grade that scores; with more than one,
            the grade also carries ``repeats``: every repeat's scores (``None`` where it gave no valid grade),
            read by :func:`rescue.scoring.judge_agreement.judge_stability`. ``1`` asks and records exactly as before.
        on_reask: called at every re-ask after an invalid answer (each one the returned ``retries`` count).

    Returns:
        Per judge name, its request, retry, failure and token counts.
    """
    rubric = rubric_for(task_name)
    names = _check_judge_options(judges, scale, max_attempts, repeats)
    stats = {judge.name: JudgeStats(judge=judge.name, task=task_name, scale=scale) for judge in judges}
    gate = asyncio.Semaphore(max(1, concurrency))

    async def ask(judge: Model, prompt: str, repeat: int) -> JudgeGrade:
        async with gate:
            return await _grade_one(judge, prompt, task_name, scale, max_attempts, max_tokens, stats[judge.name],
                                    retry_errors, repeat, on_reask)

    async def run(judge: Model, prompt: str) -> JudgeGrade:
        grades = await asyncio.gather(*(ask(judge, prompt, k) for k in range(repeats)))
        grade = grades[0]
        if repeats > 1:
            # An extra key, so a grade asked once serialises exactly as before.
            grade = JudgeGrade.model_validate(
                {**grade.model_dump(), "repeats": [g.scores if g.status == "ok" else None for g in grades]})
        if on_graded is not None:  # a progress bar: one call per (instance, judge) grade, with its success
            on_graded(grade.status == "ok")
        return grade

    jobs: list[tuple[int, str, asyncio.Task[JudgeGrade]]] = []
    async with asyncio.TaskGroup() as group:
        for index, (instance, record) in enumerate(pairs):
            if not record.ok or not judges:
                continue
            prompt = judge_prompt(task_name, scale, Turn.of(instance), record.prediction, record.gold)
            for judge in judges:
                stats[judge.name].instances += 1
                jobs.append((index, judge.name, group.create_task(run(judge, prompt))))

    results: dict[int, dict[str, JudgeGrade]] = {}
    for index, name, job in jobs:
        grade = job.result()
        results.setdefault(index, {})[name] = grade
        if grade.status == "failed":
            stats[name].failures += 1
            if len(stats[name].errors) < 5:
                stats[name].errors.append(f"{pairs[index][1].instance_id}: {grade.error}")

    for index, (_, record) in enumerate(pairs):
        _record_grades(record, rubric, scale, names, results.get(index, {}))
    return stats


def _check_judge_options(judges: Sequence[Model], scale: Scale, max_attempts: int, repeats: int) -> list[str]:
    """The judges' names, once the options are known to be usable."""
    if scale not in SCALES:
        raise JudgeConfigError(f"unknown judge scale {scale!r}; choose one of: {', '.join(SCALES)}")
    if max_attempts < 1:
        raise JudgeConfigError("max_attempts must be at least 1")
    if repeats < 1:
        raise JudgeConfigError("repeats must be at least 1")
    names = [judge.name for judge in judges]
    if len(set(names)) != len(names):
        raise JudgeConfigError(f"the same judge is given twice: {names}")
    return names


def _record_grades(record: PredictionRecord, rubric: JudgeRubric, scale: Scale, names: Sequence[str],
                   graded: dict[str, JudgeGrade]) -> None:
    """Store a record's grades: the judges' own, the minimum for a failed prediction, or none without a judge."""
    note = ""
    if not names:
        per_judge: dict[str, JudgeGrade] = {}
        note = NO_JUDGE_NOTE
    elif not record.ok:
        per_judge = {name: JudgeGrade(status="minimum", scores=dict(rubric.minimum[scale])) for name in names}
        note = FAILED_PREDICTION_NOTE.format(status=record.status)
    else:
        per_judge = graded
    _combine(record, rubric, scale, per_judge)
    failures = sum(1 for grade in per_judge.values() if grade.status == "failed")
    record.judge = JudgeResults(scale=scale, judges=per_judge, failures=failures, note=note)
