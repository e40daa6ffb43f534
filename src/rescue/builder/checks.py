"""Checks of a model's draft against the paper's rules (§7.2-7.3).

:func:`check_rows` reads one answer and returns the rows as the release holds them plus every problem.
Nothing is dropped and nothing is corrected in silence: a value the release format cannot hold (an
unknown label or name, a reversed time) is kept verbatim in the row's ``draft_invalid`` and in a problem,
and the field gets the release's empty value (or the named stand-in) so the draft still loads. All other
problems leave the value as the model gave it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict, cast

from pydantic import TypeAdapter, ValidationError

from rescue.builder.manifest import Problem
from rescue.builder.prompts import RELATION_KEYS, ROW_KEYS
from rescue.data.answer_json import FINITE, UnreadableJSON, find_json, unfence
from rescue.data.models import GROUP_LABELS, THERAPIST, Row, RowValues, Scenario
from rescue.data.rules import Cast, cast_of, check_row, severity_in
from rescue.data.taxonomy import (
    INTENSITY_SCALE,
    UTTERANCE_TYPE_NAMES,
    relation_taxonomy,
    strategy_taxonomy,
)
from rescue.media import Cue

# Models round times to hundredths; subtitle times are exact to the millisecond.
TIME_TOLERANCE = 0.05
_WORD = re.compile(r"[\w']+")
_EMPTY: RowValues = {key: [] for key in ROW_KEYS}
_EMPTY.update(start_time=0.0, end_time=0.0, primary_speaker="", dialogue_cleaned="", utterance_type="",
              tone_of_voice="")
_ADAPTERS = {key: TypeAdapter(cast(Any, Row.model_fields[key].annotation)) for key in ROW_KEYS}


def words(text: str) -> list[str]:
    """The lower-case words of ``text`` (typographic apostrophes made plain)."""
    return _WORD.findall(text.lower().replace("’", "'"))


def _is_subsequence(needle: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(word == other for other in it) for word in needle)


def parse_draft(text: str | None) -> tuple[Any, list[Problem]]:
    """The JSON value of a draft annotation answer (``None`` when there is none) and what breaks the output rules. Read as
    every answer is (:func:`rescue.data.answer_json.find_json`), refusing non-finite numbers: NaN, Infinity
    and 1e999 would pass the schema's float fields and reach the release as non-finite times."""
    if not text or not text.strip():
        return None, [Problem(message="the answer is empty")]
    try:
        found = find_json(text, lambda value: True, lambda value: True, decoder=FINITE, inner="outermost")
    except UnreadableJSON as exc:
        found_fenced = unfence(text)[1]
        problems = [Problem(message="the JSON is wrapped in a code fence")] if found_fenced else []
        reason = "is nested too deeply to read" if exc.nested else f"cannot be read ({exc.detail})"
        return None, [*problems, Problem(message=f"the answer's JSON {reason}")]
    problems = [Problem(message="the JSON is wrapped in a code fence")] if found.fenced else []
    if found.found:
        around = [Problem(message="text around the JSON object")] if found.surrounded else []
        return found.value, [*problems, *around]
    error = found.error
    detail = f" ({error.msg} at char {error.pos})" if error is not None else ""
    return None, [*problems, Problem(message=f"the answer is not valid JSON{detail}")]


class _Row:
    """One answer row being checked: the release row built from it, its problems, what was set aside."""

    def __init__(self, position: int, raw: dict[str, Any], problems: list[Problem]):
        self.position = position
        self.raw = raw
        self.problems = problems
        self.out: RowValues = {}
        self.invalid: dict[str, Any] = {}

    def problem(self, field: str | None, message: str) -> None:
        self.problems.append(Problem(row_index=self.position, field=field, message=message))

    def set_aside(self, field: str, message: str, replacement: Any) -> None:
        self.invalid.setdefault(field, self.out.get(field, self.raw.get(field)))
        self.problem(field, message)
        self.out[field] = replacement


def _check_schema(row: _Row) -> None:
    for key in ROW_KEYS:
        if key not in row.raw:
            row.problem(key, "missing key")
            row.out[key] = _EMPTY[key] if not isinstance(_EMPTY[key], list) else []
            continue
        value = row.raw[key]
        if value is None:
            row.set_aside(key, "null is not allowed (use [] or \"\")", _empty(key))
            continue
        try:
            _ADAPTERS[key].validate_python(value, strict=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            row.set_aside(key, f"not the schema's type{f' at {where}' if where else ''}: {first['msg']}", _empty(key))
            continue
        row.out[key] = value
    for key in row.raw:
        if key not in ROW_KEYS:
            row.invalid[key] = row.raw[key]
            row.problem(key, "unknown key (not one of the 15 row keys)")


def _empty(key: str) -> Any:
    value = _EMPTY[key]
    return [] if isinstance(value, list) else value


def _check_names(row: _Row, scenario: Scenario, participants: Sequence[str], fallback_speaker: str) -> None:
    group = GROUP_LABELS[scenario]
    people = set(participants) | {THERAPIST}
    entities = people | {group}
    closed = f"not one of {', '.join([*participants, THERAPIST, group])}"
    speaker = row.out["primary_speaker"]
    if speaker not in people:
        row.set_aside("primary_speaker", f"{speaker!r} is {closed if speaker not in entities else 'a group label'}; "
                      f"shown as {fallback_speaker!r} until reviewed", fallback_speaker)
        speaker = fallback_speaker
    target = row.out["target"]
    unknown = [n for n in target if n not in entities]
    if unknown:
        row.set_aside("target", f"{', '.join(map(repr, unknown))} {closed}", [n for n in target if n in entities])
    for i, said in enumerate(row.out["background_dialogue"]):
        names = [said.get("speaker"), *said.get("target", [])]
        if any(n not in entities for n in names) or not said.get("target"):
            row.set_aside("background_dialogue", f"[{i}]: a speaker or target {closed}, or no target",
                          [s for s in row.out["background_dialogue"]
                           if s.get("speaker") in entities and s.get("target")
                           and all(n in entities for n in s["target"])])
            break
    emotions = row.out["internal_emotion"]
    low, high = INTENSITY_SCALE
    if any(e.get("person") not in people for e in emotions) or any(
        e.get("intensity") is not None and not low <= e["intensity"] <= high for e in emotions
    ):
        row.set_aside("internal_emotion", f"a person {closed} or an intensity outside {low}-{high}",
                      [e for e in emotions if e.get("person") in people
                       and (e.get("intensity") is None or low <= e["intensity"] <= high)])
    views = row.out["viewpoints_attitudes"]
    if any(v.get("source") not in entities or v.get("target") not in entities for v in views):
        row.set_aside("viewpoints_attitudes", f"a source or target {closed}",
                      [v for v in views if v.get("source") in entities and v.get("target") in entities])


def _check_labels(row: _Row, scenario: Scenario) -> None:
    utterance = row.out["utterance_type"]
    if utterance and utterance not in UTTERANCE_TYPE_NAMES:
        row.set_aside("utterance_type", f"{utterance!r} is not an utterance type", "")
    moves = row.out["support_strategy"]
    labels = strategy_taxonomy(scenario)
    if any(m.get("strategy_type") not in labels.names for m in moves):
        bad = [m.get("strategy_type") for m in moves if m.get("strategy_type") not in labels.names]
        row.set_aside("support_strategy", f"{', '.join(map(repr, bad))} not a {scenario} support strategy",
                      [m for m in moves if m.get("strategy_type") in labels.names])


def _check_rules(row: _Row, cast: Cast) -> None:
    """The rulebook on what is left once the values the release cannot hold are set aside."""
    for breach in check_row(row.out, cast):
        row.problem(breach.field, breach.message)


def _covering_cue(cues: Sequence[Cue], time: float) -> Cue | None:
    return next((c for c in cues if c.start - TIME_TOLERANCE <= time <= c.end + TIME_TOLERANCE), None)


def _check_times(row: _Row, cues: Sequence[Cue], clip_duration: float) -> None:
    start, end = row.out["start_time"], row.out["end_time"]
    if end <= start:
        if end < start:
            row.set_aside("end_time", f"end_time {end} is before start_time {start}; shown as {start}", start)
        else:
            row.problem("end_time", f"end_time {end} is not after start_time {start}")
    if start < 0:
        row.set_aside("start_time", f"negative time {start}", 0.0)
    if end > clip_duration + TIME_TOLERANCE:
        row.problem("end_time", f"{end} is past the clip's end ({clip_duration:.2f} s)")
    for name, value in (("start_time", start), ("end_time", end)):
        if cues and _covering_cue(cues, value) is None and value <= clip_duration + TIME_TOLERANCE:
            row.problem(name, f"{value} lies outside every subtitle line (rows stay inside their lines)")


_PATH_PART = re.compile(r"\[(\d+)\]|([A-Za-z_]\w*)")


def _release_errors(row: RowValues, cast: Cast) -> list[tuple[str, str]]:
    """(field path, message) of every breach plain ``rescue validate`` calls an error: what the release cannot
    hold, from the rulebook itself, so the draft and the release never disagree."""
    return [(b.field, b.message) for b in check_row(row, cast) if severity_in(b.rule, False) == "error"]


def _without(value: Any, path: list[int | str]) -> Any:
    """A copy of ``value`` without the list element at the last index of ``path``: the bad name itself when
    the path ends in a list (``target[1]``), else the item holding the bad value (``internal_emotion[0]``)."""
    cut = max(i for i, part in enumerate(path) if isinstance(part, int))
    copy = json.loads(json.dumps(value))
    holder = copy
    for part in path[:cut]:
        holder = holder[part]
    del holder[path[cut]]
    return copy


def _hold_in_release(row: _Row, cast: Cast) -> None:
    """Every value anywhere in the row (nested ones too) that the release cannot hold moves to
    ``draft_invalid``, the field keeping everything else, so ``rescue validate``, ``stats`` and ``tasks``
    accept the draft."""
    for _ in range(256):  # each pass removes at least one value; a row holds far fewer
        errors = _release_errors(row.out, cast)
        if not errors:
            return
        where, message = errors[0]
        path: list[int | str] = [int(i) if i else name for i, name in _PATH_PART.findall(where)]
        field = str(path[0])
        if field not in ROW_KEYS:  # pragma: no cover - the probe carries only the row's own keys
            return
        nested = any(isinstance(part, int) for part in path)
        replacement = _without({field: row.out[field]}, path)[field] if nested else _empty(field)
        if replacement == row.out[field]:  # pragma: no cover - nothing left to move: the problem says the rest
            return
        row.invalid.setdefault(field, row.out[field])
        row.problem(where, f"{message} (kept in draft_invalid)")
        row.out[field] = replacement


def check_rows(value: Any, cues: Sequence[Cue], *, scenario: Scenario, participants: Sequence[str],
               clip_duration: float) -> tuple[list[RowValues], list[Problem]]:
    """Rows (release form, in time order, numbered from 1) and the problems of one parsed answer."""
    problems: list[Problem] = []
    if isinstance(value, dict) and isinstance(value.get("rows"), list):
        raw_rows = value["rows"]
        extra = sorted(set(value) - {"rows"})
        if extra:
            problems.append(Problem(message=f"unknown top-level key(s) {', '.join(extra)}: only rows is allowed"))
    else:
        problems.append(Problem(message='the answer is not a JSON object {"rows": [...]}'))
        raw_rows = value if isinstance(value, list) else []
    rows: list[RowValues] = []
    cast = cast_of(scenario, participants)
    for number, raw in enumerate(raw_rows, start=1):
        if not isinstance(raw, dict):
            problems.append(Problem(message=f"item {number} of rows is not a JSON object: {json.dumps(raw)[:80]}"))
            continue
        row = _Row(len(rows) + 1, raw, problems)
        _check_schema(row)
        start_cue = _covering_cue(cues, row.out["start_time"]) if isinstance(row.out["start_time"], float | int) else None
        fallback = start_cue.speakers[0] if start_cue and len(start_cue.speakers) == 1 else THERAPIST
        _check_names(row, scenario, participants, fallback)
        _check_labels(row, scenario)
        _hold_in_release(row, cast)
        _check_rules(row, cast)
        _check_times(row, cues, clip_duration)
        if row.invalid:
            row.out["draft_invalid"] = row.invalid
        rows.append(row.out)
    if not rows:
        problems.append(Problem(message="no rows"))
    problems += _coverage(rows, cues)
    order = sorted(range(len(rows)), key=lambda i: rows[i]["start_time"])
    if order != list(range(len(rows))):
        problems.append(Problem(field="start_time", message="rows were not in time order; listed by start_time"))
    renumber = {old + 1: new for new, old in enumerate(order, start=1)}
    for problem in problems:
        if problem.row_index is not None:
            problem.row_index = renumber.get(problem.row_index, problem.row_index)
    ordered = [rows[i] for i in order]
    for index, record in enumerate(ordered, start=1):
        record["row_index"] = index
    problems += faithfulness(ordered, cues)
    return ordered, problems


# Values that stand for "nothing observed": the paper's output rules forbid them (§7.3: no null/None/N/A);
# an empty list or "" says nothing was observed.
PLACEHOLDERS = frozenset({"n/a", "na", "none", "null", "nil", "unknown", "not applicable", "not available",
                          "unclear", "-", "--", "—", "?", "...", "…", "tbd", "nothing"})
_TEXTS = {"tone_of_voice": None, "dialogue_cleaned": None, "body_posture": "description",
          "facial_expressions": "description", "self_directed_behavior": "description",
          "interaction_behavior": "description", "internal_emotion": "emotion_description",
          "viewpoints_attitudes": "viewpoint", "background_dialogue": "content",
          "support_strategy": "strategy_content"}


def _spanned(row: RowValues, cues: Sequence[Cue]) -> list[Cue]:
    """The subtitle lines a row's time span overlaps by more than the timing tolerance (a line that only
    touches the row's edge is a neighbour's)."""
    start, end = row["start_time"], row["end_time"]
    if not isinstance(start, float | int) or not isinstance(end, float | int):
        return []
    return [c for c in cues if min(c.end, end) - max(c.start, start) > min(TIME_TOLERANCE, (c.end - c.start) / 2)]


def _added(said: list[str], source: list[str]) -> list[str]:
    """The words of ``said`` that do not follow, in order, from ``source`` (greedy: each word takes the next
    occurrence after the previous match)."""
    extra, at = [], 0
    for word in said:
        try:
            at = source.index(word, at) + 1
        except ValueError:
            extra.append(word)
    return extra


def _quoted(cue: Cue, said: list[str]) -> bool:
    """Whether a row quotes the line: at least half of the line's words are among the row's."""
    needed = words(cue.text)
    pool = list(said)
    found = 0
    for word in needed:
        if word in pool:
            pool.remove(word)
            found += 1
    return bool(needed) and found * 2 >= len(needed)


def faithfulness(rows: Sequence[RowValues], cues: Sequence[Cue]) -> list[Problem]:
    """The paper's rules that subtitles are the ground truth of speech (§7.1-7.3), row by row:

    - a row's words come only from the subtitle lines its span overlaps, in their order, none added (words
      may be left out: fillers, repeats, a speaker prefix);
    - a row quotes the lines of one speaker: a new row starts at every speaker change;
    - a row's speaker is the speaker of the lines it quotes, where the subtitles name one;
    - no placeholder (N/A, none, unknown, ...) stands for a value (an empty evidence text is the rulebook's
      empty-text rule).
    """
    problems: list[Problem] = []
    for number, row in enumerate(rows, start=1):
        def problem(field: str, message: str, number: int = number) -> None:
            problems.append(Problem(row_index=number, field=field, message=message))

        for field, part in _TEXTS.items():
            value = row.get(field)
            entries = [(field, value)] if part is None else [
                (f"{field}[{i}].{part}", e.get(part)) for i, e in enumerate(value or []) if isinstance(e, dict)]
            for where, text in entries:
                # An empty evidence text is the rulebook's (rescue.data.rules, empty-text), checked in _check_rules.
                if isinstance(text, str) and text.strip().strip(".").casefold() in PLACEHOLDERS:
                    problem(where, f"{text!r} is a placeholder: leave the field empty (\"\" or []) when nothing "
                            "was observed")
        said = words(row.get("dialogue_cleaned") or "")
        spanned = _spanned(row, cues)
        if not said or not spanned:
            continue
        extra = _added(said, [w for c in spanned for w in words(c.text)])
        if extra:
            shown = " ".join(extra[:12]) + (" ..." if len(extra) > 12 else "")
            problem("dialogue_cleaned", f"words not in the subtitle lines the row spans (or out of their order): "
                    f"{shown!r}; quote the lines, add nothing")
        quoted = [c for c in spanned if c.speakers and _quoted(c, said)]
        speakers = list(dict.fromkeys(s for c in quoted for s in c.speakers))
        if len({c.speakers for c in quoted}) > 1:
            problem("dialogue_cleaned", f"quotes lines of {' and '.join(speakers)}: start a new row at every "
                    "speaker change")
        elif len(speakers) == 1 and row.get("primary_speaker") != speakers[0]:
            problem("primary_speaker", f"{row.get('primary_speaker')!r}, but the subtitle lines this row quotes "
                    f"are {speakers[0]}'s")
    return problems


def uncovered_cues(rows: Sequence[RowValues], cues: Sequence[Cue]) -> list[Cue]:
    """The subtitle lines whose words the rows spanning them do not quote in full, in order."""
    out = []
    for cue in cues:
        near = [r for r in rows if r["start_time"] < cue.end + TIME_TOLERANCE and r["end_time"] > cue.start - TIME_TOLERANCE]
        said = [w for r in near for w in words(r["dialogue_cleaned"])]
        needed = words(cue.text)
        if needed and not _is_subsequence(needed, said):
            out.append(cue)
    return out


def _coverage(rows: Sequence[RowValues], cues: Sequence[Cue]) -> list[Problem]:
    return [Problem(field="dialogue_cleaned", message=(
        f"subtitle line [{cue.index}] ({cue.start:.2f}-{cue.end:.2f}) {cue.text!r} is not quoted in full "
        "by the rows spanning it")) for cue in uncovered_cues(rows, cues)]


class RelationFields(TypedDict):
    """One row's relation-pattern fields from the relation pass (:func:`check_relations`), with the answer's values
    set aside as invalid (``draft_invalid``) when any was."""

    relation_pattern: str | None
    relation_pattern_reason: str | None
    relation_pattern_evidence_rows: list[int]
    draft_invalid: NotRequired[dict[str, Any]]


def check_relations(value: Any, rows: list[RowValues], scenario: Scenario) -> tuple[dict[int, RelationFields], list[Problem]]:
    """Relation-pattern fields per row_index from a parsed answer, and their problems."""
    problems: list[Problem] = []
    items = value.get("relation_patterns") if isinstance(value, dict) else None
    if not isinstance(items, list):
        return {}, [Problem(field="relation_pattern", message='the answer is not {"relation_patterns": [...]}')]
    labels = relation_taxonomy(scenario)
    count = len(rows)
    found: dict[int, RelationFields] = {}
    for item in items:
        index = item.get("row_index") if isinstance(item, dict) else None
        if type(index) is not int or not 1 <= index <= count:
            problems.append(Problem(field="relation_pattern", message=f"an item names no existing row: {item!r}"[:300]))
            continue
        invalid: dict[str, Any] = {}
        label = item.get("relation_pattern")
        if label not in labels.names:
            invalid["relation_pattern"] = label
            problems.append(Problem(row_index=index, field="relation_pattern",
                                    message=f"{label!r} is not a {scenario} relation pattern"))
            label = None
        reason = item.get("relation_pattern_reason")
        if not isinstance(reason, str) or not reason.strip():
            problems.append(Problem(row_index=index, field="relation_pattern_reason", message="empty reason"))
            reason = reason if isinstance(reason, str) else None
        evidence = item.get("relation_pattern_evidence_rows")
        if not isinstance(evidence, list) or not all(type(r) is int for r in evidence):
            invalid["relation_pattern_evidence_rows"] = evidence
            problems.append(Problem(row_index=index, field="relation_pattern_evidence_rows",
                                    message="must be a list of row numbers"))
            evidence = []
        outside = [r for r in evidence if not 1 <= r <= index]
        if outside:
            invalid["relation_pattern_evidence_rows"] = evidence
            problems.append(Problem(row_index=index, field="relation_pattern_evidence_rows",
                                    message=f"row(s) {outside} are not this row or earlier ones"))
            evidence = [r for r in evidence if 1 <= r <= index]
        fields: RelationFields = {"relation_pattern": label, "relation_pattern_reason": reason,
                                  "relation_pattern_evidence_rows": evidence}
        if invalid:
            fields["draft_invalid"] = invalid
        found[index] = fields
        extra = set(item) - set(RELATION_KEYS)
        if extra:
            problems.append(Problem(row_index=index, field="relation_pattern",
                                    message=f"unknown key(s) {', '.join(sorted(extra))}"))
    for row in rows:
        if row["primary_speaker"] == THERAPIST and row["row_index"] not in found:
            problems.append(Problem(row_index=row["row_index"], field="relation_pattern",
                                    message=f"no relation pattern for this {THERAPIST} row"))
    return found, problems
