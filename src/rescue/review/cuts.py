"""Re-cutting a segment's rows: what a split, a merge, an insert or a delete does to the rows' values, and how
rows of copies cut differently are matched to each other (by time overlap) for agreement and the draft.

Pure functions on release-format rows; :mod:`rescue.review.crud` stores the results. Every function returns
rows numbered 1..n in order, with the evidence-row references of every row renumbered to follow the cut, so a
copy always exports as a valid sample. A reference carried from one copy to another cut differently (taking an
annotator's fields, the final copy's agreed values, the draft a re-cut row is compared with) is moved to the
row that stands for it by time (:func:`counterparts`, :func:`moved_references`), never copied as a number.
"""

from __future__ import annotations

import copy as _copy
import json
import math
from collections.abc import Callable
from typing import Any

from rescue.review.fields import FIELD_NAMES, SPECS
from rescue.errors import CutError as CutError, FieldProblem
from rescue.review.shapes import RowValues

Row = RowValues
EVIDENCE = ("relation_pattern_evidence_rows", "relation_cycle_evidence_rows")
# Below this, two boundaries are the same instant (a frame at 60 fps is 16 ms).
MIN_ROW_SECONDS = 0.01


def _time(row: Row, name: str) -> float:
    value = row.get(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _renumber(rows: list[Row], mapping: Callable[[int], int | None]) -> list[Row]:
    """Rows numbered from 1, and each evidence reference ``old`` replaced by ``mapping(old)`` (dropped when None)."""
    out = []
    for position, row in enumerate(rows, start=1):
        row = dict(row)
        row["row_index"] = position
        for name in EVIDENCE:
            refs = row.get(name)
            if isinstance(refs, list):
                moved = [mapping(r) if isinstance(r, int) and not isinstance(r, bool) and r > 0 else r for r in refs]
                row[name] = list(dict.fromkeys(r for r in moved if r is not None))
        out.append(row)
    return out


def renumbered(rows: list[Row]) -> list[Row]:
    """Rows as they are, numbered 1..n."""
    return _renumber(rows, lambda r: r)


def _check_at(row: Row, at: float, name: str = "at") -> None:
    start, end = _time(row, "start_time"), _time(row, "end_time")
    if not start + MIN_ROW_SECONDS <= at <= end - MIN_ROW_SECONDS:
        raise CutError(name, f"{at:.3f} s is not inside row {row.get('row_index')} ({start:.3f}-{end:.3f} s)")


def split(rows: list[Row], index: int, at: float, text_at: int | None = None) -> list[Row]:
    """Row ``index`` (1-based) cut in two at ``at`` seconds. Both halves keep the row's annotation (the person
    correcting it decides what belongs to whom); the dialogue is cut at character ``text_at`` when given."""
    row = rows[index - 1]
    _check_at(row, at)
    first, second = _copy.deepcopy(row), _copy.deepcopy(row)
    first["end_time"] = second["start_time"] = round(at, 3)
    if text_at is not None:
        text = str(row.get("dialogue_cleaned") or "")
        if not 0 < text_at < len(text):
            raise CutError("text_at", f"{text_at} is not inside the dialogue (1-{max(len(text) - 1, 0)})")
        first["dialogue_cleaned"], second["dialogue_cleaned"] = text[:text_at].rstrip(), text[text_at:].lstrip()
    # A reference to the split row points at the half that stands for it by time (:func:`counterparts`: the
    # longer, the first when both are as long), as a row of a copy cut so is matched to it everywhere else.
    half = index + (counterparts([row], [first, second])[0] or 1) - 1
    return _renumber([*rows[: index - 1], first, second, *rows[index:]],
                     lambda r: r if r < index else half if r == index else r + 1)


def _union(a: Any, b: Any) -> Any:
    if isinstance(a, list) and isinstance(b, list):
        seen = {json.dumps(x, sort_keys=True) for x in a}
        return [*a, *(x for x in b if json.dumps(x, sort_keys=True) not in seen)]
    return a if a not in (None, "", []) else b


def merge(rows: list[Row], index: int, drop_self_target: bool = False) -> list[Row]:
    """Rows ``index`` and ``index + 1`` as one: the first row's speaker and labels, the dialogue of both, list
    fields (targets, cues, strategies...) of both, and the span of both. Joining rows of two speakers can make the
    first speaker a target of their own row (a self-target, which verify refuses): ``drop_self_target`` leaves
    the speaker out of the merged targets."""
    if not 1 <= index < len(rows):
        raise CutError("row_index", f"row {index} has no next row to merge with")
    first, second = rows[index - 1], rows[index]
    merged = _copy.deepcopy(first)
    merged["end_time"] = max(_time(first, "end_time"), _time(second, "end_time"))
    texts = [str(r.get("dialogue_cleaned") or "").strip() for r in (first, second)]
    merged["dialogue_cleaned"] = " ".join(t for t in texts if t)
    for name in FIELD_NAMES:
        if name == "dialogue_cleaned" or (name not in first and name not in second):
            continue  # a field neither row holds (a draft may leave out the relation fields) stays out
        kind = SPECS[name].kind
        if kind in ("list", "entities") or name in ("tone_of_voice", "relation_pattern_reason", "relation_cycle_reason",
                                                    *EVIDENCE):
            merged[name] = _copy.deepcopy(_union(first.get(name), second.get(name)))
    if drop_self_target and isinstance(merged.get("target"), list):
        merged["target"] = [t for t in merged["target"] if t != merged.get("primary_speaker")]
    return _renumber([*rows[: index - 1], merged, *rows[index + 1:]],
                     lambda r: r if r <= index else r - 1)


def counterparts(source: list[Row], target: list[Row]) -> list[int | None]:
    """For each row of ``source``, the number (1-based) of the row of ``target`` that stands for it by time
    (:func:`align`: the longest overlap, the first of equals), or None where no row of ``target`` overlaps it.
    How a row reference made in one copy's numbering is read in another's."""
    return [None if m is None else m + 1 for m in align(source, target)]


def moved_references(row: Row, mapping: list[int | None]) -> tuple[Row, list[tuple[str, int]]]:
    """``row`` with every evidence reference ``r`` (a row number of the copy it was made in) replaced by
    ``mapping[r - 1]`` (:func:`counterparts` of that copy in another), and the ``(field, r)`` of each reference
    with no counterpart (its row is missing from the other cut, or ``r`` is past the copy's rows)."""
    out, lost = dict(row), []
    for name in EVIDENCE:
        refs = row.get(name)
        if not isinstance(refs, list):
            continue
        moved: list[Any] = []
        for ref in refs:
            if isinstance(ref, int) and not isinstance(ref, bool) and ref > 0:
                target = mapping[ref - 1] if ref <= len(mapping) else None
                if target is None:
                    lost.append((name, ref))
                    continue
                ref = target
            if ref not in moved:
                moved.append(ref)
        out[name] = moved
    return out, lost


def origins(draft: list[Row], rows: list[Row]) -> list[str]:
    """How each row of a re-cut copy stands to the draft: ``re-cut`` (a split half, a merge, an inserted row:
    it shares its draft row with another row, covers several, or overlaps none), ``re-timed`` (one draft row's
    speech with its span moved) or ``draft`` (the draft row's span)."""
    forward, backward = align(rows, draft), align(draft, rows)
    shared = [m for m in forward if m is not None]
    covered = [m for m in backward if m is not None]
    out = []
    for position, (row, match) in enumerate(zip(rows, forward)):
        if match is None or shared.count(match) > 1 or covered.count(position) > 1:
            out.append("re-cut")
        elif (_time(row, "start_time"), _time(row, "end_time")) != (_time(draft[match], "start_time"),
                                                                    _time(draft[match], "end_time")):
            out.append("re-timed")
        else:
            out.append("draft")
    return out


def blank_row(start: float, end: float, speaker: str = "", dialogue: str = "") -> Row:
    """A row for speech nobody annotated: its span and what the person typed, every other field empty."""
    row: Row = {"row_index": 0, "start_time": round(start, 3), "end_time": round(end, 3)}
    for spec in SPECS.values():
        if spec.kind in ("list", "entities"):
            row[spec.name] = []
        elif spec.name in ("relation_pattern", "relation_pattern_reason", "relation_pattern_evidence_rows",
                           "relation_cycle_state", "relation_cycle_reason", "relation_cycle_evidence_rows"):
            row[spec.name] = None
        else:
            row[spec.name] = ""
    row["primary_speaker"], row["dialogue_cleaned"] = speaker, dialogue
    return row


def insert(rows: list[Row], new: Row, limit: float = math.inf) -> tuple[list[Row], int]:
    """``new`` placed among ``rows`` by its start time (after rows starting at the same time); returns the rows
    and the new row's index. Its span must pass :func:`check_span` within ``limit``."""
    start, end = _time(new, "start_time"), _time(new, "end_time")
    problems = check_span(start, end, limit)
    if problems:
        raise CutError(problems[0]["field"], problems[0]["message"])
    position = sum(1 for r in rows if _time(r, "start_time") <= start)
    out = _renumber([*rows[:position], new, *rows[position:]], lambda r: r if r <= position else r + 1)
    return out, position + 1


def delete(rows: list[Row], index: int) -> list[Row]:
    """Rows without row ``index``; references to it are dropped."""
    if len(rows) <= 1:
        raise CutError("row_index", "a segment keeps at least one row (discard the segment instead)")
    return _renumber([*rows[: index - 1], *rows[index:]],
                     lambda r: None if r == index else r if r < index else r - 1)


def check_span(start: float, end: float, limit: float = math.inf) -> list[FieldProblem]:
    """Problems with a row spanning ``start``-``end`` seconds in a segment whose media ends at ``limit``: both
    finite, not negative, not past the end, and the span positive."""
    problems: list[FieldProblem] = []
    for name, value in (("start_time", start), ("end_time", end)):
        if not math.isfinite(value):
            problems.append({"field": name, "message": f"{value} is not a finite number of seconds"})
        elif value < 0:
            problems.append({"field": name, "message": f"{value} is negative"})
        elif value > limit:
            problems.append({"field": name, "message": f"{value:g} s is past the end of the segment's media "
                                                       f"({limit:.3f} s)"})
    if not problems and end < start + MIN_ROW_SECONDS:
        problems.append({"field": "end_time", "message": f"{end} must be after start_time {start}"})
    return problems


def check_times(rows: list[Row], index: int, start: float, end: float, limit: float = math.inf) -> list[FieldProblem]:
    """Problems with row ``index`` spanning ``start``-``end`` among ``rows``: :func:`check_span`, and rows
    stay in order of their start times (a boundary never crosses a neighbour's start)."""
    problems = check_span(start, end, limit)
    if index > 1 and start < _time(rows[index - 2], "start_time"):
        problems.append({"field": "start_time", "message": f"{start} is before the previous row's start "
                                                           f"{_time(rows[index - 2], 'start_time')}"})
    if index < len(rows) and start > _time(rows[index], "start_time"):
        problems.append({"field": "start_time", "message": f"{start} is after the next row's start "
                                                           f"{_time(rows[index], 'start_time')}"})
    return problems


def overlap(a: Row, b: Row) -> float:
    """How many seconds rows ``a`` and ``b`` overlap (negative: the gap between them)."""
    return min(_time(a, "end_time"), _time(b, "end_time")) - max(_time(a, "start_time"), _time(b, "start_time"))


def align(reference: list[Row], rows: list[Row]) -> list[int | None]:
    """For each reference row, the position (0-based) in ``rows`` of the row that overlaps it longest in time,
    or None when none overlaps it. Ties go to the row whose midpoint is nearest; same-length lists with the
    same spans map one to one, so uncut copies align by row number exactly as before."""
    ref_spans = [(_time(r, "start_time"), _time(r, "end_time")) for r in reference]
    spans = [(_time(r, "start_time"), _time(r, "end_time")) for r in rows]
    if ref_spans == spans:
        return list(range(len(rows)))
    out: list[int | None] = []
    for ref_start, ref_end in ref_spans:
        middle = (ref_start + ref_end) / 2
        best, key = None, (0.0, 0.0)
        for i, (start, end) in enumerate(spans):
            shared = min(ref_end, end) - max(ref_start, start)
            # A zero-length row (the release has a few) matches the row whose span holds it.
            if shared < 0 or (shared == 0 and ref_start != ref_end and start != end):
                continue
            candidate = (shared, -abs((start + end) / 2 - middle))
            if best is None or candidate > key:
                best, key = i, candidate
        out.append(best)
    return out
