"""Estimated media tokens, for ``rescue run --dry-run`` only: what a request records is the provider's own
count from the answer's usage (``image_tokens`` / ``video_tokens``)."""

from __future__ import annotations

import math

# Servers that take video_url sample it themselves; Qwen-VL's default is 2 frames a second, with two
# consecutive frames merged into one set of tokens.
VIDEO_SAMPLE_FPS = 2.0
VIDEO_TEMPORAL_MERGE = 2
# The text label rescue puts before each frame ("[frame at 12.00 s, row 5]").
FRAME_LABEL_TOKENS = 12


def image_tokens(width: int, height: int) -> int:
    """Tokens of one image by the 28-pixel patches of Qwen2-VL-style encoders (GPT-4o's tiles land close)."""
    return max(1, math.ceil(width / 28)) * max(1, math.ceil(height / 28))


# OpenAI's "low" detail: a fixed count per image, whatever its size.
LOW_DETAIL_TOKENS = 85


def frames_tokens(count: int, width: int, height: int, *, detail: str | None = None) -> int:
    """The estimated input tokens of ``count`` frames of ``width`` x ``height`` (with their labels)."""
    per_image = LOW_DETAIL_TOKENS if detail == "low" else image_tokens(width, height)
    return count * (per_image + FRAME_LABEL_TOKENS)


def clip_tokens(seconds: float, width: int, height: int) -> int:
    """The estimated input tokens of a clip of ``seconds`` at ``width`` x ``height``."""
    return math.ceil(seconds * VIDEO_SAMPLE_FPS / VIDEO_TEMPORAL_MERGE) * image_tokens(width, height) if seconds else 0
