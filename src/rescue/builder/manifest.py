"""``DIR/manifest.json``: what ``rescue build`` made of each segment, read by the review tool and the
video mode. Paths are relative to DIR; row times are relative to the clip, as in the release rows.

    {"version": 1, "segments": [{"sample_id", "scenario", "participants", "source_video", "start", "end",
      "clip", "subtitles", "rows": [{"row_index", "start_time", "end_time", "text", "speakers"}],
      "problems": [{"row_index", "field", "message"}], "provenance": {...}}], "dropped": [...]}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rescue.atomic import write_atomic
from rescue.data.models import Scenario
from rescue.data.readback import read_json_file, validated
from rescue.errors import BuildInputError

MANIFEST_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class ManifestRow(_Model):
    """One row of a segment as the build made it: times, text and speakers from the subtitles."""

    row_index: int
    start_time: float
    end_time: float
    text: str
    speakers: list[str] = Field(default_factory=list)


class Problem(_Model):
    """An open problem of a draft for the reviewer: what the checks found and the model did not fix."""

    row_index: int | None = None
    field: str | None = None
    message: str

    def __str__(self) -> str:
        where = "segment" if self.row_index is None else f"row {self.row_index}"
        return f"{where}{f' {self.field}' if self.field else ''}: {self.message}"


class ManifestSegment(_Model):
    """One built segment: its sample, source video and span, clip and subtitles, problems and provenance."""

    sample_id: str
    scenario: Scenario
    participants: list[str]
    source_video: str
    start: float
    end: float
    clip: str
    subtitles: str
    rows: list[ManifestRow] = Field(default_factory=list)
    problems: list[Problem] = Field(default_factory=list)
    provenance: dict[str, Any] = Field(default_factory=dict)
    row_clips: list[str] = Field(default_factory=list)


class DroppedSegment(_Model):
    """A segment the build left out, and why."""

    sample_id: str
    source_video: str
    start: float
    end: float
    reason: str


class Manifest(_Model):
    """manifest.json: every built segment and every dropped one."""

    version: int = MANIFEST_VERSION
    segments: list[ManifestSegment] = Field(default_factory=list)
    dropped: list[DroppedSegment] = Field(default_factory=list)

    def segment(self, sample_id: str) -> ManifestSegment:
        """The segment of ``sample_id``."""
        return next(s for s in self.segments if s.sample_id == sample_id)


def _input_error(message: str) -> BuildInputError:
    return BuildInputError([message])


def read_manifest(path: str | Path) -> Manifest:
    """The manifest at ``path``; :class:`BuildInputError` naming the file and the line or field it cannot read
    (:mod:`rescue.data.readback`)."""
    return validated(Manifest, read_json_file(path, _input_error), str(path), _input_error)


class FinishedDraft(_Model):
    """A finished segment draft (``<segment>/draft.json`` in the build folder's ``work`` folder): a segment the model annotated whole, kept so a rerun does not ask again.
    ``key`` is the hash of everything that decided the draft (a rerun with other options annotates again)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    rows: list[dict[str, Any]]
    problems: list[Problem]
    requests: int = Field(default=0, ge=0)
    reasked: int = Field(default=0, ge=0)


def read_finished(path: Path, key: str) -> FinishedDraft | None:
    """The segment's finished draft when it was made with ``key``; None when there is none or it was made with
    other options. One that is there but cannot be read is :class:`BuildInputError` naming the file and field
    (deleting it annotates the segment again, its answers from the cache)."""

    def error(message: str) -> BuildInputError:
        return BuildInputError([f"{message} (not a draft rescue wrote); delete it to annotate the segment again "
                                "(answers already received come from the cache)"])

    try:
        value = read_json_file(path, error)
    except FileNotFoundError:
        return None
    if isinstance(value, dict) and value.get("key") != key:
        return None
    return validated(FinishedDraft, value, str(path), error)


def write_json_atomic(path: Path, value: Any) -> None:
    """Write ``value`` as indented JSON, whole or not at all (:func:`rescue.atomic.write_atomic`)."""
    write_atomic(path, json.dumps(value, ensure_ascii=False, indent=1) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text``, whole or not at all (:func:`rescue.atomic.write_atomic`)."""
    write_atomic(path, text)


def write_manifest(path: Path, manifest: Manifest) -> None:
    """Write the manifest as JSON, atomically."""
    write_json_atomic(path, manifest.model_dump(mode="json"))
