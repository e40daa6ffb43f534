"""What seeing the video adds: each model's video-mode run against its dialogue run, paired on the
instances both answered (paired bootstrap for every compared metric, McNemar for right/wrong ones).

A video run shows the model the same transcript as a dialogue run (``video``) or the transcript with the
annotated cues (``video+cues``) plus the media of each instance's context, so the difference on shared
instances is what the media adds (``video``) or adds beyond the annotated cues (``video+cues`` against an
``audiovisual`` run, when there is one).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from rescue.data.groups import SessionGroups
from rescue.display import markdown_table
from rescue.report.bootstrap import DEFAULT_CLUSTER
from rescue.report.options import ALPHA, LEVEL, N_RESAMPLES
from rescue.report.comparisons import Comparison, compare_systems, p_text
from rescue.report.html import HtmlTable
from rescue.report.runs import System
from rescue.report.recompute import Aggregates
from rescue.tasks.base import VIDEO_MODES

# The text-only run a video mode is compared with: the same prompt without the media.
BASELINE_MODE = {"video": "dialogue", "video+cues": "audiovisual"}


def video_pairs(systems: Sequence[System]) -> list[tuple[System, System]]:
    """(video system, text system) of the same model: ``video`` with ``dialogue``; ``video+cues`` with
    ``audiovisual`` when the model has one, else with ``dialogue``."""
    pairs: list[tuple[System, System]] = []
    for video in systems:
        if video.mode not in VIDEO_MODES:
            continue
        same_model = [s for s in systems if s.model == video.model and s.mode not in VIDEO_MODES]
        preferred = [s for s in same_model if s.mode == BASELINE_MODE[video.mode]]
        fallback = [s for s in same_model if s.mode == "dialogue"]
        pairs.extend((video, text) for text in preferred or fallback)
    return pairs


def video_gains(systems: Sequence[System], aggregates: Aggregates, scopes: Sequence[str], *,
                n_resamples: int = N_RESAMPLES, seed: int = 0, level: float = LEVEL, cluster: str = DEFAULT_CLUSTER,
                groups: SessionGroups | None = None) -> list[Comparison]:
    """One comparison per (pair, task, scope, metric); ``diff`` is video minus text."""
    gains: list[Comparison] = []
    for video, text in video_pairs(systems):
        gains.extend(compare_systems([video, text], aggregates, scopes, n_resamples=n_resamples, seed=seed,
                                     level=level, cluster=cluster, groups=groups))
    return gains


def _p(value: float | None) -> str:
    # This table has always printed the floor without a space; kept so that its files read as before.
    return p_text(value, floor="<0.001")


def _rows(gains: Sequence[Comparison], alpha: float) -> list[list[str]]:
    rows = []
    for c in gains:
        marker = "†" if c.p_bootstrap is not None and c.p_bootstrap < alpha else ""
        mcnemar = "" if c.p_mcnemar is None else f"{c.mcnemar_only_a}/{c.mcnemar_only_b}, {_p(c.p_mcnemar)}"
        rows.append([c.a, c.b, c.scope, c.metric, str(c.instances), c.column.format(c.value_b),
                     c.column.format(c.value_a),
                     f"{c.column.format(c.diff)} [{c.column.format(c.low)}, {c.column.format(c.high)}]",
                     _p(c.p_bootstrap) + marker, mcnemar])
    return rows


HEADERS = ["Video run", "Text run", "Scope", "Metric", "Shared instances", "Text", "Video", "Gain [CI]",
           "p (paired bootstrap)", "McNemar video-only/text-only, p"]


def gains_markdown(gains: Sequence[Comparison], alpha: float = ALPHA) -> str:
    """What the video adds, as Markdown: each model's video run against its text run."""
    intro = ("Each model's video-mode run against its text run on the instances both answered. Gain = video "
             "minus text, with its paired-bootstrap interval.")
    lines = ["# What the video adds", "", intro, ""]
    return "\n".join(lines) + "\n" + markdown_table(HEADERS, _rows(gains, alpha)) + f"\n†: p < {alpha}.\n"


def gains_csv(gains: Sequence[Comparison]) -> str:
    """What the video adds, as CSV."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["video", "text", "task", "scope", "metric", "instances", "text_value", "video_value", "gain",
                     "ci_low", "ci_high", "p_bootstrap", "mcnemar_video_only", "mcnemar_text_only", "p_mcnemar"])
    for c in gains:
        writer.writerow([c.a, c.b, c.task, c.scope, c.metric, c.instances, c.value_b, c.value_a, c.diff, c.low,
                         c.high, c.p_bootstrap, c.mcnemar_only_a, c.mcnemar_only_b, c.p_mcnemar])
    return out.getvalue()


def gains_table(gains: Sequence[Comparison], alpha: float) -> HtmlTable:
    """What the video adds, as a table of report.html."""
    return HtmlTable("What the video adds (video run minus text run, paired)", HEADERS, _rows(gains, alpha),
                     f"†: p < {alpha}. Only instances both runs answered are compared.")
