"""Every public function, class and method of the library says what it does (issue #25, item 7).

Read with ``ast`` from ``src/rescue`` (nothing is imported): a module-level function or class whose name does
not start with ``_``, and a public method of a public class, needs a docstring. ``rescue.testing`` (the test
servers and scripts) is left out, and so are dunder methods, overrides of a documented base's method
(a method of the same name on a base class defined in rescue), pydantic validators and ``@overload`` stubs.
"""

from __future__ import annotations

import ast
from pathlib import Path

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
