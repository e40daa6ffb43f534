"""Finding each sample's clip under ``--media-root``.

Three ways, chosen by ``--media-match``:

- ``source_file``: the release's ``source_file`` (``data/therapy_merged_all/alan_and_evelyn/001_..._segment04.json``)
  with a video extension, matched on its longest tail that exists under the root
  (``alan_and_evelyn/001_..._segment04.mp4`` or just ``001_..._segment04.mp4``);
- ``id``: ``<media root>/<sample_id>.<ext>`` (``alan_and_evelyn/001_..._segment04.mp4``);
- a ``rescue build --out DIR`` folder: its ``manifest.json`` names each segment's clip.

``auto`` (the default) uses the manifest when the root has one, then ``source_file``, then the id. Every
sample must have media: the error lists those without before any request is sent.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from rescue.data.models import Sample
from rescue.data.names import inside_path
from rescue.data.readback import read_json_file
from rescue.video._options import VideoError

VIDEO_EXTENSIONS = (".mp4", ".mkv", ".webm", ".mov", ".m4v", ".avi")
MANIFEST = "manifest.json"
_SHOWN_MISSING = 10


def _index(root: Path) -> dict[str, Path]:
    """Every video file under ``root`` by its relative POSIX path without extension."""
    found: dict[str, Path] = {}
    for folder, _dirs, files in os.walk(root, followlinks=True):
        for name in sorted(files):
            path = Path(folder) / name
            if path.suffix.lower() in VIDEO_EXTENSIONS:
                stem = PurePosixPath(path.relative_to(root).as_posix()).with_suffix("").as_posix()
                found.setdefault(stem, path)
    return found


def _read_manifest(root: Path) -> dict[str, Path]:
    path = root / MANIFEST
    data = read_json_file(path, VideoError)  # as every file rescue wrote is read back (rescue.data.readback)
    segments = data.get("segments") if isinstance(data, dict) else None
    if not isinstance(segments, list):
        raise VideoError(f"{path}: field segments: expected a list (is this a `rescue build --out` manifest?)")
    clips: dict[str, Path] = {}
    for n, segment in enumerate(segments):
        if not isinstance(segment, dict) or not isinstance(segment.get("sample_id"), str):
            raise VideoError(f"{path}: segments[{n}]: field sample_id: expected a string")
        clip = segment.get("clip")
        if not isinstance(clip, str) or not clip:
            raise VideoError(f"{path}: segments[{n}] ({segment['sample_id']}): field clip: expected a relative path")
        clips[segment["sample_id"]] = inside_path(root, clip, file=path, field=f"segments[{n}].clip")
    return clips


def _source_candidates(source_file: str) -> list[str]:
    """The tails of ``source_file`` without extension, longest first."""
    parts = PurePosixPath(source_file.replace("\\", "/").lstrip("/")).with_suffix("").parts
    return ["/".join(parts[i:]) for i in range(len(parts)) if parts[i:] and parts[i] not in ("..", ".")]


def find_media(samples: Sequence[Sample], root: str | Path, match: str = "auto") -> dict[str, Path]:
    """Each sample's media file by sample id; raises :class:`VideoError` naming every sample without one."""
    base = Path(root).expanduser()
    if not base.is_dir():
        raise VideoError(f"--media-root {root}: no such folder")
    manifest = _read_manifest(base) if match == "auto" and (base / MANIFEST).is_file() else {}
    index = _index(base)
    found: dict[str, Path] = {}
    missing: list[str] = []
    for sample in samples:
        path = _lookup(sample, base, match, manifest, index)
        if path is None:
            missing.append(_describe_missing(sample, match))
        else:
            found[sample.sample_id] = path
    if missing:
        shown = "\n  ".join(missing[:_SHOWN_MISSING])
        more = f"\n  ... and {len(missing) - _SHOWN_MISSING} more" if len(missing) > _SHOWN_MISSING else ""
        raise VideoError(
            f"--media-root {root}: no media for {len(missing)} of {len(samples)} sample(s) "
            f"(--media-match {match}; video files {', '.join(VIDEO_EXTENSIONS)}):\n  {shown}{more}"
        )
    return found


def _lookup(sample: Sample, base: Path, match: str, manifest: dict[str, Path], index: dict[str, Path]) -> Path | None:
    if sample.sample_id in manifest:
        clip = manifest[sample.sample_id]
        return clip if clip.is_file() else None
    if match in ("auto", "source_file") and sample.source_file:
        for tail in _source_candidates(sample.source_file):
            if tail in index:
                return index[tail]
    if match in ("auto", "id"):
        return index.get(sample.sample_id)
    return None


def _describe_missing(sample: Sample, match: str) -> str:
    wanted = []
    if match in ("auto", "source_file"):
        tails = _source_candidates(sample.source_file) if sample.source_file else []
        wanted.append(f"source_file {tails[-1] + '.*' if tails else '(empty)'}")
    if match in ("auto", "id"):
        wanted.append(f"id {sample.sample_id}.*")
    return f"{sample.sample_id} (looked for {' or '.join(wanted)})"
