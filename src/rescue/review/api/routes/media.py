"""GET /media/{path}: the clips and subtitles the manifest names, and nothing else.

Only paths listed in the manifest are served, and each must still resolve inside the project folder,
so ``..``, absolute paths, encoded traversal and symlinks pointing out are all refused."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse

from rescue.review.api.deps import CurrentUser, ProjectDep

router = APIRouter(tags=["media"])

_ENCODED = re.compile(r"%(2e|2f|5c|25|00)", re.IGNORECASE)
MEDIA_TYPES = {".mp4": "video/mp4", ".webm": "video/webm", ".vtt": "text/vtt", ".m4a": "audio/mp4"}


def safe_media_path(root: Path, allowed: set[str], raw_path: str, path: str) -> Path:
    # Starlette has already percent-decoded `path`; an encoded dot, slash, backslash, percent or NUL in the
    # raw path (or a '%' surviving decoding) is traversal dressed up, which no manifest path needs.
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
def media(path: str, request: Request, actor: CurrentUser, project: ProjectDep) -> FileResponse:
    raw = request.scope.get("raw_path", b"").decode("latin-1").split("/media/", 1)[-1]
    file = safe_media_path(project.root, project.media_files, raw, path)
    return FileResponse(file, media_type=MEDIA_TYPES.get(file.suffix.lower(), "application/octet-stream"),
                        headers={"Cache-Control": "private, max-age=3600"})
