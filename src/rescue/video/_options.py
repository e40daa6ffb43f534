"""The settings of video mode: where the media is, how a sample finds its clip, what is sent per instance."""

from __future__ import annotations

import typing
from dataclasses import asdict, dataclass
from typing import Any

from rescue.errors import VideoError as VideoError
from rescue.data.choices import IMAGE_DETAILS as IMAGE_DETAILS, MEDIA_MATCHES as MEDIA_MATCHES
from rescue.data.choices import VIDEO_INPUTS as VIDEO_INPUTS, ImageDetail, MediaMatch, VideoInput



@dataclass
class VideoOptions:
    """``--media-root`` and friends. Every field but ``media_root`` and ``workers`` decides what a model sees,
    so those are recorded in results.json and are part of every media cache key."""

    media_root: str = ""
    media_match: MediaMatch = "auto"  # auto: a `rescue build` manifest if there is one, else source_file, else id
    video_input: VideoInput = "frames"
    frame_rate: float = 1.0  # frames per second of context, on a grid anchored at the clip's start
    max_frames: int = 16  # per request; more are thinned evenly over the window
    frame_size: int = 448  # longest side in pixels of a frame or of the cut clip
    jpeg_quality: int = 4  # ffmpeg's -q:v for frames, 2 (best) to 31
    image_detail: ImageDetail | None = None  # OpenAI-style APIs: "low" is a fixed small token count per frame
    workers: int = 2  # ffmpeg processes at once while preparing media

    def __post_init__(self) -> None:
        self._check_types()
        if self.media_match not in MEDIA_MATCHES:
            raise VideoError(f"--media-match {self.media_match!r}: choose one of {', '.join(MEDIA_MATCHES)}")
        if self.video_input not in VIDEO_INPUTS:
            raise VideoError(f"--video-input {self.video_input!r}: choose one of {', '.join(VIDEO_INPUTS)}")
        if not self.frame_rate > 0:
            raise VideoError(f"--frame-rate {self.frame_rate}: must be a positive number of frames per second")
        if self.max_frames < 1:
            raise VideoError(f"--max-frames {self.max_frames}: must be at least 1")
        if not 16 <= self.frame_size <= 4096:
            raise VideoError(f"--frame-size {self.frame_size}: use 16 to 4096 pixels (the longest side)")
        if not 2 <= self.jpeg_quality <= 31:
            raise VideoError(f"jpeg_quality {self.jpeg_quality}: use 2 (best) to 31")
        if self.image_detail is not None and self.image_detail not in IMAGE_DETAILS:
            raise VideoError(f"--image-detail {self.image_detail!r}: choose one of {', '.join(IMAGE_DETAILS)}")
        if self.workers < 1:
            raise VideoError("media workers must be at least 1")

    def _check_types(self) -> None:
        # From JSON or rescue.evaluate(frame_size="big") a value may be of any type: a VideoError, not a TypeError.
        for name, hint in typing.get_type_hints(type(self)).items():
            value = getattr(self, name)
            allowed = _kinds(hint)
            if isinstance(value, bool) or not isinstance(value, allowed):
                flag = {"workers": "--media-workers", "jpeg_quality": "jpeg_quality"}.get(name, "--" + name.replace("_", "-"))
                kinds = " or ".join("None" if t is type(None) else t.__name__ for t in allowed)
                raise VideoError(f"{flag} {value!r}: expected {kinds}")

    def to_json(self) -> dict[str, Any]:
        """The options as JSON (results.json's config)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | VideoOptions | None, origin: str = "video options") -> VideoOptions:
        """Options from JSON (results.json, a suite), checked; VideoError naming an unknown option."""
        if isinstance(data, VideoOptions):
            return data
        if not isinstance(data, dict):
            raise VideoError(f"{origin}: expected an object of video options")
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise VideoError(f"{origin}: unknown video option(s) {', '.join(sorted(unknown))}")
        return cls(**data)


def _kinds(hint: Any) -> tuple[type, ...]:
    """The runtime types a field's type allows: a Literal's (text here), each of a union's, an int for a float."""
    if typing.get_origin(hint) is typing.Literal:
        return (str,)
    if typing.get_args(hint):
        return tuple(kind for arg in typing.get_args(hint) for kind in _kinds(arg))
    return (float, int) if hint is float else (hint,)
