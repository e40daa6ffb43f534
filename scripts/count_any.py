"""Count how much of rescue's code is typed ``Any`` (issue #36 item 4), on any checkout.

    python scripts/count_any.py [--root CHECKOUT]

It parses every ``.py`` file under ``CHECKOUT/src/rescue`` (no import, so an old or broken checkout counts too)
and prints three numbers:

``Any annotations``
    Annotations that mention ``Any`` anywhere in their type: each parameter (``*args`` and ``**kwargs`` included),
    each return type and each annotated variable or class field counts once, however many ``Any`` it holds
    (``dict[str, Any] | None`` is one). Quoted annotations are parsed and counted the same way.
``Any references``
    Every ``Any`` (``Any`` or ``typing.Any``) in code: annotations, type aliases, ``cast`` and model arguments.
    Imports, comments and docstrings are not code and do not count. The issue's grep of the word ``Any`` (928 at
    b3040fe) also counted the import lines and prose.
``dict[str, Any]``
    Every ``dict[str, Any]`` (also spelled ``Dict[str, Any]`` or ``typing.Dict``) in code, in annotations or not.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Counts:
    """The three counts of one file or of a whole tree."""

    annotations: int = 0
    references: int = 0
    dict_str_any: int = 0

    def __iadd__(self, other: Counts) -> Counts:
        self.annotations += other.annotations
        self.references += other.references
        self.dict_str_any += other.dict_str_any
        return self


def _is_any(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "Any") or (isinstance(node, ast.Attribute) and node.attr == "Any")


def _is_dict_str_any(node: ast.AST) -> bool:
    if not isinstance(node, ast.Subscript):
        return False
    base = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
    args = node.slice
    return (base in ("dict", "Dict") and isinstance(args, ast.Tuple) and len(args.elts) == 2
            and isinstance(args.elts[0], ast.Name) and args.elts[0].id == "str" and _is_any(args.elts[1]))


def _expanded(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node``, quoted annotations parsed in place."""
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            if "Any" not in child.value:
                continue
            try:
                quoted = ast.parse(child.value.strip(), mode="eval")
            except (SyntaxError, ValueError):
                continue  # a string that is no type
            yield from ast.walk(quoted)
        else:
            yield child


def _annotations(tree: ast.AST) -> Iterator[ast.AST]:
    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            yield node.annotation
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            yield node.returns


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes (prose, whatever words it holds)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def count_source(source: str) -> Counts:
    """The counts of one module's source."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    counts = Counts()
    counts.annotations = sum(any(_is_any(n) for n in _expanded(a)) for a in _annotations(tree))
    for node in ast.walk(tree):
        if id(node) in prose:
            continue
        parts = _expanded(node) if isinstance(node, ast.Constant) else (node,)
        for part in parts:
            counts.references += _is_any(part)
            counts.dict_str_any += _is_dict_str_any(part)
    return counts


def count_tree(root: Path) -> Counts:
    """The counts over ``root/src/rescue``."""
    package = root / "src" / "rescue"
    if not package.is_dir():
        raise SystemExit(f"{package}: no such folder (--root names a rescue checkout)")
    total = Counts()
    for path in sorted(package.rglob("*.py")):
        total += count_source(path.read_text(encoding="utf-8"))
    return total


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the checkout to count (default: this one)")
    counts = count_tree(parser.parse_args(argv).root)
    print(f"Any annotations: {counts.annotations}")
    print(f"Any references: {counts.references}")
    print(f"dict[str, Any]: {counts.dict_str_any}")


if __name__ == "__main__":
    main()
