"""Video mode (``rescue run --mode video``): each instance's prompt carries the media of its context window.

- :mod:`~rescue.video._locate` finds each sample's clip under ``--media-root`` (``source_file``, id, or a
  ``rescue build`` manifest);
- :mod:`~rescue.video._window` says which stretch of the clip an instance may see (never the hidden row);
- :mod:`~rescue.video._plan` picks the frames (or the clip window) inside it;
- :mod:`~rescue.video._store` makes each frame and clip once, keyed by the source's content hash;
- :mod:`~rescue.video._context` ties them together for a run and puts the media into the prompts.

The modules are private (``_locate`` ...); the names in ``__all__`` are the face.

Layer: above ``tasks`` (it reads a task's context window), below ``engine`` (the runner calls it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rescue.video._options import MEDIA_MATCHES, VIDEO_INPUTS, VideoError, VideoOptions

if TYPE_CHECKING:
    from rescue.video._context import PreparedMedia, VideoContext, VideoTask
    from rescue.video._locate import find_media
    from rescue.video._window import MediaWindow, Span, media_window

# The parts that read tasks and media, imported on first use: rescue.video._options (the video options' one
# declaration, which `rescue run --help` reads for its defaults) must not bring them in.
_LAZY = {"PreparedMedia": "_context", "VideoContext": "_context", "VideoTask": "_context", "find_media": "_locate",
         "MediaWindow": "_window", "Span": "_window", "media_window": "_window"}

__all__ = [
    "MEDIA_MATCHES", "VIDEO_INPUTS", "MediaWindow", "PreparedMedia", "Span", "VideoContext", "VideoError",
    "VideoOptions", "VideoTask", "check_video_config", "find_media", "media_window",
]


def check_video_config(video: Any, batch_size: str) -> VideoOptions:
    """The video options of a run in a video mode; raises :class:`VideoError` for what cannot work."""
    if video is None or (isinstance(video, dict) and not video.get("media_root")) or (
        isinstance(video, VideoOptions) and not video.media_root
    ):
        raise VideoError("--mode video needs --media-root DIR: the folder holding the samples' videos "
                         "(or a `rescue build --out` folder)")
    options = VideoOptions.from_json(video, "config video")
    if batch_size not in ("1", "authors"):
        raise VideoError(f"--batch-size {batch_size}: video mode sends one instance per request (each has its "
                         "own media window; a shared request would show an earlier item what is hidden from it)")
    return options


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"rescue.video.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'rescue.video' has no attribute {name!r}")
