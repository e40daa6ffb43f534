"""The editable fields of a row, their controls, and the check a save goes through.

The kinds tell the browser which control to draw; the check reuses the benchmark's own validation
(schema, then the rulebook of rescue.data.rules at its own severities) on the sample as it would stand
after the save. A save is refused for an error in a field it changes or for an error it brings in; an
error left in the model's draft elsewhere in the row never blocks an unrelated correction (verify does).
Warnings (rules a person may knowingly override) never block a save; verify waits until each is fixed or
acknowledged.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from rescue.data.errors import DataIssue
from rescue.data.models import Row
from rescue.errors import FieldError as FieldError, FieldProblem
from rescue.data.rules import Breach, Cast, cast_of, check_row
from rescue.data.taxonomy import UTTERANCE_TYPES, Label, relation_taxonomy, strategy_taxonomy
from rescue.data.validation import validate_records
from rescue.review.project import Segment, raw_record
from rescue.review.shapes import CheckView, FieldView, LabelView, RowValues


@dataclass(frozen=True)
class FieldSpec:
    """One editable field of a row: its name and title, the control it gets, its dimension and labels."""

    name: str
    title: str
    kind: str  # entity | entities | label | text | longtext | rows | list
    dimension: str
    labels: str = ""  # which label set: relation | strategy | utterance
    item: tuple[tuple[str, str], ...] = ()  # for lists: (key, kind) of each entry's parts


_PERSON_CUE = (("person", "entity"), ("description", "text"))

# Grouped by the six dimensions of the annotation (the paper's §3): who speaks to whom, what was said,
# individual cues, relational stance, the therapist's support, and the group's relation pattern.
_SPEAKERS, _SAID, _CUES, _STANCE, _SUPPORT, _PATTERN = (
    "Speakers and targets", "What was said", "Individual cues", "Relational stance", "Support strategy",
    "Relation pattern",
)
FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("primary_speaker", "Speaker", "entity", _SPEAKERS),
    FieldSpec("target", "Target", "entities", _SPEAKERS),
    FieldSpec("dialogue_cleaned", "Dialogue", "longtext", _SAID),
    FieldSpec("utterance_type", "Utterance type", "label", _SAID, labels="utterance"),
    FieldSpec(
        "background_dialogue", "Background dialogue", "list", _SAID,
        item=(("speaker", "entity"), ("target", "entities"), ("content", "text")),
    ),
    FieldSpec("tone_of_voice", "Tone of voice", "text", _CUES),
    FieldSpec("body_posture", "Body posture", "list", _CUES, item=_PERSON_CUE),
    FieldSpec("facial_expressions", "Facial expressions", "list", _CUES, item=_PERSON_CUE),
    FieldSpec("self_directed_behavior", "Self-directed behaviour", "list", _CUES, item=_PERSON_CUE),
    FieldSpec(
        "internal_emotion", "Emotions", "list", _CUES,
        item=(("person", "entity"), ("emotion_description", "text"), ("intensity", "intensity")),
    ),
    FieldSpec(
        "interaction_behavior", "Interaction behaviour", "list", _STANCE,
        item=(("initiator", "entity"), ("target", "entities"), ("description", "text")),
    ),
    FieldSpec(
        "viewpoints_attitudes", "Viewpoints", "list", _STANCE,
        item=(("source", "entity"), ("target", "entity"), ("viewpoint", "text"), ("attitude", "text")),
    ),
    FieldSpec(
        "support_strategy", "Support strategies", "list", _SUPPORT,
        item=(("provider", "entity"), ("strategy_type", "strategy"), ("target", "entities"), ("strategy_content", "text")),
    ),
    FieldSpec("relation_pattern", "Relation pattern", "label", _PATTERN, labels="relation"),
    FieldSpec("relation_pattern_reason", "Pattern reason", "longtext", _PATTERN),
    FieldSpec("relation_pattern_evidence_rows", "Pattern evidence rows", "rows", _PATTERN),
    FieldSpec("relation_cycle_state", "Cycle state", "label", _PATTERN, labels="relation"),
    FieldSpec("relation_cycle_reason", "Cycle reason", "longtext", _PATTERN),
    FieldSpec("relation_cycle_evidence_rows", "Cycle evidence rows", "rows", _PATTERN),
)
FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in FIELDS)
SPECS = {f.name: f for f in FIELDS}
# A row's span: editable (moving a boundary) but not a field one accepts, rates or compares with the draft.
TIME_FIELDS: tuple[str, ...] = ("start_time", "end_time")
# Nullable in the release: an empty label means "no dominant pattern", which the release writes as null.
NULLABLE = frozenset(
    {"relation_pattern", "relation_pattern_reason", "relation_pattern_evidence_rows", "relation_cycle_state",
     "relation_cycle_reason", "relation_cycle_evidence_rows"}
)
# The fields a row of the release may leave out (the release format gives each a default: a draft may lack the
# relation fields). Only these can be removed from a row (an undo giving a row back the keys it had).
OPTIONAL = frozenset(name for name in FIELD_NAMES if not Row.model_fields[name].is_required())

DISCARD_REASONS: dict[str, str] = {
    "subtitle_errors": "Severe subtitle errors",
    "speaker_mismatch": "Unresolved speaker mismatch",
    "video_evidence": "Missing or ambiguous video evidence",
    "incomplete_context": "Incomplete context",
    "relational_information": "Insufficient relational information",
    "other": "Other (explain in the comment)",
}


def _labels(labels: tuple[Label, ...]) -> list[LabelView]:
    return [{"name": label.name, "definition": label.definition, "use_when": list(label.use_when),
             "do_not_use_when": list(label.do_not_use_when)} for label in labels]


def label_sets(scenario: str) -> dict[str, list[LabelView]]:
    """The label sets of a scenario, with their definitions, for the browser."""
    sc: Any = scenario if scenario in ("couple", "family") else "couple"
    return {
        "relation": _labels(relation_taxonomy(sc).labels),
        "strategy": _labels(strategy_taxonomy(sc).labels),
        "utterance": _labels(UTTERANCE_TYPES),
    }


def field_schema() -> list[FieldView]:
    """The editable fields as JSON, for the editor's controls."""
    return [
        {"name": f.name, "title": f.title, "kind": f.kind, "dimension": f.dimension, "labels": f.labels,
         "item": [{"key": k, "kind": kind} for k, kind in f.item], "nullable": f.name in NULLABLE,
         "optional": f.name in OPTIONAL}
        for f in FIELDS
    ]


def _root(field_path: str) -> str:
    for i, ch in enumerate(field_path):
        if ch in ".[":
            return field_path[:i]
    return field_path


def sample_with(segment: Segment, rows: list[RowValues]) -> dict[str, Any]:
    """The segment's sample with ``rows`` in place of its own."""
    data = copy.copy(segment.data)
    data["rows"] = rows
    return data


def cast(segment: Segment) -> Cast:
    """The cast a segment's rows are checked against."""
    return cast_of(segment.scenario if segment.scenario in ("couple", "family") else "couple",  # type: ignore[arg-type]
                   segment.participants)


def row_checks(segment: Segment, values: RowValues) -> list[Breach]:
    """Every rule of the rulebook that one row of the segment breaks."""
    return check_row(values, cast(segment))


def unacknowledged(segment: Segment, values: RowValues, acknowledged: list[str]) -> list[Breach]:
    """The warnings of a row nobody has acknowledged yet."""
    return [b for b in row_checks(segment, values) if b.severity == "warning" and b.key not in acknowledged]


def checks_payload(segment: Segment, values: RowValues, acknowledged: list[str]) -> list[CheckView]:
    """A row's breaches of the rulebook as the page shows them, each saying whether it was acknowledged."""
    return [{**b.as_dict(), "acknowledged": b.key in acknowledged} for b in row_checks(segment, values)]


def sample_issues(segment: Segment, rows: list[RowValues]) -> list[DataIssue]:
    """Errors the benchmark's validation finds in the segment with these rows, every rule of the rulebook
    at its own severity (mis-encoded text is only ever a warning, so the encoding scan is skipped)."""
    record = raw_record(sample_with(segment, rows), "segment", 1)
    record.ascii_only = True
    report = validate_records([record], strict=True)
    return [issue for issue in report.issues if issue.severity == "error"]


def _stub(row: RowValues, position: int) -> RowValues:
    """A stand-in for a row a save does not touch: only what the checks of another row depend on (its number
    and times), so a save validates one row instead of the whole segment."""
    stub: RowValues = {"row_index": row.get("row_index", position), "primary_speaker": "Therapist"}
    for name in ("start_time", "end_time"):
        value = row.get(name)
        stub[name] = value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
    return stub


MAX_LIST_ENTRIES = 200  # a row's list (cues, viewpoints ...) never holds more than a few dozen


def _oversized(value: Any) -> str:
    """Why a field's value is larger than the release format needs, or ""."""
    from rescue.review.security import MAX_TEXT_CHARS

    if isinstance(value, str):
        return f"longer than {MAX_TEXT_CHARS:,} characters" if len(value) > MAX_TEXT_CHARS else ""
    if isinstance(value, list):
        if len(value) > MAX_LIST_ENTRIES:
            return f"more than {MAX_LIST_ENTRIES} entries"
        return next((p for v in value if (p := _oversized(v))), "")
    if isinstance(value, dict):
        return next((p for v in [*value, *value.values()] if (p := _oversized(v))), "")
    return ""


def _removal_problems(fields: RowValues, remove: list[str]) -> list[FieldProblem]:
    """Why ``remove`` (names of fields to take out of the row) cannot be applied with ``fields``, or []. Whether
    the row may lack a field is the release format's own check (:func:`check_edit` runs it); this refuses what
    is no removal at all."""
    if len(remove) > len(SPECS):
        return [{"field": "remove", "message": f"names {len(remove):,} fields; a row has {len(SPECS)}"}]
    problems: list[FieldProblem] = []
    for position, name in enumerate(remove):
        if name not in SPECS:
            problems.append({"field": name, "message": "not an editable field"})
        elif name in remove[:position]:
            problems.append({"field": name, "message": "named twice in remove"})
        elif name in fields:
            problems.append({"field": name, "message": "both saved and removed"})
    return problems


def check_edit(segment: Segment, current: RowValues, row_index: int, fields: RowValues,
               rows: list[RowValues] | None = None, remove: list[str] | None = None) -> RowValues:
    """Row ``row_index`` (now ``current``) after applying ``fields`` and taking the fields named in ``remove``
    out of it; raises FieldError naming each bad field. ``rows`` are the copy's rows when it was re-cut (default:
    the draft's). A field the release requires (the speaker) is refused by the release's own validation."""
    remove = remove or []
    unknown: list[FieldProblem] = [{"field": name, "message": "not an editable field"} for name in fields
                                   if name not in SPECS and name not in TIME_FIELDS]
    refused = unknown or _removal_problems(fields, remove)
    if refused:
        raise FieldError(refused)
    oversized: list[FieldProblem] = [{"field": name, "message": problem} for name, value in fields.items()
                 if (problem := _oversized(value))]
    if oversized:
        raise FieldError(oversized)
    for emotion in fields.get("internal_emotion") or []:
        # Validation accepts any number; the control offers whole points 0-10 as the paper's scale does.
        value = emotion.get("intensity") if isinstance(emotion, dict) else None
        if isinstance(value, float) and value.is_integer():
            emotion["intensity"] = int(value)
    updated = {name: value for name, value in {**current, **fields}.items() if name not in remove}
    probe = [updated if i == row_index else _stub(row, i) for i, row in enumerate(rows or segment.rows, start=1)]
    before = {b.key for b in row_checks(segment, current) if b.severity == "error"}
    problems: list[FieldProblem] = []
    for issue in sample_issues(segment, probe):
        brought_in = bool(issue.rule) and f"{issue.rule}@{issue.field}" not in before
        if issue.row == row_index and (_root(issue.field) in fields or _root(issue.field) in remove or brought_in):
            found: FieldProblem = {"field": issue.field, "message": issue.message}
            if issue.rule:
                found["rule"] = issue.rule
            problems.append(found)
    if problems:
        raise FieldError(problems)
    return updated
