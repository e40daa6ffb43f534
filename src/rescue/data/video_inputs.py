"""How a sample's video reaches a model, the one list: ``frames`` (JPEG images sampled inside the rows) or
``clip`` (the window as one video). ``rescue run --video-input`` takes these; ``rescue build --video-input``
takes them and ``none`` (subtitles only). Light on purpose: ``rescue run --help`` reads it."""

from __future__ import annotations

from typing import Literal, get_args

VideoInput = Literal["frames", "clip"]
VIDEO_INPUTS: tuple[str, ...] = get_args(VideoInput)

BuildVideoInput = Literal[VideoInput, "none"]
# The build's choices: the same two, then ``none``; listed in this order in its messages.
BUILD_VIDEO_INPUTS: tuple[str, ...] = (*sorted(VIDEO_INPUTS), "none")
