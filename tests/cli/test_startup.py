"""The CLI's start-up loads less (issue #36 item 5, #47 item 1): ``rescue.cli._startup``'s deferred names are the
modules mypy reads, none of them is imported by importing the CLI, each resolves when a command reads it, and the
command modules defer their imports through it rather than importing inside their functions. Nothing of typer's
or click's is reached through a private name or patched on an instance: the CLI uses their public API only."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

from source_tree import SRC, parsed

from rescue.cli import _startup

STARTUP = SRC / "cli" / "_startup.py"


def _typed_modules() -> dict[str, str]:
    """alias -> module, as the ``TYPE_CHECKING`` block imports them for mypy."""
    for node in parsed(STARTUP).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return {a.asname or a.name: a.name for n in node.body if isinstance(n, ast.Import) for a in n.names}
    raise AssertionError("no TYPE_CHECKING block in rescue/cli/_startup.py")


DEFERRED = _typed_modules()


def test_each_deferred_name_is_the_module_mypy_reads():
    assert DEFERRED, "the TYPE_CHECKING block lists no module"
    at_run_time = {name: getattr(_startup, name)._name for name in DEFERRED}
    assert at_run_time == DEFERRED
    assert set(_startup.__all__) == set(DEFERRED) | {"loaded"}


def test_importing_the_cli_imports_no_deferred_module():
    code = ("import sys, rescue.cli\nfrom rescue.cli import _startup\n"
            f"print([m for m in {sorted(DEFERRED.values())!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.stdout.strip() == "[]"


def test_a_deferred_module_is_imported_when_read():
    # rescue.files is small and not imported by the CLI's start (the test above): read it in a fresh process.
    code = ("import sys\nfrom rescue.cli._startup import files\nassert 'rescue.files' not in sys.modules\n"
            "print(callable(files.sha256_file), 'rescue.files' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.stdout.split()[-1] == "True"


def test_a_missing_name_is_an_attribute_error():
    try:
        _startup.files.no_such_name  # noqa: B018 - the read is the test
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("a missing name was read")


def _deferring_imports(path) -> list[str]:
    """The imports inside functions of a command module whose module ``_startup`` defers."""
    found = []
    deferred = set(DEFERRED.values())

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, ast.ImportFrom) and child.module in deferred:
                found.append(f"{path.name}:{child.lineno}: from {child.module} import ...")
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(parsed(path), False)
    return found


def test_command_modules_defer_through_the_one_module():
    found = [hit for path in sorted((SRC / "cli").glob("_*.py")) if path != STARTUP for hit in _deferring_imports(path)]
    assert not found, "import these through rescue.cli._startup's deferred names:\n" + "\n".join(found)


def _private_reaches(path) -> list[str]:
    """Where ``path`` imports a third-party module's private name (``typer._click``, ``from x import _y``) or
    puts a function on an object as a method (``types.MethodType``): the two ways the CLI used to reach inside
    typer and click."""
    found = []
    for node in ast.walk(parsed(path)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        for name in names:
            if not name.startswith("rescue") and any(part.startswith("_") and not part.startswith("__")
                                                     for part in name.split(".")):
                found.append(f"{path.name}:{node.lineno}: {name}")
        if isinstance(node, ast.Attribute) and node.attr == "MethodType":
            found.append(f"{path.name}:{node.lineno}: types.MethodType")
    return found


def test_the_cli_uses_typer_and_click_through_their_public_api_only():
    found = [hit for path in sorted((SRC / "cli").glob("*.py")) for hit in _private_reaches(path)]
    assert not found, "\n".join(found)


def test_the_scan_finds_what_it_looks_for(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import types\nfrom typer._click import Context\nfrom typer.core import _split_opt\n"
                      "import aiohttp.helpers\nx = types.MethodType(len, 1)\nfrom rescue.cli import _app\n",
                      encoding="utf-8")
    assert [hit.split(": ", 1)[1] for hit in _private_reaches(sample)] == [
        "typer._click", "typer._click.Context", "typer.core._split_opt", "types.MethodType"]
