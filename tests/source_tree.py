"""rescue's own source, parsed once per test run for the tests that read it with ``ast`` (layers, docstrings)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "rescue"


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The syntax tree of one source file (parsing all of rescue takes about a second; the tests ask often)."""
    return ast.parse(path.read_text(encoding="utf-8"))
