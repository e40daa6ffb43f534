"""LLM-as-judge scoring for the generative tasks ER and VP.

The runner calls, once per evaluated model and task, after predictions are parsed::

    from rescue.metrics.judge import judge_records
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
- ``record.judge``: ``{"scale", "judges": {name: {"status", "scores", "verdict", "notes", "attempts", "error"}},
  "failures", "note"}``.

Rules that make the scores checkable: the judge sees only the turn (speaker, dialogue), the prediction and the
gold (never the evaluated model's name, its reasoning, gold intensity or internal fields); one request per
instance (a cached rating then does not depend on which other predictions shared a batch); answers must be JSON
that validates against the rubric, with integer scores inside the scale; totals and S_ER are recomputed here.
An answer that does not validate is asked again, with the validation error, up to ``max_attempts``; after that
the instance counts as a judge failure for that judge (scores ``None``, never a made-up number). A prediction
that failed (``status`` not "ok") is not sent to the judge: it scores the scale minimum, as every failure
scores as wrong. Without a judge the judge keys are ``None`` and ``record.judge["note"]`` says why.

Aggregation (means per scope, failures at the scale's floor) is :func:`rescue.tasks.generative.aggregate_scores`,
which counts judge failures with :func:`judge_failure_count` and :func:`judge_request_failures` here.
This module imports nothing from rescue at import time so that task modules can use its plain functions.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

if TYPE_CHECKING:
    from rescue.engine.types import Model
    from rescue.tasks.base import Instance, PredictionRecord

Scale = Literal["likert", "authors"]
SCALES: tuple[str, ...] = ("likert", "authors")
JUDGED_TASKS: tuple[str, ...] = ("er", "vp")

NO_JUDGE_NOTE = "no judge configured (offline run): judge scores are absent, not zero; pass --judge MODEL"
FAILED_PREDICTION_NOTE = "prediction status {status}: scored the scale minimum without asking the judge"

# The record.scores keys each task gets from the judge (bertscore_f1 comes from rescue.metrics.bertscore).
SCORE_KEYS: dict[str, tuple[str, ...]] = {
    "er": ("judge_emotion", "intensity", "s_er"),
    "vp": ("judge",),
}
AUTHORS_PART_KEYS: tuple[str, ...] = ("judge_source_target", "judge_viewpoint", "judge_total")


class JudgeConfigError(ValueError):
    """The judge was asked for something it cannot do (unknown task or scale)."""


# ---------------------------------------------------------------------------------------------------------
# Formulas


def intensity_match(predicted: Any, gold: Any) -> float | None:
    """S_int = max(1, 5 - |pred - gold|) (:func:`rescue.metrics.intensity.intensity_score`) on intensities read
    as the authors do (``int(round(float(x)))`` within 0-10); 1 when the prediction has none, ``None`` when
    the gold has none (nothing to compare against)."""
    # read_intensity: the rule ER reads gold intensities with, applied to both sides.
    from rescue.metrics.intensity import INTENSITY_SCORE_FLOOR, intensity_score
    from rescue.tasks.generative import gold_intensity as read_intensity

    gold_value = read_intensity(gold)
    if gold_value is None:
        return None
    pred_value = read_intensity(predicted)
    if pred_value is None:
        return INTENSITY_SCORE_FLOOR
    return intensity_score(gold_value, pred_value)


def s_er(emotion: float | None, intensity: float | None) -> float | None:
    """The paper's ER score (S_emo + S_int) / 2, absent when either part is absent."""
    if emotion is None or intensity is None:
        return None
    return (emotion + intensity) / 2


def authors_to_likert(source_target: int, viewpoint: int) -> float:
    """The authors' VP total (0-6) on the paper's 1-5 scale: 1 + 4 * total / 6 (0 -> 1, 3 -> 3, 6 -> 5)."""
    return 1 + 4 * (source_target + viewpoint) / 6


# ---------------------------------------------------------------------------------------------------------
# Reading gold and predictions (task modules own their shapes; these accept the documented variants)


def emotion_text(value: Any) -> str:
    """The emotion phrase of an ER prediction or gold: ``{"emotion"}`` or ``{"emotion_description"}``."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        for key in ("emotion", "emotion_description", "predicted_internal_emotion"):
            text = value.get(key)
            if isinstance(text, str) and text.strip():
                return text.strip()
    return ""


def emotion_intensity(value: Any) -> Any:
    if isinstance(value, dict):
        for key in ("intensity", "predicted_intensity_score", "gold_intensity_score"):
            if key in value:
                return value[key]
    return None


def viewpoint_items(value: Any, *, with_attitude: bool = False) -> list[dict[str, str]]:
    """VP viewpoints as ``{source, target, viewpoint}`` (+ ``attitude`` for gold), skipping empty ones."""
    if isinstance(value, dict):
        value = value.get("viewpoints") or value.get("predicted_viewpoints") or [value]
    items: list[dict[str, str]] = []
    for item in value or []:
        if not isinstance(item, dict):
            continue
        viewpoint = str(item.get("viewpoint") or "").strip()
        if not viewpoint:
            continue
        clean = {
            "source": str(item.get("source") or "").strip(),
            "target": str(item.get("target") or "").strip(),
            "viewpoint": viewpoint,
        }
        if with_attitude and str(item.get("attitude") or "").strip():
            clean["attitude"] = str(item["attitude"]).strip()
        items.append(clean)
    return items


# ---------------------------------------------------------------------------------------------------------
# Prompts: one user message (the protocol sends no system message), data as JSON at the end


@dataclass(frozen=True)
class Turn:
    """What the judge sees of the judged turn."""

    speaker: str
    dialogue: str

    @classmethod
    def of(cls, instance: Instance) -> Turn:
        row = instance.sample.row(instance.row_index)
        return cls(speaker=row.speaker, dialogue=row.dialogue_cleaned)


_ANSWER_RULE = "Return only the JSON object, no markdown, no text before or after it."

_ER_PROMPT = """You are grading one prediction for a therapy user-understanding task.
The target is the internal emotion of the CURRENT speaker at the moment they begin speaking in this turn.
Compare the predicted emotion with the gold annotation. Be lenient with paraphrases and near-synonyms: grade the
meaning, not the wording.
Rubric, emotion_score (integer 1-5): 1 = wrong or contradictory; 2 = weakly related; 3 = partial match;
4 = close; 5 = almost exact.
Do not grade intensity: it is scored separately by formula.
Schema: {"emotion_score": 4, "verdict": "strong|pass|borderline|fail", "notes": "one short sentence"}
""" + _ANSWER_RULE

_VP_LIKERT_PROMPT = """You are grading one prediction for a therapy viewpoint-understanding task: who holds what view
of whom in the CURRENT turn.
Compare the predicted viewpoints with the gold viewpoints. Consider both whether the source -> target pairings are
recovered and whether each viewpoint means the same as its gold counterpart. Be lenient with paraphrase.
Rubric, score (integer 1-5): 1 = pairings and viewpoints wrong or missing; 2 = weakly related (some pairing right,
views only loosely related); 3 = partially recovered (some pairings and views right, others missing or off);
4 = close (the pairings right and the views close in meaning); 5 = almost exact (every gold pairing and view
recovered, nothing contradictory added).
Schema: {"score": 4, "verdict": "strong|pass|borderline|fail", "notes": "one short sentence"}
""" + _ANSWER_RULE

_VP_AUTHORS_PROMPT = """You are grading one prediction for a therapy viewpoint-understanding task: who holds what view
of whom in the CURRENT turn.
Compare the predicted viewpoints with the gold viewpoints. Be lenient with paraphrase.
Rubric:
- source_target_score (integer 0-2): 0 = source/target pairings mostly wrong or missing; 1 = partially recovered;
  2 = all gold pairings essentially recovered.
- viewpoint_score (integer 0-4): 0 = wrong; 1 = weakly related; 2 = close; 3 = essentially the same;
  4 = almost exact.
Schema: {"source_target_score": 2, "viewpoint_score": 3, "verdict": "strong|pass|borderline|fail",
"notes": "one short sentence"}
""" + _ANSWER_RULE

_RETRY_PROMPT = "Your answer could not be used: {error}. Answer again with only the JSON object in the schema."


def judge_prompt(task_name: str, scale: Scale, turn: Turn, prediction: Any, gold: Any) -> str:
    """The judge's user message for one instance."""
    data: dict[str, Any] = {"turn": {"speaker": turn.speaker, "dialogue": turn.dialogue}}
    if task_name == "er":
        data["predicted_emotion"] = emotion_text(prediction)
        data["gold_emotion"] = emotion_text(gold)
        rubric = _ER_PROMPT
    elif task_name == "vp":
        data["predicted_viewpoints"] = viewpoint_items(prediction)
        data["gold_viewpoints"] = viewpoint_items(gold, with_attitude=True)
        rubric = _VP_AUTHORS_PROMPT if scale == "authors" else _VP_LIKERT_PROMPT
    else:
        raise JudgeConfigError(f"no judge for task {task_name!r}; judged tasks: {', '.join(JUDGED_TASKS)}")
    return rubric + "\n\nInstance:\n" + json.dumps(data, ensure_ascii=False, indent=1)


# ---------------------------------------------------------------------------------------------------------
# Answer validation


def _integer(value: Any) -> int:
    # Models send 4, "4" or 4.0; 4.5 or "four" is not a Likert grade and is asked again.
    if isinstance(value, bool):
        raise ValueError("must be an integer, not a boolean")  # noqa: TRY004 - pydantic turns only ValueError into a validation error
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    raise ValueError(f"must be an integer, got {value!r}")


class _Grade(BaseModel):
    model_config = ConfigDict(extra="ignore")
    verdict: str = ""
    notes: str = ""

    @field_validator("verdict", "notes", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value)

    def scores(self) -> dict[str, float]:
        """The record.scores entries this grade gives."""
        raise NotImplementedError


class EmotionGrade(_Grade):
    emotion_score: int = Field(ge=1, le=5)

    @field_validator("emotion_score", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> int:
        return _integer(value)

    def scores(self) -> dict[str, float]:
        return {"judge_emotion": float(self.emotion_score)}


class ViewpointLikertGrade(_Grade):
    score: int = Field(ge=1, le=5)

    @field_validator("score", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> int:
        return _integer(value)

    def scores(self) -> dict[str, float]:
        return {"judge": float(self.score)}


class ViewpointAuthorsGrade(_Grade):
    source_target_score: int = Field(ge=0, le=2)
    viewpoint_score: int = Field(ge=0, le=4)

    @field_validator("source_target_score", "viewpoint_score", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> int:
        return _integer(value)

    def scores(self) -> dict[str, float]:
        # The judge's own total, if it sends one, is ignored: the sum is recomputed here.
        total = self.source_target_score + self.viewpoint_score
        return {
            "judge": authors_to_likert(self.source_target_score, self.viewpoint_score),
            "judge_source_target": float(self.source_target_score),
            "judge_viewpoint": float(self.viewpoint_score),
            "judge_total": float(total),
        }


_GRADES: dict[tuple[str, str], type[_Grade]] = {
    ("er", "likert"): EmotionGrade,
    ("er", "authors"): EmotionGrade,  # the authors' ER rubric is the 1-5 one
    ("vp", "likert"): ViewpointLikertGrade,
    ("vp", "authors"): ViewpointAuthorsGrade,
}


class JudgeAnswerError(ValueError):
    """A judge answer that is not a valid grade."""


def parse_grade(raw: str | None, task_name: str, scale: Scale) -> _Grade:
    """Validate one judge answer: a JSON object with integer scores inside the rubric's range."""
    from rescue.tasks.parsing import AnswerParseError, extract_json

    try:
        payload = extract_json(raw or "")
    except AnswerParseError as exc:
        raise JudgeAnswerError(str(exc)) from None
    # A judge that wraps its grade ({"graded": [{...}]}, {"predictions": [{...}]}) still answered one instance.
    for key in ("graded", "predictions"):
        inner = payload.get(key)
        if isinstance(inner, list) and len(inner) == 1 and isinstance(inner[0], dict):
            payload = inner[0]
    try:
        return _GRADES[(task_name, scale)].model_validate(payload)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'answer'}: {err['msg']}" for err in exc.errors()
        )
        raise JudgeAnswerError(problems) from None


# ---------------------------------------------------------------------------------------------------------
# Running the judges


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
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    errors: list[str] = field(default_factory=list)  # first few failure reasons, for the log

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


async def _grade_one(
    judge: Model,
    prompt: str,
    task_name: str,
    scale: Scale,
    max_attempts: int,
    max_tokens: int,
    stats: JudgeStats,
) -> dict[str, Any]:
    from rescue.engine.types import ChatRequest

    messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
    error = ""
    for attempt in range(1, max_attempts + 1):
        answer = await judge.complete(ChatRequest(messages=list(messages), max_tokens=max_tokens, purpose="judge"))
        stats.requests += 1
        stats.input_tokens += answer.usage.input_tokens
        stats.output_tokens += answer.usage.output_tokens
        stats.cached_input_tokens += answer.usage.cached_input_tokens
        if answer.status != "ok":
            # The engine has already retried transport errors; a refusal will not change on asking again.
            return {"status": "failed", "attempts": attempt, "error": f"{answer.status}: {answer.error}"}
        try:
            grade = parse_grade(answer.text, task_name, scale)
        except JudgeAnswerError as exc:
            error = f"invalid answer: {exc}"
            if attempt < max_attempts:
                stats.retries += 1
                # Asking again with the error changes the request, so a caching judge does not replay the
                # same invalid answer.
                messages += [
                    {"role": "assistant", "content": answer.text or ""},
                    {"role": "user", "content": _RETRY_PROMPT.format(error=exc)},
                ]
            continue
        return {
            "status": "ok",
            "attempts": attempt,
            "scores": grade.scores(),
            "verdict": grade.verdict,
            "notes": grade.notes,
        }
    return {"status": "failed", "attempts": max_attempts, "error": error}


def _minimum_scores(task_name: str, scale: Scale) -> dict[str, float]:
    if task_name == "er":
        return {"judge_emotion": 1.0}
    if scale == "authors":
        return {"judge": 1.0, "judge_source_target": 0.0, "judge_viewpoint": 0.0, "judge_total": 0.0}
    return {"judge": 1.0}


def _score_keys(task_name: str, scale: Scale) -> tuple[str, ...]:
    keys = SCORE_KEYS[task_name]
    return keys + AUTHORS_PART_KEYS if (task_name == "vp" and scale == "authors") else keys


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _combine(record: PredictionRecord, task_name: str, scale: Scale, per_judge: dict[str, dict[str, Any]]) -> None:
    """Mean over the judges that gave a valid grade; S_int and S_ER by formula."""
    judged_keys = [k for k in _score_keys(task_name, scale) if k not in ("intensity", "s_er")]
    for key in judged_keys:
        record.scores[key] = _mean(
            entry["scores"].get(key) for entry in per_judge.values() if entry.get("status") in ("ok", "minimum")
        )
    if task_name == "er":
        intensity = (
            intensity_match(emotion_intensity(record.prediction), emotion_intensity(record.gold))
            if record.ok
            else 1.0
        )
        record.scores["intensity"] = intensity
        record.scores["s_er"] = s_er(record.scores.get("judge_emotion"), intensity)


async def judge_records(
    pairs: Sequence[tuple[Instance, PredictionRecord]],
    *,
    judges: Sequence[Model],
    task_name: str,
    scale: Scale = "likert",
    max_attempts: int = 3,
    max_tokens: int = 1800,
    concurrency: int = 8,
) -> dict[str, JudgeStats]:
    """Grade every (instance, record) pair with every judge; fills ``record.scores`` and ``record.judge``.

    Args:
        pairs: the instance (for the turn the judge sees) and its prediction record, for one task.
        judges: judge models (engine ``Model``s, with their own cache and retries); empty: no judge, the
            judge keys are set to ``None`` with a note, and ER's ``intensity`` is still computed.
        task_name: "er" or "vp".
        scale: "likert" (1-5) or, for VP, "authors" (0-2 + 0-4, mapped to ``judge`` by :func:`authors_to_likert`).
        max_attempts: requests per instance and judge before it counts as a judge failure.
        max_tokens: the judge's answer budget (the authors' 1800: reasoning models spend tokens before answering).
        concurrency: judge requests in flight at once, over all judges.

    Returns:
        Per judge name, its request, retry, failure and token counts.
    """
    if task_name not in JUDGED_TASKS:
        raise JudgeConfigError(f"no judge for task {task_name!r}; judged tasks: {', '.join(JUDGED_TASKS)}")
    if scale not in SCALES:
        raise JudgeConfigError(f"unknown judge scale {scale!r}; choose one of: {', '.join(SCALES)}")
    if max_attempts < 1:
        raise JudgeConfigError("max_attempts must be at least 1")
    names = [judge.name for judge in judges]
    if len(set(names)) != len(names):
        raise JudgeConfigError(f"the same judge is given twice: {names}")
    stats = {judge.name: JudgeStats(judge=judge.name, task=task_name, scale=scale) for judge in judges}
    gate = asyncio.Semaphore(max(1, concurrency))

    async def run(judge: Model, prompt: str) -> dict[str, Any]:
        async with gate:
            return await _grade_one(judge, prompt, task_name, scale, max_attempts, max_tokens, stats[judge.name])

    jobs: list[tuple[int, str, asyncio.Task[dict[str, Any]]]] = []
    async with asyncio.TaskGroup() as group:
        for index, (instance, record) in enumerate(pairs):
            if not record.ok or not judges:
                continue
            prompt = judge_prompt(task_name, scale, Turn.of(instance), record.prediction, record.gold)
            for judge in judges:
                stats[judge.name].instances += 1
                jobs.append((index, judge.name, group.create_task(run(judge, prompt))))

    results: dict[int, dict[str, dict[str, Any]]] = {}
    for index, name, job in jobs:
        entry = job.result()
        results.setdefault(index, {})[name] = entry
        if entry["status"] == "failed":
            stats[name].failures += 1
            if len(stats[name].errors) < 5:
                stats[name].errors.append(f"{pairs[index][1].instance_id}: {entry['error']}")

    for index, (_, record) in enumerate(pairs):
        note = ""
        if not judges:
            per_judge: dict[str, dict[str, Any]] = {}
            note = NO_JUDGE_NOTE
        elif not record.ok:
            minimum = {"status": "minimum", "scores": _minimum_scores(task_name, scale)}
            per_judge = {name: dict(minimum) for name in names}
            note = FAILED_PREDICTION_NOTE.format(status=record.status)
        else:
            per_judge = results.get(index, {})
        _combine(record, task_name, scale, per_judge)
        failures = sum(1 for entry in per_judge.values() if entry.get("status") == "failed")
        record.judge = {"scale": scale, "judges": per_judge, "failures": failures, "note": note}
    return stats


# ---------------------------------------------------------------------------------------------------------
# Counts for aggregation (the means themselves: rescue.tasks.generative.aggregate_scores)


def judge_failure_count(records: Iterable[PredictionRecord]) -> int:
    """Instances on which no judge gave a valid grade although at least one judge was asked."""
    count = 0
    for record in records:
        info = record.judge or {}
        per_judge = info.get("judges") or {}
        if per_judge and not any(e.get("status") in ("ok", "minimum") for e in per_judge.values()):
            count += 1
    return count


def judge_request_failures(records: Iterable[PredictionRecord]) -> int:
    """(instance, judge) grades that failed, over all judges."""
    return sum(int((record.judge or {}).get("failures") or 0) for record in records)
