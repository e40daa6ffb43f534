"""Agreement between annotators per field, and how often they kept the model's draft.

Units are the draft's rows; an annotator's ratings count once they verified the segment. A copy whose rows
were re-cut (split, merged, inserted, deleted) rates each draft row through its row that overlaps that draft
row longest in time (:func:`rescue.review.cuts.align`); a draft row none of its rows overlaps (deleted) is
not rated by that annotator, and rows the draft never had (inserted speech) are not units. Krippendorff's alpha is
nominal for labels, speakers and targets (a set of targets is one category) and interval for intensity;
percent agreement is the share of rows rated at least twice on which every rating is the same. Free-text
fields (tone, posture, face, viewpoints...) get exact agreement after normalisation and a token-overlap score
(rescue.metrics.agreement.text_agreement). Time per row per annotator comes from the audit log.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue.metrics.agreement import alpha, text_agreement, text_tokens
from rescue.review.crud import copy_cut, copy_values
from rescue.review.cuts import align
from rescue.review.models import FINAL, AuditEntry, User
from rescue.review.progress import project_progress
from rescue.review.project import Project
from rescue.review.shapes import AgreementResult, DraftAcceptance, FieldAgreement, LeadTime, RowValues, TextFieldAgreement

Getter = Callable[[RowValues], Any]


def _speaker_emotion(row: RowValues) -> dict[str, Any] | None:
    speaker = str(row.get("primary_speaker", "")).strip()
    for emotion in row.get("internal_emotion") or []:
        if isinstance(emotion, dict) and str(emotion.get("person", "")).strip() == speaker:
            return emotion
    return None


def _names(value: Any) -> str:
    return "|".join(sorted(str(v) for v in value)) if isinstance(value, list) else str(value or "")


def _label(value: Any) -> str:
    return str(value).strip() if value else "(none)"


def _intensity(row: RowValues) -> float | None:
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


def _entries(row: RowValues, field: str, parts: Callable[[dict[str, Any]], str]) -> str:
    """A list field as one text, entries in a stable order (people annotate them in any order)."""
    items = [parts(e) for e in row.get(field) or [] if isinstance(e, dict)]
    return "\n".join(sorted(items))


def _who(entry: dict[str, Any], key: str) -> str:
    value = entry.get(key)
    return ", ".join(sorted(map(str, value))) if isinstance(value, list) else str(value or "")


def _person_cue(field: str) -> Getter:
    return lambda r: _entries(r, field, lambda e: f"{e.get('person', '')}: {e.get('description', '')}")


# field -> the text of a row. Names inside a text count as words, so an entry about another person differs.
TEXT_MEASURES: dict[str, Getter] = {
    "dialogue_cleaned": lambda r: str(r.get("dialogue_cleaned") or ""),
    "tone_of_voice": lambda r: str(r.get("tone_of_voice") or ""),
    "body_posture": _person_cue("body_posture"),
    "facial_expressions": _person_cue("facial_expressions"),
    "self_directed_behavior": _person_cue("self_directed_behavior"),
    "interaction_behavior": lambda r: _entries(r, "interaction_behavior", lambda e: (
        f"{e.get('initiator', '')} to {_who(e, 'target')}: {e.get('description', '')}")),
    "emotion_text": lambda r: _entries(r, "internal_emotion", lambda e: (
        f"{e.get('person', '')}: {e.get('emotion_description', '')}")),
    "viewpoints_attitudes": lambda r: _entries(r, "viewpoints_attitudes", lambda e: (
        f"{e.get('source', '')} on {e.get('target', '')}: {e.get('viewpoint', '')}; {e.get('attitude', '')}")),
    "strategy_content": lambda r: _entries(r, "support_strategy", lambda e: str(e.get("strategy_content") or "")),
    "background_dialogue": lambda r: _entries(r, "background_dialogue", lambda e: (
        f"{e.get('speaker', '')}: {e.get('content', '')}")),
    "relation_pattern_reason": lambda r: str(r.get("relation_pattern_reason") or ""),
    "relation_cycle_reason": lambda r: str(r.get("relation_cycle_reason") or ""),
}

IDLE_SECONDS = 300.0  # a longer gap between two of a person's actions is a break, not work on a row


def lead_times(db: Session, project: Project) -> list[LeadTime]:
    """Time per row per person, from the audit log (Label Studio's "lead time").

    A person's audited actions (login, edits, accepts, acknowledgements, cuts, verify, discard, comments) are
    taken in time order; the gap before each action on a segment is time spent on that segment, unless it is
    longer than IDLE_SECONDS (a break). ``seconds_per_row`` is that time over the rows of the segments worked
    on (rows verified without an edit cost time too); ``median_row_seconds`` is the median gap before an action
    on one row (how long a row that needed work took)."""
    roles: dict[str, str] = {name: role for name, role in db.execute(select(User.name, User.role))}
    actions = db.execute(select(AuditEntry.user, AuditEntry.at, AuditEntry.segment_id, AuditEntry.row_index)
                         .order_by(AuditEntry.id))
    last: dict[str, datetime] = {}
    spent: dict[str, dict[str, float]] = {}  # person -> segment -> seconds
    per_row: dict[str, dict[tuple[str, int], float]] = {}
    for user, at, segment_id, row_index in actions:
        if user not in roles:  # the command line ("cli") and accounts made by tests are not people at work
            continue
        when = datetime.fromisoformat(at)
        before, last[user] = last.get(user), when
        if before is None or not segment_id or segment_id not in project.segments:
            continue
        gap = (when - before).total_seconds()
        if not 0 <= gap <= IDLE_SECONDS:
            continue
        mine = spent.setdefault(user, {})
        mine[segment_id] = mine.get(segment_id, 0.0) + gap
        if row_index is not None:
            times = per_row.setdefault(user, {})
            times[(segment_id, row_index)] = times.get((segment_id, row_index), 0.0) + gap
    out: list[LeadTime] = []
    for user in sorted(spent):
        segments = spent[user]
        rows = sum(len(project.segments[sid].rows) for sid in segments)
        seconds = sum(segments.values())
        row_times = list(per_row.get(user, {}).values())
        out.append({"annotator": user, "role": roles[user], "segments": len(segments), "rows": rows,
                    "active_seconds": round(seconds, 3), "seconds_per_row": round(seconds / rows, 3) if rows else None,
                    "rows_worked": len(row_times),
                    "median_row_seconds": round(statistics.median(row_times), 3) if row_times else None})
    return out


def compute_agreement(db: Session, project: Project) -> AgreementResult:
    # unit -> annotator -> row values
    """Agreement between annotators per field (Krippendorff's alpha, percent agreement) and the model draft's
    acceptance."""
    units: dict[tuple[str, int], dict[str, RowValues]] = {}
    drafts: dict[tuple[str, int], RowValues] = {}
    annotators: set[str] = set()
    for sample_id, p in sorted(project_progress(db, project).items()):
        segment = project.segments[sample_id]
        for name in p.annotators:
            if p.copy_status(name) != "verified" or name == FINAL:
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
    fields: list[FieldAgreement] = []
    acceptance: list[DraftAcceptance] = []
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
    texts: list[TextFieldAgreement] = []
    for field_name, get_text in TEXT_MEASURES.items():
        rated_texts = {k: {r: get_text(row) for r, row in units[k].items()} for k in keys}
        measured = text_agreement(list(v.values()) for v in rated_texts.values())
        ratings = [(k, text) for k in keys for text in rated_texts[k].values()]
        kept = sum(1 for k, text in ratings if text_tokens(text) == text_tokens(get_text(drafts[k])))
        texts.append({"field": field_name, "level": "text", **measured, "ratings": len(ratings), "unchanged": kept,
                      "acceptance_rate": kept / len(ratings) if ratings else None})
    return {"annotators": raters, "rows": len(keys), "fields": fields, "draft_acceptance": acceptance,
            "text_fields": texts, "time": lead_times(db, project), "idle_seconds": IDLE_SECONDS}


def agreement_csv(result: AgreementResult) -> str:
    """The agreement result as CSV, one line per field."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["field", "level", "units", "alpha", "percent_agreement", "draft_ratings", "draft_unchanged",
                     "draft_acceptance_rate", "token_overlap"])
    accepted = {a["field"]: a for a in result["draft_acceptance"]}
    for f in result["fields"]:
        a = accepted[f["field"]]
        writer.writerow([f["field"], f["level"], f["units"], _num(f["alpha"]), _num(f["percent_agreement"]),
                         a["ratings"], a["unchanged"], _num(a["acceptance_rate"]), ""])
    for t in result["text_fields"]:  # percent_agreement: exact after normalisation
        writer.writerow([t["field"], t["level"], t["units"], "", _num(t["exact"]), t["ratings"], t["unchanged"],
                         _num(t["acceptance_rate"]), _num(t["token_overlap"])])
    return out.getvalue()


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"
