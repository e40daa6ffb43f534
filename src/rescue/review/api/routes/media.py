"""GET /media/{path}: the clips and subtitles the manifest names, and nothing else; GET
/api/segments/{id}/waveform: a segment's clip audio as peaks for the timeline.

Only paths listed in the manifest are served, and each must still resolve inside the project folder,
so ``..``, absolute paths, encoded traversal and symlinks pointing out are all refused."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path, PurePosixPath
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse

from rescue.atomic import write_atomic
from rescue.data.readback import read_json_file
from rescue.errors import ReviewError
from rescue.review.api.deps import CurrentUser, Db, ProjectDep, get_segment, may_annotate, require_queue

router = APIRouter(tags=["media"])

_ENCODED = re.compile(r"%(2e|2f|5c|25|00)", re.IGNORECASE)
MEDIA_TYPES = {".mp4": "video/mp4", ".webm": "video/webm", ".vtt": "text/vtt", ".m4a": "audio/mp4"}


def safe_media_path(root: Path, allowed: set[str], raw_path: str, path: str) -> Path:
    # Starlette has already percent-decoded `path`; an encoded dot, slash, backslash, percent or NUL in the
    # raw path (or a '%' surviving decoding) is traversal dressed up, which no manifest path needs.
    """The file of a media path the manifest names, inside the project folder; 403 for traversal, 404 otherwise."""
    if "%" in path or _ENCODED.search(raw_path) or "\\" in path or "\x00" in path:
        raise HTTPException(403, "refused: encoded characters in a media path")
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or path.startswith("/"):
        raise HTTPException(403, "refused: media paths stay inside the project folder")
    if pure.as_posix() not in allowed:
        raise HTTPException(404, "no such media file in this project")
    resolved = (root / pure).resolve()
    if not resolved.is_relative_to(root):
        raise HTTPException(403, "refused: the file lies outside the project folder")
    if not resolved.is_file():
        raise HTTPException(404, "the media file is missing")
    return resolved


@router.get("/media/{path:path}")
def media(path: str, request: Request, actor: CurrentUser, db: Db, project: ProjectDep) -> FileResponse:
    """GET /media/PATH: a clip or subtitle file of a segment in the user's queue."""
    raw = request.scope.get("raw_path", b"").decode("latin-1").split("/media/", 1)[-1]
    file = safe_media_path(project.root, project.media_files, raw, path)
    owners = [s.sample_id for s in project.segments.values() if path in (s.clip, s.subtitles)]
    if owners and not any(may_annotate(db, actor, owner) for owner in owners):
        raise HTTPException(403, "this segment is not in your queue")
    return FileResponse(file, media_type=MEDIA_TYPES.get(file.suffix.lower(), "application/octet-stream"),
                        headers={"Cache-Control": "private, max-age=3600"})


CACHE_DIR = ".review-cache"  # inside the project folder: computed once, kept across restarts
_waveform_lock = threading.Lock()  # one ffmpeg decode at a time; the second asker then reads the cache


def clip_waveform(root: Path, clip: Path) -> dict[str, Any]:
    """The clip's waveform (:func:`rescue.media.waveform`), cached under the project folder by the clip's path,
    size and modification time, so a re-cut clip is measured again."""
    from rescue.media import waveform  # ffmpeg work only the timeline asks for

    stat = clip.stat()
    key = hashlib.sha256(f"{clip.relative_to(root)}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:32]
    cached = root / CACHE_DIR / "waveforms" / f"{key}.json"
    with _waveform_lock:
        if cached.is_file():
            try:  # read back as every file rescue wrote is; one that is not what was written is measured again
                found = read_json_file(cached, ReviewError)
            except (OSError, ReviewError):
                found = None
            if isinstance(found, dict):
                return found
        result = waveform(clip)
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(cached, json.dumps(result, separators=(",", ":")))
        except OSError:
            pass  # a read-only project folder: computed again next time, still correct
    return result


@router.get("/api/segments/{segment_id:path}/waveform")
def segment_waveform(segment_id: str, actor: CurrentUser, db: Db, project: ProjectDep) -> dict[str, Any]:
    """GET /api/segments/ID/waveform: the clip's waveform for the timeline (422 when it cannot be read)."""
    from rescue.media import MediaError

    segment = get_segment(project, segment_id)
    require_queue(db, actor, segment_id)
    if not segment.clip:
        raise HTTPException(404, "this segment has no clip")
    clip = safe_media_path(project.root, project.media_files, segment.clip, segment.clip)
    try:
        return clip_waveform(project.root, clip)
    except MediaError as exc:  # ffmpeg's words name the file by its absolute path: shown as the project names it
        raise HTTPException(422, project_relative(str(exc), project.root)) from None


def project_relative(message: str, root: Path) -> str:
    """``message`` with the project folder's absolute path left out: where the server keeps the project is no
    business of an annotator's (and says who runs it and how)."""
    for spelling in dict.fromkeys((str(root), str(root.resolve()))):
        message = message.replace(spelling + "/", "").replace(spelling, "the project folder")
    return message
