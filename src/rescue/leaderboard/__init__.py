"""The public leaderboard: a static site built from verified bundles (``rescue leaderboard build``), the folder of
entries it is built from (``rescue leaderboard add``), and a local run placed on it (``rescue leaderboard rank``).
docs/leaderboard.md describes the site, leaderboard.json's schema and the attack table."""

# The face is its modules; nothing is imported here, so ``rescue --help`` stays quick.
__all__ = ["entries", "rank", "site", "table"]
