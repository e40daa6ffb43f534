"""How a report is computed, declared once: :class:`ReportOptions` and the statistical defaults it holds.

``rescue report`` takes its defaults from here, and so do the report's functions (bootstrap, comparisons,
leaderboard, video gains) called from Python. Light on purpose (no numpy, no pandas): ``rescue report --help``
reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from rescue.data.choices import SPLITS_FILE

# The bootstrap's resampling unit: the session group (one couple; one family, the clips whose casts share at
# least two people), or each clip.
Cluster = Literal["group", "sample"]
CLUSTERS: tuple[str, ...] = get_args(Cluster)
DEFAULT_CLUSTER: Cluster = "group"
N_RESAMPLES = 1000  # bootstrap resamples (0: no intervals)
LEVEL = 0.95  # the confidence level of the intervals
ALPHA = 0.05  # the significance level of the markers


@dataclass
class ReportOptions:
    """How a report is computed: resamples, seed, interval level, alpha, context rows, HTML, resampling unit."""

    n_resamples: int = N_RESAMPLES
    seed: int = 0
    level: float = LEVEL
    alpha: float = ALPHA
    context_rows: int = 8
    html: bool = True
    cluster: str = DEFAULT_CLUSTER  # the bootstrap's resampling unit: "group" (session group) or "sample"
    groups: Path | None = None  # a sample_id,group CSV; None: session groups inferred from the data
    allow_mixed: bool = False  # show runs that are not comparable side by side instead of refusing
    reference: str | None = None  # "paper": the published numbers as reference rows and a reproduction section
    figures: bool | None = None  # None: draw them when matplotlib (the plot extra) is installed; True: require it
    figure_formats: tuple[str, ...] = ("png",)  # PNG (the page inlines it) and any of FIGURE_FORMATS asked for
    progress: Callable[[str], None] | None = None  # told each step as it starts
    split: str | None = None  # only the records of this split of the ``splits`` file (rescue splits)
    splits: Path = Path(SPLITS_FILE)
