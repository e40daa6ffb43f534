"""Export: the verified, non-discarded segments in the release format, plus a provenance sidecar saying
who verified what and what changed from the model's draft."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from rescue.data.errors import DataError
from rescue.data.validation import validate_records
from rescue.atomic import write_all_atomic
from rescue.review.crud import copy_cut, copy_values, draft_counterparts
from rescue.review.fields import FIELD_NAMES
from rescue.review.models import FINAL, now
from rescue.review.progress import project_progress
from rescue.review.project import Project, raw_record
from rescue.review.shapes import ExportProvenance, FieldChange, LeftOut, RowValues, SegmentProvenance


def _changes(draft: list[RowValues], rows: list[RowValues]) -> list[FieldChange]:
    """Per row and field, where the exported row differs from its draft row (for a re-cut copy, the draft row
    it overlaps longest in time)."""
    out: list[FieldChange] = []
    for before, after in zip(draft, rows):
        for name in FIELD_NAMES:
            if json.dumps(before.get(name), sort_keys=True) != json.dumps(after.get(name), sort_keys=True):
                out.append({"row_index": after.get("row_index"), "field": name, "draft": before.get(name),
                            "verified": after.get(name)})
    return out


def build_export(db: Session, project: Project) -> tuple[list[dict[str, Any]], ExportProvenance]:
    """The verified samples (release format) and their provenance. Raises DataError if one would not validate."""
    samples: list[dict[str, Any]] = []
    segments: list[SegmentProvenance] = []
    left_out: list[LeftOut] = []
    for sample_id, p in sorted(project_progress(db, project).items()):
        segment = project.segments[sample_id]
        if p.status != "verified" or p.source is None:
            entry: LeftOut = {"sample_id": sample_id, "status": p.status}
            if p.status == "discarded":
                entry["discarded"] = {c: s for c, s in p.states.items() if s["status"] == "discarded"}
            left_out.append(entry)
            continue
        rows = copy_values(db, segment, p.source)
        recut = copy_cut(db, sample_id, p.source) is not None
        sample = {**segment.data, "rows": rows}
        samples.append(sample)
        segments.append({
            "sample_id": sample_id,
            "source": "adjudicated" if p.source == FINAL else "annotators agreed",
            "verified_by": sorted(c for c, s in p.states.items() if s["status"] == "verified" and c != FINAL),
            "adjudicated_by": p.states[FINAL]["by"] if p.source == FINAL else None,
            "verified_at": p.states[p.source]["at"],
            "changes_from_draft": _changes(draft_counterparts(segment, rows) if recut else segment.rows, rows),
            "recut": {"draft_rows": len(segment.rows), "rows": len(rows)} if recut else None,
            "build": segment.provenance,
        })
    # The rulebook at its own severities, as on every save and verify: nothing the rules forbid leaves the tool.
    report = validate_records([raw_record(s, "export", i) for i, s in enumerate(samples, start=1)], strict=True)
    if report.errors:
        raise DataError(report.errors)
    provenance: ExportProvenance = {
        "version": 1,
        "exported_at": now(),
        "project": str(project.root),
        "segments": segments,
        "not_exported": left_out,
    }
    return samples, provenance


def to_jsonl(samples: list[dict[str, Any]]) -> str:
    """The samples as JSONL text."""
    return "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples)


def sidecar_path(out: Path) -> Path:
    """Where the provenance of an export to ``out`` goes: OUT.provenance.json."""
    return out.with_name(out.stem + ".provenance.json")


def write_export(db: Session, project: Project, out: Path) -> tuple[int, Path]:
    """Write OUT (JSONL) and OUT's provenance sidecar; nothing is written if a sample would not validate."""
    samples, provenance = build_export(db, project)
    side = sidecar_path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # The one atomic writer: files follow the umask like every other output (mkstemp made them 0600).
    # Both or neither: a full disk after the data would leave a release without its provenance.
    write_all_atomic([(out, to_jsonl(samples)), (side, json.dumps(provenance, ensure_ascii=False, indent=2) + "\n")])
    return len(samples), side
