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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rescue.data.errors import RescueError

if TYPE_CHECKING:
    from rescue.tasks.base import PredictionRecord

# The record.scores key a human rating is compared with: S_emo for ER (S_int is a formula), the 1-5 score for VP.
JUDGE_SCORE_KEY: dict[str, str] = {"er": "judge_emotion", "vp": "judge"}
REQUIRED_COLUMNS: tuple[str, ...] = ("instance_id", "rater", "score")


class RatingsError(RescueError):
    """A ratings file that cannot be used; the message names file, line and field."""


@dataclass(frozen=True)
class HumanRating:
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


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _is_integral(values: Iterable[float]) -> bool:
    return all(float(v).is_integer() for v in values)


def pair_statistics(human: Sequence[float], judge: Sequence[float]) -> dict[str, float | int | None]:
    """Agreement of paired scores: exact agreement, MAE, Spearman, Pearson, quadratic-weighted Cohen's kappa
    and Krippendorff's alpha (ordinal). Correlations are ``None`` when a side is constant (undefined);
    kappa is ``None`` when a score is not a whole number (the mean of several judges)."""
    import numpy as np
    from scipy.stats import pearsonr, spearmanr  # type: ignore[import-untyped]
    from sklearn.metrics import accuracy_score, cohen_kappa_score, mean_absolute_error  # type: ignore[import-untyped]

    if len(human) != len(judge):
        raise ValueError("human and judge scores must pair up")
    n = len(human)
    result: dict[str, float | int | None] = {
        "pairs": n, "exact_matches": None, "exact_agreement": None, "mae": None, "spearman": None,
        "pearson": None, "cohen_kappa_quadratic": None, "krippendorff_alpha": None,
    }
    if n == 0:
        return result
    h = np.asarray(human, dtype=float)
    j = np.asarray(judge, dtype=float)
    # accuracy_score wants labels; scores are compared as strings of their exact values.
    exact = accuracy_score([repr(float(x)) for x in h], [repr(float(x)) for x in j])
    result["exact_agreement"] = float(exact)
    result["exact_matches"] = round(exact * n)
    result["mae"] = float(mean_absolute_error(h, j))
    if n >= 2 and np.ptp(h) > 0 and np.ptp(j) > 0:
        result["spearman"] = _finite(spearmanr(h, j).statistic)
        result["pearson"] = _finite(pearsonr(h, j).statistic)
    if _is_integral(h) and _is_integral(j) and len(set(h) | set(j)) > 1:
        result["cohen_kappa_quadratic"] = _finite(cohen_kappa_score(h.astype(int), j.astype(int), weights="quadratic"))
    result["krippendorff_alpha"] = alpha([list(h), list(j)])
    return result


def alpha(
    reliability: Sequence[Sequence[float | None]],
    level: Literal["nominal", "ordinal", "interval", "ratio"] = "ordinal",
) -> float | None:
    """Krippendorff's alpha of a raters x units matrix (``None`` = not rated); ``None`` when undefined
    (fewer than two raters, no unit rated twice, or no variation at all)."""
    import krippendorff
    import numpy as np

    if len(reliability) < 2:
        return None
    matrix = np.array([[np.nan if v is None else float(v) for v in row] for row in reliability], dtype=float)
    paired = (~np.isnan(matrix)).sum(axis=0) >= 2
    if not paired.any():
        return None
    values = matrix[:, paired]
    if np.unique(values[~np.isnan(values)]).size < 2:
        return None  # no variation: alpha is 0/0
    return _finite(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))


def inter_judge_alpha(records: Iterable[PredictionRecord], key: str) -> float | None:
    """Krippendorff's alpha (ordinal) among the judges of a run on score ``key``; ``None`` with fewer than
    two judges. Only instances the judges actually graded count (not failed predictions' minimum scores)."""
    columns: list[dict[str, float]] = []
    names: set[str] = set()
    for record in records:
        per_judge = (record.judge or {}).get("judges") or {}
        ratings = {
            name: entry["scores"][key]
            for name, entry in per_judge.items()
            if entry.get("status") == "ok" and key in (entry.get("scores") or {})
        }
        if ratings:
            columns.append(ratings)
            names.update(ratings)
    if len(names) < 2:
        return None
    ordered = sorted(names)
    return alpha([[column.get(name) for column in columns] for name in ordered])


def _judge_scores(record: PredictionRecord, key: str) -> dict[str, float]:
    """The judge scores stored for a record: each judge's own grade and, with several judges, their mean."""
    scores: dict[str, float] = {}
    for name, entry in ((record.judge or {}).get("judges") or {}).items():
        if entry.get("status") == "ok" and key in (entry.get("scores") or {}):
            scores[name] = float(entry["scores"][key])
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
) -> dict[str, Any]:
    """Human ratings vs the stored judge scores of a run, per task and per judge.

    Ratings are matched to records by ``(model, task, instance_id)``; a rating's empty model or task matches
    any, but must then match exactly one record. Per judge: the statistics over all (rating, record) pairs
    (each rater counts), per rater, and the humans' own inter-rater alpha when several raters rated.
    Unmatched ratings and ratings of instances the judge did not grade are counted, never silently dropped.
    """
    tasks = [task] if task else sorted(JUDGE_SCORE_KEY)
    for name in tasks:
        if name not in JUDGE_SCORE_KEY:
            raise RatingsError(f"no judge scores for task {name!r}; choose one of: {', '.join(JUDGE_SCORE_KEY)}")
    index: dict[tuple[str, str], list[PredictionRecord]] = defaultdict(list)
    for record in records:
        if record.task in tasks and (model is None or record.model == model):
            index[(record.task, record.instance_id)].append(record)

    report: dict[str, Any] = {}
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

    for name in tasks:
        pairs = pairs_by_task.get(name, [])
        if not pairs:
            continue
        key = JUDGE_SCORE_KEY[name]
        per_judge: dict[str, Any] = {}
        judge_names = sorted({j for _, record in pairs for j in _judge_scores(record, key)})
        for judge in judge_names:
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
            per_judge[judge] = stats
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
    return {"tasks": report, "unmatched_ratings": len(unmatched), "unmatched_examples": unmatched[:5]}
