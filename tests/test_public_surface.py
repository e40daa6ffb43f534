"""The public surface (issue #36 item 5): every package of rescue has a face (``__all__`` in its ``__init__``),
every name a face lists resolves, and the docs name only public things.

Public, as in inspect_ai: a module or name whose own name starts with ``_`` is private; where a module lists
``__all__``, the names it offers are those. The docs may name a public submodule or a name its module offers;
anything else in the docs (a private helper, a name a face does not list, a name that no longer exists) fails
here, so the docs cannot drift from the code.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import types
from pathlib import Path

import pytest
from source_tree import SRC, parsed

ROOT = SRC.parent.parent
DOCS = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
# A dotted name that starts with rescue; not a file name such as `.rescue.lock` or `rescue.toml`'s path.
REFERENCE = re.compile(r"(?<![\w./-])rescue(?:\.[A-Za-z_]\w*)+")


def _declares_all(path: Path) -> bool:
    """Whether the module assigns ``__all__`` (read without importing it)."""
    for node in parsed(path).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return True
    return False


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FACES = sorted(_module_name(p) for p in SRC.rglob("*.py") if _declares_all(p))
PACKAGES = sorted(_module_name(p) for p in SRC.glob("*/__init__.py"))


def test_every_package_has_a_face():
    missing = [package for package in PACKAGES if package not in FACES]
    assert not missing, f"give {missing} an __all__ in their __init__.py: the names (or modules) users import"


def _load(module: str) -> types.ModuleType:
    """The module, imported; skipped when it needs an optional extra that is not installed."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] == "rescue":
            raise
        pytest.skip(f"{module} needs {exc.name} (an optional extra)")


HEAVY = {"rescue.inspect_tasks.bench"}  # imports inspect_ai (about a second); the other faces cover the check


@pytest.mark.parametrize("module", [pytest.param(m, marks=pytest.mark.slow) if m in HEAVY else m for m in FACES])
def test_every_name_a_face_lists_resolves(module):
    loaded = _load(module)
    names = list(loaded.__all__)
    assert len(names) == len(set(names)), f"{module}.__all__ lists a name twice"
    private = [n for n in names if n.startswith("_") and not n.endswith("__")]
    assert not private, f"{module}.__all__ lists private names {private}"
    # A submodule is looked up, not imported: some need an optional extra (inspect_tasks.bench needs inspect_ai).
    missing = [n for n in names if not hasattr(loaded, n) and importlib.util.find_spec(f"{module}.{n}") is None]
    assert not missing, f"{module}.__all__ lists {missing}, which {module} does not define"


def _references() -> list[tuple[str, str]]:
    found = {(m.group(0), path.relative_to(ROOT).as_posix()) for path in DOCS
             for m in REFERENCE.finditer(path.read_text(encoding="utf-8"))}
    return sorted(found)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent that is not a package
        return False


def _problem(reference: str) -> str | None:
    """Why ``reference`` does not name a public thing, or None."""
    parts = reference.split(".")
    owner: object = importlib.import_module("rescue")
    for depth, name in enumerate(parts[1:], start=1):
        dotted = ".".join(parts[: depth + 1])
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            return f"{dotted} is private"
        if isinstance(owner, types.ModuleType) and _is_module(dotted):
            try:
                owner = importlib.import_module(dotted)
            except ModuleNotFoundError as exc:  # an optional extra not installed: the module is there, its names
                if (exc.name or "").split(".")[0] == "rescue":  # cannot be checked
                    raise
                return None
            continue
        if not hasattr(owner, name):
            return f"{dotted} does not exist"
        offered = getattr(owner, "__all__", None) if isinstance(owner, types.ModuleType) else None
        if offered is not None and name not in offered and not name.startswith("__"):
            return f"{dotted} is not in {'.'.join(parts[:depth])}.__all__"
        owner = getattr(owner, name)
    return None


def test_the_docs_name_only_public_names():
    references = _references()
    assert references, "no rescue.* name found in the docs: the pattern is broken"
    wrong = [f"{where}: {problem}" for reference, where in references if (problem := _problem(reference))]
    assert not wrong, "the docs name what is not public (or no longer exists):\n" + "\n".join(wrong)


@pytest.mark.parametrize("reference, problem", [
    ("rescue.review.crud._write", "private"),
    ("rescue.cli.err_console", "not in rescue.cli.__all__"),  # imported there, not offered
    ("rescue.tasks.no_such_thing", "does not exist"),
])
def test_the_docs_check_catches_each_kind_of_wrong_name(reference, problem):
    assert problem in (_problem(reference) or "")
    assert _problem("rescue.review.crud.save_row") is None
