"""Agreement between annotators per field, and how often they kept the model's draft.

Units are the draft's rows; an annotator's ratings count once they verified the segment. A copy whose rows
were re-cut (split, merged, inserted, deleted) rates each draft row through its row that overlaps that draft
row longest in time (:func:`rescue.review.cuts.align`); a draft row none of its rows overlaps (deleted) is
not rated by that annotator, and rows the draft never had (inserted speech) are not units. Krippendorff's alpha is
nominal for labels, speakers and targets (a set of targets is one category) and interval for intensity;
percent agreement is the share of rows rated at least twice on which every rating is the same.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from rescue.metrics.agreement import alpha
from rescue.review.crud import copy_cut, copy_values
from rescue.review.cuts import align
from rescue.review.models import FINAL
from rescue.review.progress import project_progress
from rescue.review.project import Project

Getter = Callable[[dict[str, Any]], Any]


def _speaker_emotion(row: dict[str, Any]) -> dict[str, Any] | None:
    speaker = str(row.get("primary_speaker", "")).strip()
    for emotion in row.get("internal_emotion") or []:
        if isinstance(emotion, dict) and str(emotion.get("person", "")).strip() == speaker:
            return emotion
    return None


def _names(value: Any) -> str:
    return "|".join(sorted(str(v) for v in value)) if isinstance(value, list) else str(value or "")


def _label(value: Any) -> str:
    return str(value).strip() if value else "(none)"


def _intensity(row: dict[str, Any]) -> float | None:
    emotion = _speaker_emotion(row)
    value = emotion.get("intensity") if emotion else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# field -> (level, value of a row); a value of None means "not rated" (only intensity has those).
MEASURES: dict[str, tuple[str, Getter]] = {
    "primary_speaker": ("nominal", lambda r: str(r.get("primary_speaker", "")).strip()),
    "target": ("nominal", lambda r: _names(r.get("target"))),
    "utterance_type": ("nominal", lambda r: _label(r.get("utterance_type"))),
    "emotion": ("nominal", lambda r: _label((_speaker_emotion(r) or {}).get("emotion_description"))),
    "intensity": ("interval", _intensity),
    "relation_pattern": ("nominal", lambda r: _label(r.get("relation_pattern"))),
    "relation_cycle_state": ("nominal", lambda r: _label(r.get("relation_cycle_state"))),
    "strategy": ("nominal", lambda r: _names([s.get("strategy_type") for s in r.get("support_strategy") or []
                                              if isinstance(s, dict)])),
    "strategy_target": ("nominal", lambda r: _names(sorted({t for s in r.get("support_strategy") or []
                                                           if isinstance(s, dict) for t in s.get("target") or []}))),
}


def compute_agreement(db: Session, project: Project) -> dict[str, Any]:
    # unit -> annotator -> row values
    units: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    drafts: dict[tuple[str, int], dict[str, Any]] = {}
    annotators: set[str] = set()
    for sample_id, p in sorted(project_progress(db, project).items()):
        segment = project.segments[sample_id]
        for name in p.annotators:
            if p.states.get(name, {}).get("status") != "verified" or name == FINAL:
                continue
            annotators.add(name)
            rows = copy_values(db, segment, name)
            matched = align(segment.rows, rows) if copy_cut(db, sample_id, name) else range(len(rows))
            for index, position in enumerate(matched, start=1):
                if position is None:
                    continue
                key = (sample_id, index)
                units.setdefault(key, {})[name] = rows[position]
                drafts[key] = segment.rows[index - 1]
    raters = sorted(annotators)
    keys = sorted(units)
    fields = []
    acceptance = []
    for field_name, (level, get) in MEASURES.items():
        values = {k: {r: get(row) for r, row in units[k].items()} for k in keys}
        multi = [k for k in keys if sum(v is not None for v in values[k].values()) >= 2]
        if level == "nominal":
            codes: dict[Any, int] = {}
            matrix = [[None if values[k].get(r) is None else codes.setdefault(values[k][r], len(codes)) for k in keys]
                      for r in raters]
        else:
            matrix = [[values[k].get(r) for k in keys] for r in raters]
        same = sum(1 for k in multi if len({repr(v) for v in values[k].values() if v is not None}) == 1)
        fields.append({
            "field": field_name,
            "level": level,
            "units": len(multi),
            "alpha": alpha(matrix, level) if multi else None,  # type: ignore[arg-type]
            "percent_agreement": same / len(multi) if multi else None,
        })
        rated = [(k, r) for k in keys for r in raters if values[k].get(r) is not None]
        kept = sum(1 for k, r in rated if get(drafts[k]) == values[k][r])
        acceptance.append({"field": field_name, "ratings": len(rated), "unchanged": kept,
                           "acceptance_rate": kept / len(rated) if rated else None})
    return {"annotators": raters, "rows": len(keys), "fields": fields, "draft_acceptance": acceptance}


def agreement_csv(result: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["field", "level", "units", "alpha", "percent_agreement", "draft_ratings", "draft_unchanged",
                     "draft_acceptance_rate"])
    accepted = {a["field"]: a for a in result["draft_acceptance"]}
    for f in result["fields"]:
        a = accepted[f["field"]]
        writer.writerow([f["field"], f["level"], f["units"], _num(f["alpha"]), _num(f["percent_agreement"]),
                         a["ratings"], a["unchanged"], _num(a["acceptance_rate"])])
    return out.getvalue()


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"
