"""``rescue report``: tables, figures and the HTML page read from run directories."""

# The report's face is its modules; nothing is imported here, so ``rescue report --help`` stays quick.
__all__ = [
    "analyses",
    "bootstrap",
    "build",
    "columns",
    "comparability",
    "comparisons",
    "failures",
    "figures",
    "html",
    "leaderboard",
    "options",
    "people",
    "outcomes",
    "preference",
    "recompute",
    "reference",
    "runs",
    "significance",
    "summary",
    "video_gain",
]
