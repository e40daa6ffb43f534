"""Submissions: a run packed as one bundle anyone can re-derive (``rescue submit``), and its verification
(``rescue verify``). docs/submissions.md describes the bundle format, the checks and the attack table."""

# The face is its modules; nothing is imported here, so ``rescue --help`` stays quick.
__all__ = ["bundle", "facts", "submit", "verify"]
