"""The closed choices (and default file names) the command line and the library share, each written once (a
``Literal``, its values derived from it). Light on purpose: ``rescue run --help`` reads it.

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

# The evidence a prompt shows: the transcript's modes, then the video modes that add each instance's media.
Mode = Literal["dialogue", "audio", "visual", "audiovisual", "video", "video+cues"]
MODES: tuple[str, ...] = get_args(Mode)

# strict: one unknown label voids the answer, prose is not read; lenient: unknown labels are dropped from
# rankings and a clear yes/no is read from prose (as the authors' scripts do), and what it did is recorded.
ParsePolicy = Literal["strict", "lenient"]
PARSE_POLICIES: tuple[str, ...] = get_args(ParsePolicy)

# --thinking, one portable option (rescue.llm._providers maps it to each provider's own switch).
Thinking = Literal["on", "off", "low", "medium", "high"]
THINKING_LEVELS: tuple[str, ...] = get_args(Thinking)

# How a sample finds its video: auto (a `rescue build` manifest if there is one, else source_file, else id).
MediaMatch = Literal["auto", "source_file", "id"]
MEDIA_MATCHES: tuple[str, ...] = get_args(MediaMatch)

# OpenAI's image detail levels; None sends none (the server's default).
ImageDetail = Literal["low", "high", "auto"]
IMAGE_DETAILS: tuple[str, ...] = get_args(ImageDetail)

# The file `rescue splits` writes and every --split reads by default.
SPLITS_FILE = "splits.json"

# How an LLM judge grades ER and VP: a 1-5 Likert scale, or the authors' rubric (VP).
JudgeScale = Literal["likert", "authors"]
JUDGE_SCALES: tuple[str, ...] = get_args(JudgeScale)
