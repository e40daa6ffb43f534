"""rescue: RESCUE-Bench end to end, from annotated therapy sessions to a leaderboard."""

from rescue._version import __version__

__all__ = ["__version__"]
