"""One error tree (issue #36, item 1): every public exception class rescue defines is a RescueError with one of
the documented exit codes, so a user meets a one-line message and a known exit code, never a traceback. The only
exceptions outside it are the stop signals (SIGTERM), which, like Ctrl-C, are no ``Exception`` so that no
``except Exception`` swallows them, and carry their exit code too."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import rescue
from rescue import errors
from rescue.data import errors as data_errors
from rescue.errors import (EXIT_ERROR, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_NOT_VERIFIED, EXIT_TERMINATED, RescueError,
                           exit_code)

EXIT_CODES = {EXIT_NOT_VERIFIED, EXIT_ERROR, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_TERMINATED}


def _public_exceptions(modules: list[ModuleType]) -> dict[str, type[BaseException]]:
    found = {}
    for module in modules:
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException) and value.__module__.startswith("rescue")
                    and not value.__name__.startswith("_") and not name.startswith("_")):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def _outside_the_tree(classes: dict[str, type[BaseException]]) -> list[str]:
    wrong = []
    for name, cls in sorted(classes.items()):
        code = getattr(cls, "exit_code", None)
        if issubclass(cls, Exception) and not issubclass(cls, RescueError):
            wrong.append(f"{name}: not a RescueError")
        elif not isinstance(code, int) or code not in EXIT_CODES:
            wrong.append(f"{name}: exit code {code!r}, not one of {sorted(EXIT_CODES)}")
    return wrong


def test_every_exception_of_the_errors_modules_is_a_rescue_error_with_an_exit_code():
    classes = _public_exceptions([errors, data_errors])
    assert len(classes) > 50
    assert _outside_the_tree(classes) == []


def _every_module() -> list[ModuleType]:
    modules = [rescue]
    for info in pkgutil.walk_packages(rescue.__path__, "rescue."):
        if info.name.endswith("__main__"):
            continue  # running it is the command itself
        modules.append(importlib.import_module(info.name))
    return modules


@pytest.mark.slow  # imports all of rescue (review's FastAPI, inspect_ai, matplotlib...); the test above is quick
def test_every_public_exception_of_the_whole_package_is_a_rescue_error_with_an_exit_code():
    """Walks every module, not only the errors modules: a class defined or re-exported anywhere counts."""
    classes = _public_exceptions(_every_module())
    assert {c.__module__ for c in classes.values()} <= {"rescue.errors", "rescue.data.errors"}, \
        "exceptions defined outside the errors modules (tests/test_layers.py says where they go)"
    assert _outside_the_tree(classes) == []


@pytest.mark.parametrize(("exc", "code"), [
    (KeyboardInterrupt(), EXIT_INTERRUPTED),
    (errors.Terminated(), EXIT_TERMINATED),
    (errors.RunInterrupted("stopped"), EXIT_INTERRUPTED),
    (errors.TransientError("timeout", "no answer"), EXIT_INCOMPLETE),
    (errors.JudgeConfigError("the same judge is given twice"), EXIT_ERROR),
    (ValueError("a bug"), EXIT_ERROR),
])
def test_the_exit_code_of_each_kind_of_stop(exc, code):
    assert exit_code(exc) == code


def test_the_docs_exit_code_table_lists_the_codes_of_the_code():
    """docs/runs.md's exit code table is held to rescue.errors: a code added or changed there fails here."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "runs.md").read_text(encoding="utf-8")
    table = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}
    assert documented == {0} | EXIT_CODES
