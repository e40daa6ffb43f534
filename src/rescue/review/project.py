"""A review project: the folder ``rescue build`` wrote (draft.jsonl, manifest.json, clips) or any folder
holding a release-format ``draft.jsonl`` without media.

The draft is read leniently: a model draft may hold labels outside the taxonomy or names outside the cast,
which is exactly what reviewers are there to fix, so validation issues become problems shown on their rows
instead of reasons to refuse the sample. Only a line that is not a sample at all stops the server.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from rescue.data.errors import DataIssue, ProjectError as ProjectError
from rescue.data.loading import RawRecord, infer_participants, infer_scenario, iter_records
from rescue.data.models import GROUP_LABELS, THERAPIST
from rescue.data.readback import check_parsed, read_json_file
from rescue.data.text import deep_without_lone_surrogates, without_lone_surrogates
from rescue.data.validation import validate_records
from rescue.review.shapes import ProblemView, ProjectFiles, RowValues

DRAFT_FILE = "draft.jsonl"
MANIFEST_FILE = "manifest.json"
BENCHMARK_FILE = "benchmark.json"  # a benchmark project's (people take the tasks) instead of a draft


def is_benchmark(root: str | Path) -> bool:
    """Whether ``root`` is a benchmark project (it holds ``benchmark.json``). Here, not in
    :mod:`rescue.human.benchmark`, so that starting a verification project never loads the tasks."""
    return (Path(root) / BENCHMARK_FILE).is_file()


@dataclass(frozen=True)
class SegmentProblem:
    """An open problem shown with a segment: from the build's manifest or found when the draft was read."""

    row_index: int | None
    field: str | None
    message: str
    source: str  # "build" (from the manifest) or "validation" (found when the draft was read)

    def as_dict(self) -> ProblemView:
        """The problem as JSON."""
        return {"row_index": self.row_index, "field": self.field, "message": self.message, "source": self.source}


@dataclass
class Segment:
    """One sample of the draft with what the manifest says about its media."""

    sample_id: str
    data: dict[str, Any]  # the draft sample exactly as read (release format)
    line: int
    clip: str | None = None  # relative to the project folder
    subtitles: str | None = None
    source_video: str = ""
    start: float | None = None
    end: float | None = None
    problems: list[SegmentProblem] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def scenario(self) -> str:
        """The sample's scenario."""
        return str(self.data.get("scenario", "couple"))

    @property
    def participants(self) -> list[str]:
        """The sample's participants."""
        return [str(p) for p in self.data.get("participants") or []]

    @property
    def rows(self) -> list[RowValues]:
        """The draft's rows, as read."""
        return list(self.data.get("rows") or [])

    @property
    def time_limit(self) -> float:
        """The latest time a row may reach: the clip's length where the manifest gives its span, and never less
        than the draft's own latest end (what the draft holds is never refused)."""
        ends = [float(r["end_time"]) for r in self.rows if isinstance(r.get("end_time"), (int, float))
                and not isinstance(r.get("end_time"), bool) and math.isfinite(r["end_time"])]
        clip = self.end - self.start if self.start is not None and self.end is not None else 0.0
        return max([clip, *ends]) if math.isfinite(clip) else max(ends, default=0.0)

    @property
    def entities(self) -> list[str]:
        """The closed set a speaker or target is chosen from: the cast, the therapist and the group label."""
        return [*self.participants, THERAPIST, GROUP_LABELS.get(self.scenario, "Couple")]


def _issue(path: Path, line: int, message: str, field_name: str = "") -> ProjectError:
    return ProjectError([DataIssue(str(path), line, message, field_name)])


@dataclass
class Project:
    """A review project: its folder and every segment of its draft, with their media."""

    root: Path
    segments: dict[str, Segment]
    has_manifest: bool

    @property
    def media_files(self) -> set[str]:
        """Every media path the manifest names: the only files the server hands out."""
        return {p for s in self.segments.values() for p in (s.clip, s.subtitles) if p}

    def segment(self, sample_id: str) -> Segment | None:
        """The segment of ``sample_id``, None when there is none."""
        return self.segments.get(sample_id)

    def files(self) -> ProjectFiles:
        """What the project folder holds: the draft, the manifest, clips (and how many are there), subtitles."""
        clips = [s.clip for s in self.segments.values() if s.clip]
        return {
            "draft": DRAFT_FILE,
            "manifest": MANIFEST_FILE if self.has_manifest else None,
            "clips": len(clips),
            "clips_present": sum(1 for c in clips if (self.root / c).is_file()),
            "subtitles": sum(1 for s in self.segments.values() if s.subtitles),
        }


def _normalise(data: dict[str, Any]) -> None:
    found = data.get("rows")
    rows: list[Any] = found if isinstance(found, list) else []
    sample_id = str(data.get("sample_id", ""))
    data.setdefault("scenario", infer_scenario(sample_id, rows))
    data.setdefault("participants", infer_participants(rows))


def _relative_media(root: Path, manifest: Path, value: Any, where: str) -> str | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise _issue(manifest, 0, f"{where}: expected a relative path (got {value!r:.60})")
    pure = PurePosixPath(value)
    if pure.is_absolute() or ".." in pure.parts or "\\" in value:
        raise _issue(manifest, 0, f"{where}: {value!r} must be a path inside the project folder")
    return pure.as_posix()


def load_project(root: str | Path) -> Project:
    """Read DIR/draft.jsonl and, when present, DIR/manifest.json. Raises ProjectError naming file and line."""
    root = Path(root)
    draft = root / DRAFT_FILE
    if not root.is_dir():
        raise _issue(root, 0, "no such project folder")
    if not draft.is_file():
        raise _issue(draft, 0, "missing: a review project needs the draft.jsonl that `rescue build` writes")
    records = list(iter_records(draft))
    segments: dict[str, Segment] = {}
    for record in records:
        segment = _draft_segment(draft, record)
        if segment.sample_id in segments:
            raise _issue(draft, record.line, f"duplicate (first seen at line {segments[segment.sample_id].line})",
                         "sample_id")
        segments[segment.sample_id] = segment
    if not segments:
        raise _issue(draft, 0, "holds no samples")
    for issue in validate_records(records).issues:  # the records as read: a lone surrogate is reported
        if without_lone_surrogates(issue.sample_id) in segments and issue.severity == "error":
            segments[without_lone_surrogates(issue.sample_id)].problems.append(
                SegmentProblem(issue.row, issue.field or None, without_lone_surrogates(issue.message), "validation"))

    manifest_path = root / MANIFEST_FILE
    has_manifest = manifest_path.is_file()
    if has_manifest:
        _read_manifest(root, manifest_path, segments)
    return Project(root.resolve(), segments, has_manifest)


def _draft_segment(draft: Path, record: RawRecord) -> Segment:
    """One draft.jsonl line as a Segment; ProjectError naming the line when it is not a sample."""
    if record.parse_error:
        raise _issue(draft, record.line, record.parse_error)
    data = record.data
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list) or not data.get("sample_id"):
        raise _issue(draft, record.line, "not a sample (needs a sample_id and a list of rows)")
    # A time of NaN or 1e308 cannot be shown, played or stored: refused as every file read back refuses it.
    check_parsed(data, f"{draft}:{record.line}", _whole_issue)
    if not all(isinstance(r, dict) for r in data["rows"]):
        raise _issue(draft, record.line, "every row must be a JSON object", "rows")
    # Text the reader accepts must render and store: a lone surrogate (\ud800) cannot be encoded as UTF-8.
    # Validation still reports it, at its row and field.
    readable = deep_without_lone_surrogates(data)
    assert isinstance(readable, dict)
    data = readable
    _normalise(data)
    sample_id = str(data["sample_id"])
    if "\x00" in sample_id:  # no database but SQLite could store it
        raise _issue(draft, record.line, "contains a NUL character", "sample_id")
    return Segment(sample_id, data, record.line)


def _whole_issue(message: str) -> ProjectError:
    """A reader's one-line message (``FILE[:LINE]: what``) as the project's error."""
    where, _, what = message.partition(": ")
    return ProjectError([DataIssue(where, 0, what)])


# The manifest fields the review tool uses, and the types rescue build writes them with (None: absent).
_MANIFEST_TYPES: dict[str, tuple[type, ...]] = {
    "source_video": (str,), "start": (int, float), "end": (int, float), "provenance": (dict,), "problems": (list,)}


def _check_types(path: Path, where: str, entry: dict[str, Any]) -> None:
    """A manifest entry's fields hold what a build writes, or ProjectError naming the first that does not."""
    for name, types in _MANIFEST_TYPES.items():
        value = entry.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            raise _issue(path, 0, f"{where}.{name}: expected {' or '.join(t.__name__ for t in types)}, "
                         f"not {type(value).__name__} (not a manifest rescue build wrote)")
    for n, problem in enumerate(entry.get("problems") or []):
        if not isinstance(problem, dict):
            raise _issue(path, 0, f"{where}.problems[{n}]: expected an object (not a manifest rescue build wrote)")


def _read_manifest(root: Path, path: Path, segments: dict[str, Segment]) -> None:
    # Read as every file rescue wrote is (rescue.data.readback): deep, huge, non-finite or cut, named.
    manifest = read_json_file(path, _whole_issue)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("segments"), list):
        raise _issue(path, 1, "expected {\"version\": 1, \"segments\": [...]}", "segments")
    for i, entry in enumerate(manifest["segments"]):
        where = f"segments[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("sample_id"), str):
            raise _issue(path, 0, f"{where}.sample_id: missing")
        segment = segments.get(entry["sample_id"])
        if segment is None:
            continue  # a segment the build listed but could not draft: nothing to review
        segment.clip = _relative_media(root, path, entry.get("clip"), f"{where}.clip")
        segment.subtitles = _relative_media(root, path, entry.get("subtitles"), f"{where}.subtitles")
        _check_types(path, where, entry)
        segment.source_video = str(entry.get("source_video") or "")
        segment.start = entry.get("start")
        segment.end = entry.get("end")
        segment.provenance = entry.get("provenance") or {}
        for problem in entry.get("problems") or []:
            if problem.get("message"):
                row = problem.get("row_index")
                segment.problems.append(
                    SegmentProblem(row if isinstance(row, int) else None, problem.get("field") or None, str(problem["message"]), "build")
                )


def raw_record(data: dict[str, Any], file: str = DRAFT_FILE, line: int = 1) -> RawRecord:
    """A draft sample as a raw record of ``file`` at ``line``, for validation."""
    return RawRecord(file, line, data)
