"""``rescue build``'s defaults are written once, in rescue.builder.options.BuildOptions (issue 36 item 2): the
command's parameters are made from it, and BuildConfig, AnnotateSettings and SessionSpec take their defaults from
it. A default restated anywhere (a literal in a field, in the command, in a typer.Option) fails here."""

from __future__ import annotations

import ast
import dataclasses
import os
import subprocess
import sys

import typer
from source_tree import SRC, parsed

from rescue.builder import AnnotateSettings, BuildConfig, SessionSpec
from rescue.builder.options import NO_DEFAULT, build_options
from rescue.cli._app import app
from rescue.engine.run_options import option

# The library's classes and where each is written: every field named like a declared option takes its default
# from the declaration.
HOLDERS = {"AnnotateSettings": ("builder/annotate.py", AnnotateSettings), "BuildConfig": ("builder/pipeline.py", BuildConfig),
           "SessionSpec": ("builder/inputs.py", SessionSpec)}
# The command line's form of a library default: check_alignment is --no-align-check's opposite, and the library's
# max_failures None (never stop) is the command line's 0; as_run options are None in the library (rescue run's).
LIBRARY_FORM = {"no_align_check": lambda value: not value}


def _fields_with_defaults(path: str, cls: str) -> dict[str, ast.expr]:
    tree = parsed(SRC / path)
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls]
    return {stmt.target.id: stmt.value for stmt in node.body
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None}


def _names_the_declaration(value: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == name and isinstance(n.value, ast.Name)
               and n.value.id == "BuildOptions" for n in ast.walk(value))


def test_every_library_default_is_read_from_the_declaration():
    restated, unread = [], []
    by_field = {d.field: d for d in build_options()}
    for cls, (path, holder) in HOLDERS.items():
        written = _fields_with_defaults(path, cls)
        for field in dataclasses.fields(holder):
            declared = by_field.get(field.name)
            if declared is None or declared.default is None or declared.flag.as_run or field.name not in written:
                continue  # None: an option not given (each holder says what that means), no value to restate
            if not _names_the_declaration(written[field.name], declared.name):
                restated.append(f"{cls}.{field.name} = {ast.unparse(written[field.name])}")
            if field.default != LIBRARY_FORM.get(declared.name, lambda value: value)(declared.default):
                unread.append(f"{cls}.{field.name}")
    assert restated == [], f"defaults written again instead of read from BuildOptions: {restated}"
    assert unread == []


def test_the_command_states_no_default_of_its_own():
    tree = parsed(SRC / "cli" / "_build_cmds.py")
    typer_options = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call)
                     and ast.unparse(n.func) in ("typer.Option", "typer.Argument")
                     and any(isinstance(a, ast.Constant) for a in [*n.args, *(k.value for k in n.keywords)])]
    assert typer_options == [], "rescue build's options are made from BuildOptions, not written here"
    defaults = {d.default for d in build_options() if isinstance(d.default, (int, float))
                and not isinstance(d.default, bool) and d.default != 0}
    literals = sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and not isinstance(n.value, bool)
                       and isinstance(n.value, (int, float)) and n.value in defaults})
    assert literals == [], f"_build_cmds.py restates a default of BuildOptions: {literals}"


def test_the_command_line_shows_the_declared_defaults():
    command = typer.main.get_command(app).commands["build"]  # type: ignore[attr-defined]
    shown = {param.name: param for param in command.params}
    assert list(shown) == [d.name for d in build_options()]
    for declared in build_options():
        expected = option(declared.name).default if declared.flag.as_run else declared.default
        assert shown[declared.name].required == (expected is NO_DEFAULT), declared.name
        if expected is not NO_DEFAULT:
            assert shown[declared.name].default == expected, declared.name
        assert list(shown[declared.name].opts) == (list(declared.flag.flags) or [declared.name]), declared.name


def test_build_help_reads_the_declaration_without_the_pipeline():
    code = ("import sys; sys.argv = ['rescue', 'build', '--help']\nfrom rescue.cli import main\ntry:\n    main()\n"
            "except SystemExit:\n    pass\nprint('MODULES', ' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert "--frames-per-line" in done.stdout
    modules = set(done.stdout.split("MODULES", 1)[1].split())
    assert "rescue.builder.options" in modules
    assert not [m for m in ("rescue.builder.pipeline", "rescue.builder.inputs", "rescue.media", "httpx", "pydantic")
                if m in modules]
