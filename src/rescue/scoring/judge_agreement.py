"""Agreement between raters: human ratings vs the LLM judge, and judges among themselves.

The paper validated its judge on 200 instances (159 exact matches, MAE 0.235). ``rescue judge-agreement``
repeats that check for a run: human ratings come from a CSV (``instance_id,rater,score``; optional ``model``
and ``task`` columns) on the judge's 1-5 scale and are compared with the judge score the run stored for the
same instance. Every statistic comes from scipy, scikit-learn or krippendorff.

Statistics libraries are imported when a statistic is computed, so importing this module stays cheap.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from rescue.metrics.agreement import alpha, alt_test, pair_statistics
from rescue.tasks import TASKS, judged_tasks
from rescue.tasks.base import PredictionRecord
from rescue.tasks.rubric import inter_judge_alpha
from rescue.errors import RatingsError as RatingsError

__all__ = ["HumanRating", "RatingsError", "alpha", "inter_judge_alpha", "judge_agreement", "judge_score_key",
           "judge_stability", "pair_statistics", "read_ratings", "Stability"]


def judge_score_key(task: str) -> str:
    """The record.scores key a human rating is compared with (the task's rubric says: S_emo for ER, whose
    S_int is a formula; the 1-5 score for VP)."""
    rubric = TASKS[task].declaration.judge
    assert rubric is not None
    return rubric.human_key
REQUIRED_COLUMNS: tuple[str, ...] = ("instance_id", "rater", "score")


@dataclass(frozen=True)
class HumanRating:
    """One human rating of one instance: who rated, the score, and where it was read."""

    instance_id: str
    rater: str
    score: float
    model: str = ""
    task: str = ""
    line: int = 0


def read_ratings(path: Path) -> list[HumanRating]:
    """Read a ratings CSV; every problem is reported with its file, line and column."""
    if not path.is_file():
        raise RatingsError(f"{path}: ratings file not found")
    ratings: list[HumanRating] = []
    problems: list[str] = []
    seen: dict[tuple[str, str, str, str], int] = {}
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = [name.strip() for name in reader.fieldnames or []]
        missing = [name for name in REQUIRED_COLUMNS if name not in header]
        if missing:
            raise RatingsError(
                f"{path}:1: header: missing column(s) {', '.join(missing)}; expected "
                f"{','.join(REQUIRED_COLUMNS)} (optional: model, task)"
            )
        for row in reader:
            line = reader.line_num
            row = {(k or "").strip(): (v or "").strip() for k, v in row.items() if k is not None}
            instance_id, rater, text = row.get("instance_id", ""), row.get("rater", ""), row.get("score", "")
            for name, value in (("instance_id", instance_id), ("rater", rater), ("score", text)):
                if not value:
                    problems.append(f"{path}:{line}: {name}: empty")
            if not (instance_id and rater and text):
                continue
            try:
                score = float(text)
                if not math.isfinite(score):
                    raise ValueError
            except ValueError:
                problems.append(f"{path}:{line}: score: {text!r} is not a number")
                continue
            rating = HumanRating(instance_id, rater, score, row.get("model", ""), row.get("task", "").lower(), line)
            key = (rating.model, rating.task, instance_id, rater)
            if key in seen:
                problems.append(f"{path}:{line}: rater: {rater!r} already rated {instance_id!r} on line {seen[key]}")
                continue
            seen[key] = line
            ratings.append(rating)
    if problems:
        more = f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise RatingsError(f"{len(problems)} problem(s) in the ratings file:\n" + "\n".join(problems[:20]) + more)
    if not ratings:
        raise RatingsError(f"{path}: no ratings")
    return ratings


def _judge_scores(record: PredictionRecord, key: str) -> dict[str, float]:
    """The judge scores stored for a record: each judge's own grade and, with several judges, their mean."""
    scores = {} if record.judge is None else record.judge.own_scores(key)
    mean = record.scores.get(key)
    if len(scores) > 1 and mean is not None:
        scores["mean of judges"] = float(mean)
    return scores


def judge_agreement(
    records: Sequence[PredictionRecord],
    ratings: Sequence[HumanRating],
    *,
    task: str | None = None,
    model: str | None = None,
    epsilon: float = 0.2,
) -> dict[str, Any]:
    """Human ratings vs the stored judge scores of a run, per task and per judge.

    Beside the agreement statistics: the alternative annotator test per judge (:func:`alt_test`, with the
    cost-benefit margin ``epsilon``), a length-bias check per judge on every graded record of the run
    (:func:`length_bias`), and a warning per judge that comes from the same model family as an evaluated
    model (:func:`self_preference`), and under ``stability`` each judge's flip rate and alpha across
    ``--judge-repeats`` (:func:`judge_stability`; empty for a run judged once per item).

    Ratings are matched to records by ``(model, task, instance_id)``; a rating's empty model or task matches
    any, but must then match exactly one record. Per judge: the statistics over all (rating, record) pairs
    (each rater counts), per rater, and the humans' own inter-rater alpha when several raters rated.
    Unmatched ratings and ratings of instances the judge did not grade are counted, never silently dropped.
    """
    judged = sorted(judged_tasks())
    tasks = [task] if task else judged
    for name in tasks:
        if name not in judged:
            raise RatingsError(f"no judge scores for task {name!r}; choose one of: {', '.join(judged)}")
    index: dict[tuple[str, str], list[PredictionRecord]] = defaultdict(list)
    for record in records:
        if record.task in tasks and (model is None or record.model == model):
            index[(record.task, record.instance_id)].append(record)

    report: dict[str, Any] = {}
    pairs_by_task, unmatched = _match_ratings(ratings, tasks, index)

    for name in tasks:
        pairs = pairs_by_task.get(name, [])
        if not pairs:
            continue
        key = judge_score_key(name)
        judge_names = sorted({j for _, record in pairs for j in _judge_scores(record, key)})
        task_records = [r for r in records if r.task == name]
        per_judge: dict[str, Any] = {judge: _one_judge(pairs, task_records, key, judge, epsilon)
                                     for judge in judge_names}
        raters = sorted({rating.rater for rating, _ in pairs})
        units = sorted({record.instance_id for _, record in pairs})
        by_rater = {(rating.rater, record.instance_id): rating.score for rating, record in pairs}
        human_alpha = alpha([[by_rater.get((rater, unit)) for unit in units] for rater in raters])
        report[name] = {
            "judge_score": key,
            "ratings": len(pairs),
            "instances": len(units),
            "raters": raters,
            "human_alpha": human_alpha,
            "judges": per_judge,
        }
    if not report:
        raise RatingsError(
            "no rating matches an instance of the run"
            + (f" (first unmatched: {', '.join(unmatched[:3])})" if unmatched else "")
        )
    warnings = self_preference(sorted({j for block in report.values() for j in block["judges"]}),
                               sorted({r.model for r in records}))
    stability = judge_stability([r for r in records if r.task in tasks and (model is None or r.model == model)])
    return {"tasks": report, "unmatched_ratings": len(unmatched), "unmatched_examples": unmatched[:5],
            "warnings": warnings, "stability": stability}


def _match_ratings(
    ratings: Sequence[HumanRating], tasks: Sequence[str], index: dict[tuple[str, str], list[PredictionRecord]]
) -> tuple[dict[str, list[tuple[HumanRating, PredictionRecord]]], list[str]]:
    """Each rating with the one record it rates, per task; and the ratings that match no record."""
    unmatched: list[str] = []
    pairs_by_task: dict[str, list[tuple[HumanRating, PredictionRecord]]] = defaultdict(list)
    for rating in ratings:
        if rating.task and rating.task not in tasks:
            continue  # a rating for another task than the one asked for
        candidate_tasks = [rating.task] if rating.task else tasks
        found = [
            r for t in candidate_tasks for r in index.get((t, rating.instance_id), [])
            if not rating.model or r.model == rating.model
        ]
        if not found:
            unmatched.append(f"line {rating.line}: {rating.instance_id}")
            continue
        if len(found) > 1:
            models = sorted({r.model for r in found})
            raise RatingsError(
                f"line {rating.line}: instance_id: {rating.instance_id!r} matches predictions of several models "
                f"({', '.join(models)}); add a model column or pass --model"
            )
        pairs_by_task[found[0].task].append((rating, found[0]))
    return pairs_by_task, unmatched


def _one_judge(pairs: Sequence[tuple[HumanRating, PredictionRecord]], task_records: Sequence[PredictionRecord],
               key: str, judge: str, epsilon: float) -> dict[str, Any]:
    """One judge against the human ratings of one task: agreement, per rater, the alt-test and length bias."""
    graded = [(rating, _judge_scores(record, key).get(judge)) for rating, record in pairs]
    usable = [(rating, score) for rating, score in graded if score is not None]
    stats: dict[str, Any] = dict(pair_statistics([r.score for r, _ in usable], [s for _, s in usable]))
    stats["not_graded"] = len(graded) - len(usable)
    raters = sorted({r.rater for r, _ in usable})
    stats["per_rater"] = {
        rater: pair_statistics(
            [r.score for r, _ in usable if r.rater == rater], [s for r, s in usable if r.rater == rater]
        )
        for rater in raters
    } if len(raters) > 1 else {}
    judge_by_item = {record.instance_id: score for (_, record), (_, score) in zip(pairs, graded)
                     if score is not None}
    humans: dict[str, dict[str, float]] = defaultdict(dict)
    for rating, record in pairs:
        humans[rating.rater][record.instance_id] = rating.score
    stats["alt_test"] = alt_test(judge_by_item, dict(humans), epsilon=epsilon) if len(humans) >= 2 else None
    stats["length_bias"] = length_bias(task_records, key, judge)
    return stats


class Stability(TypedDict):
    """One judge's stability on one task across ``--judge-repeats`` (results.json's ``judge_stability``)."""

    repeats: int  # the most repeats an item has
    graded: int  # items graded with repeats
    items: int  # of those, items with at least two valid repeats
    flips: int  # items whose grade differs between repeats
    flip_rate: float | None
    alpha: float | None  # Krippendorff's alpha (ordinal) of the repeats on the score below
    score: str  # the task's human-comparable score key


def judge_stability(records: Sequence[PredictionRecord]) -> dict[str, dict[str, Stability]]:
    """How stable each judge is across ``--judge-repeats``, per task and judge: ``{task: {judge: {...}}}``.

    An item is one graded prediction (of any evaluated model among ``records``) with at least two valid
    repeats. ``flip_rate``: the share of items whose grade (every score the judge gave) differs between
    repeats; ``alpha``: Krippendorff's alpha (ordinal) of the repeats as raters of the task's human-comparable
    score (``judge_score_key``), ``None`` when undefined (e.g. every repeat always the same grade). Empty for
    a run judged once per item (no grade carries ``repeats``)."""
    found: dict[str, dict[str, list[list[dict[str, float] | None]]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        if record.judge is None:
            continue
        for judge, grade in record.judge.judges.items():
            repeats = (grade.model_extra or {}).get("repeats")
            if isinstance(repeats, list) and len(repeats) > 1:
                found[record.task][judge].append(repeats)
    report: dict[str, dict[str, Stability]] = {}
    for task in sorted(found):
        key = judge_score_key(task)
        for judge, items in sorted(found[task].items()):
            n = max(len(r) for r in items)
            usable = [[g for g in r if g is not None] for r in items]
            usable = [g for g in usable if len(g) >= 2]
            flips = sum(1 for g in usable if any(other != g[0] for other in g[1:]))
            matrix = [[(r[k] or {}).get(key) if k < len(r) else None for r in items] for k in range(n)]
            report.setdefault(task, {})[judge] = {
                "repeats": n, "graded": len(items), "items": len(usable), "flips": flips,
                "flip_rate": flips / len(usable) if usable else None, "alpha": alpha(matrix), "score": key,
            }
    return report


# Model families by the start of the model's own name (after any provider/ prefix): a judge grading a model of
# its own family may prefer it (self-preference, Panickssery et al. 2024; Wataoka et al. 2024).
FAMILIES: tuple[tuple[str, str], ...] = (
    ("gpt", "OpenAI"), ("o1", "OpenAI"), ("o3", "OpenAI"), ("o4", "OpenAI"), ("chatgpt", "OpenAI"),
    ("claude", "Anthropic"), ("gemini", "Google"), ("gemma", "Google"), ("qwen", "Qwen"), ("qwq", "Qwen"),
    ("deepseek", "DeepSeek"), ("kimi", "Moonshot"), ("moonshot", "Moonshot"), ("minimax", "MiniMax"),
    ("abab", "MiniMax"), ("llama", "Meta"), ("mistral", "Mistral"), ("mixtral", "Mistral"), ("glm", "Zhipu"),
    ("grok", "xAI"), ("phi", "Microsoft"),
)


def model_family(name: str) -> str | None:
    """The family of a model id (``openai/gpt-4o`` → OpenAI), or None when it is not one rescue knows."""
    stem = name.rsplit("/", 1)[-1].strip().lower()
    for prefix, family in FAMILIES:
        if stem.startswith(prefix):
            return family
    return None


def self_preference(judges: Sequence[str], models: Sequence[str]) -> list[str]:
    """A warning for each judge that comes from the same family as an evaluated model."""
    out = []
    for judge in judges:
        family = model_family(judge)
        same = [m for m in models if family is not None and model_family(m) == family]
        if same:
            out.append(f"judge {judge} and evaluated model(s) {', '.join(same)} are all {family} models: a judge may "
                       "prefer answers of its own family (self-preference); check with a judge of another family")
    return out


def length_bias(records: Sequence[PredictionRecord], key: str, judge: str, *, strata: int = 3) -> dict[str, Any]:
    """Does the judge reward longer answers? Spearman's ρ between the judge's score and the prediction's
    length in words, within strata of the gold's length (terciles), so that long gold answers that invite
    long predictions do not count as bias; ``rho`` is the instance-weighted mean of the strata's ρ.
    ``warning`` when ρ ≥ 0.3 (a moderate correlation) with at least 20 graded records."""
    import numpy as np
    from scipy.stats import spearmanr

    rows = []
    for record in records:
        score = _judge_scores(record, key).get(judge)
        if score is None or not record.ok:
            continue
        rows.append((len(_words(record.prediction)), len(_words(record.gold)), float(score)))
    result: dict[str, Any] = {"records": len(rows), "rho": None, "strata": [], "warning": False}
    if len(rows) < 4:
        return result
    gold_lengths = np.asarray([g for _, g, _ in rows], dtype=float)
    edges = np.unique(np.quantile(gold_lengths, np.linspace(0, 1, strata + 1)[1:-1]))
    bins = np.searchsorted(edges, gold_lengths, side="right")
    weighted, total = 0.0, 0
    for b in sorted(set(bins.tolist())):
        part = [rows[i] for i in np.flatnonzero(bins == b)]
        lengths, scores = [p for p, _, _ in part], [s for _, _, s in part]
        rho = None
        if len(part) >= 3 and np.ptp(lengths) > 0 and np.ptp(scores) > 0:
            rho = float(spearmanr(lengths, scores).statistic)
            weighted += rho * len(part)
            total += len(part)
        result["strata"].append({"gold_words": [int(min(g for _, g, _ in part)), int(max(g for _, g, _ in part))],
                                 "records": len(part), "rho": rho})
    if total:
        result["rho"] = weighted / total
        result["warning"] = bool(result["rho"] >= 0.3 and len(rows) >= 20)
    return result


def _words(value: Any) -> list[str]:
    """The words of a prediction or gold, whatever its shape (text, list of phrases, dict of fields)."""
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if isinstance(value, dict):
        return [w for v in value.values() for w in _words(v)]
    if isinstance(value, (list, tuple)):
        return [w for v in value for w in _words(v)]
    return str(value).split()
