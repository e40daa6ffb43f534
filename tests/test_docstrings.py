"""Every public function, class and method of the library says what it does (issue #25, item 7), and no comment or
docstring carries a measurement (issue #47 item 5): the seconds, megabytes and ratios measured live in
benchmarks/README.md, the source states contracts and reasons.

Read with ``ast`` from ``src/rescue`` (nothing is imported): a module-level function or class whose name does
not start with ``_``, and a public method of a public class, needs a docstring. ``rescue.testing`` (the test
servers and scripts) is left out, and so are dunder methods, overrides of a documented base's method
(a method of the same name on a base class defined in rescue), pydantic validators and ``@overload`` stubs.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
from source_tree import SRC, parsed

EXEMPT_PACKAGES = {"testing"}
# Pydantic's validators and serializers (hooks of the model they sit in) and typing's @overload stubs (the
# implementation after them carries the docstring).
CALLBACK_DECORATORS = {"field_validator", "model_validator", "field_serializer", "model_serializer", "validator",
                       "overload"}


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[str]:
    names = set()
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        while isinstance(target, ast.Attribute):
            names.add(target.attr)
            target = target.value
        if isinstance(target, ast.Name):
            names.add(target.id)
    return names


def _classes() -> dict[str, list[tuple[ast.ClassDef, str]]]:
    """Every class defined in rescue, by name (a method that overrides one of a base's inherits its docstring)."""
    found: dict[str, list[tuple[ast.ClassDef, str]]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append((node, str(path)))
    return found


CLASSES = _classes()


def _base_names(cls: ast.ClassDef) -> list[str]:
    names = []
    for base in cls.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        if isinstance(target, ast.Attribute):
            names.append(target.attr)
        elif isinstance(target, ast.Name):
            names.append(target.id)
    return names


def _documented_on_a_base(cls: ast.ClassDef, method: str, seen: frozenset[str] = frozenset()) -> bool:
    for name in _base_names(cls):
        for base, _ in CLASSES.get(name, []):
            if base.name in seen:
                continue
            for node in base.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == method:
                    return True
            if _documented_on_a_base(base, method, seen | {base.name}):
                return True
    return False


def _is_property_setter(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in node.decorator_list)


def undocumented(path: Path) -> list[str]:
    """The public definitions of one source file that lack a docstring (a file outside ``src`` too: the
    documented task example is checked by the same rule)."""
    tree = parsed(path)
    where = path.relative_to(SRC.parent).as_posix() if path.is_relative_to(SRC.parent) else str(path)
    missing = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            if ast.get_docstring(node) is None and not _decorator_names(node) & CALLBACK_DECORATORS:
                missing.append(f"{where}:{node.lineno}: {node.name}")
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if (isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_")
                            and ast.get_docstring(item) is None and not _is_property_setter(item)
                            and not _decorator_names(item) & CALLBACK_DECORATORS
                            and not _documented_on_a_base(node, item.name)):
                        missing.append(f"{where}:{item.lineno}: {node.name}.{item.name}")
    return missing


def test_every_public_function_class_and_method_has_a_docstring():
    missing = [entry for path in sorted(SRC.rglob("*.py"))
               if path.relative_to(SRC).parts[0] not in EXEMPT_PACKAGES for entry in undocumented(path)]
    assert not missing, f"{len(missing)} public definitions without a docstring:\n" + "\n".join(missing)


# The language of a measurement (units of contracts, such as "a 25 MB upload limit" or "in 1 MiB blocks", are not):
# CPU time, a ratio of speed or size, a figure given as roughly so much, a cost or a peak with its figure, a share
# of a second or of the bytes.
_UNIT = r"\d[\d.,]*\s*(?:ms|s|seconds?|minutes?|KB|MB|GB|KiB|MiB|GiB)\b"
MEASUREMENT = re.compile("|".join((
    r"\bCPU[- ]s\b|\bs of CPU\b|\bseconds? of CPU\b",
    r"\d[\d.]*\s*(?:x|×)\s+(?:faster|slower|less|more|smaller|larger)\b",
    r"(?:\babout|\baround|\bnear|\bnearly|\broughly|~)\s*" + _UNIT,
    r"\b(?:cost|costs|costing|took|takes|spent|saves?|saved|peak)\b[^.;:]{0,40}?" + _UNIT,
    r"\b(?:a|one|two) (?:thirds?|fifths?|tenths?|quarters?) of (?:a second|the bytes|the time|the CPU|its CPU)",
    r"\bcosts? a (?:third|fifth|tenth|quarter|half)\b",
)), re.IGNORECASE)


def _comments_and_docstrings(path: Path) -> list[list[tuple[int, str]]]:
    """The comments (each run of comment lines one block) and docstrings of one source file, line by line."""
    text = path.read_text(encoding="utf-8")
    blocks: list[list[tuple[int, str]]] = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            line = (token.start[0], token.string.lstrip("#").strip())
            if blocks and blocks[-1][-1][0] == line[0] - 1:
                blocks[-1].append(line)
            else:
                blocks.append([line])
    for node in ast.walk(parsed(path)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                blocks.append([(node.body[0].lineno + n, line.strip()) for n, line in enumerate(doc.splitlines())])
    return blocks


def measurements(path: Path) -> list[str]:
    """The comment and docstring lines of one source file that state a measurement (one that runs on to the next
    line counts on the line it starts on)."""
    where = path.relative_to(SRC.parent).as_posix() if path.is_relative_to(SRC.parent) else str(path)
    found = []
    for block in _comments_and_docstrings(path):
        for n, (line, text) in enumerate(block):
            following = text + " " + block[n + 1][1] if n + 1 < len(block) else text
            if any(match.start() < len(text) for match in MEASUREMENT.finditer(following)):
                found.append(f"{where}:{line}: {text}")
    return found


def test_no_comment_or_docstring_carries_a_measurement():
    found = [entry for path in sorted(SRC.rglob("*.py")) for entry in measurements(path)]
    assert not found, ("measured figures belong in benchmarks/README.md, the source states the contract or the "
                       "reason:\n" + "\n".join(found))


@pytest.mark.parametrize(("line", "measured"), [
    ("# importing them would cost `rescue --help` 0.1 s", True),
    ('"""importing them there would cost `rescue --help`\n    0.1 s and prove nothing."""', True),
    ("# the KV cache for 8k tokens is ~200 MB.", True),
    ("# (httpx and all: a fifth of a second)", True),
    ('"""gzip, base64: a tenth of the bytes."""', True),
    ("# a full decode costs a quarter", True),
    ("# 0.135 CPU-s against 0.141", True),
    ("# aiohttp is 3x faster than httpx here", True),
    ("# about 1.5 KB each as objects", True),
    ("# raised the run's peak by 120 MB", True),
    # A contract's unit is not a measurement.
    ("# Chunks stay well under OpenAI's 25 MB upload limit.", False),
    ('"""The SHA-256 of a file\'s bytes, read in 1 MiB blocks."""', False),
    ("# None when the span is under 50 ms", False),
    ("# an hour of video is at most 0.9 GB", False),
    ("# created: seconds since the epoch", False),
])
def test_a_measurement_is_told_from_a_contract(tmp_path, line, measured):
    source = tmp_path / "source.py"
    source.write_text(f"x = 1  {line}\n" if line.startswith("#") else f"def f():\n    {line}\n", encoding="utf-8")
    assert bool(measurements(source)) is measured
