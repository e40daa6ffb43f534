"""rescue: RESCUE-Bench end to end, from annotated therapy sessions to a leaderboard."""

__version__ = "0.1.0"
