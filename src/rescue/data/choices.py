"""The closed choices the command line and the library share, each written once (a ``Literal``, its values
derived from it). Light on purpose: ``rescue run --help`` reads it.

How a sample's video reaches a model: ``frames`` (JPEG images sampled inside the rows) or
``clip`` (the window as one video). ``rescue run --video-input`` takes these; ``rescue build --video-input``
takes them and ``none`` (subtitles only).

Which annotation is RPP's gold: ``auto`` (a sample's ``relation_pattern`` when any row has one, else its
``relation_cycle_state``), ``relation_pattern`` or ``relation_cycle_state``."""

from __future__ import annotations

from typing import Literal, get_args

VideoInput = Literal["frames", "clip"]
VIDEO_INPUTS: tuple[str, ...] = get_args(VideoInput)

BuildVideoInput = Literal[VideoInput, "none"]
# The build's choices: the same two, then ``none``; listed in this order in its messages.
BUILD_VIDEO_INPUTS: tuple[str, ...] = (*sorted(VIDEO_INPUTS), "none")

RppGold = Literal["auto", "relation_pattern", "relation_cycle_state"]
RPP_GOLD_CHOICES: tuple[str, ...] = get_args(RppGold)
DEFAULT_RPP_GOLD: RppGold = "auto"
