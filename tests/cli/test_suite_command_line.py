"""The command line wins over a suite (issue #42 item 8): `rescue run --suite paper --dry-run --tasks itp` planned
all six tasks, because the test of click's ParameterSource compared typer's own click copy with click's and was
never true. Each case runs the real `rescue` command in a process of its own; the settings are every `[run]` key
of every packaged suite (read from the suite files), and each value given is one the option's declaration
allows and the suite does not set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

from rescue.engine.run_options import option
from rescue.suites import PACKAGED, Suite, load_suite
from rescue.tasks import TASK_NAMES

SUITES = {name: load_suite(name) for name in PACKAGED}
SETTINGS = [(name, key) for name, suite in SUITES.items() for key in suite.run]

# Where a list option finds words it accepts: a setting of another type needs nothing here. A suite that sets a
# list option not named here fails the test below, which says what to add.
_WORDS = {
    "tasks": lambda suite: list(TASK_NAMES),
    "judges": lambda suite: [model.spec for model in suite.models],  # a spec the suite itself resolves
    "models": lambda suite: [model.spec for model in suite.models],
}


def _is(annotation: Any, kind: type) -> bool:
    return annotation is kind or kind in typing.get_args(annotation)


def _writable_default(name: str) -> Any:
    """Option ``name``'s default where the command line can give it (not None, not an empty list), else None."""
    default = option(name).default  # an object() where the field has none (RunConfig fills tasks in)
    usable = isinstance(default, bool | int | float | str | list) and default != [] and _allowed(name, default)
    return default if usable else None


def _allowed(name: str, value: Any) -> bool:
    check = option(name).opt.check
    return check is None or check[0](value)


def other_value(suite: Suite, name: str, avoid: Any) -> Any:
    """A value of option ``name`` other than ``avoid`` that its declaration allows: its default where that
    differs (the case a comparison with the default gets wrong), else one made from its type and choices."""
    declared = option(name)
    annotation, default = declared.annotation, _writable_default(name)
    if default is not None and default != avoid:
        return default
    if typing.get_origin(annotation) is list or _is(annotation, list):
        if name not in _WORDS:
            raise AssertionError(f"the suite sets the list option {name!r}: say in _WORDS where its words come from")
        words = [w for w in _WORDS[name](suite) if [w] != avoid]
        return words[:1]
    if declared.choices:
        return next(c for c in declared.choices if c != avoid)
    if _is(annotation, bool):
        return not avoid
    if _is(annotation, float):
        return next(v for v in (float(avoid or 0) + 0.5, 0.5, 1.0) if v != avoid and _allowed(name, v))
    if _is(annotation, int):
        return next(v for v in (int(avoid or 0) + 1, 1, 2) if v != avoid and _allowed(name, v))
    candidates = [str(default), "1", "2", "authors"]
    return next(v for v in candidates if v != str(avoid) and _allowed(name, v))


def command_line(name: str, value: Any) -> list[str]:
    """The words that give option ``name`` the value ``value`` on `rescue run`'s command line."""
    flags = option(name).opt.flags
    if isinstance(value, bool):
        on, _, off = flags[0].partition("/")
        return [on if value else off]
    cli = option(name).opt.cli
    if isinstance(value, list):
        if cli is not None and _is(cli, list):  # a repeatable option
            return [word for item in value for word in (flags[0], str(item))]
        return [flags[0], ",".join(value)]
    return [flags[0], str(value)]


def rescue_run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), *sys.path]), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "rescue", "run", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def _planned_tasks(stdout: str) -> set[str]:
    """The tasks of the dry run's estimate table (its second column)."""
    table = stdout.split("nothing is sent", 1)[1]
    cells = [line.split("│") for line in table.splitlines() if line.startswith("│")]
    return {row[2].strip() for row in cells if len(row) > 3 and row[2].strip()}


def test_the_issues_case_tasks_on_the_command_line_are_the_tasks_planned(tmp_path):
    done = rescue_run("--suite", "paper", "--dry-run", "--tasks", "itp", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _planned_tasks(done.stdout) == {"itp"}
    assert list(tmp_path.iterdir()) == []  # a dry run writes nothing


def test_without_the_option_the_suites_tasks_are_planned(tmp_path):
    done = rescue_run("--suite", "paper", "--dry-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _planned_tasks(done.stdout) == set(SUITES["paper"].run["tasks"])
    for key, value in SUITES["paper"].run.items():
        assert f"  {key} = {json.dumps(value)} (suite)" in done.stdout


@pytest.mark.parametrize(("suite_name", "name"), SETTINGS)
def test_every_setting_a_suite_makes_yields_to_the_command_line(suite_name, name, tmp_path):
    suite = SUITES[suite_name]
    value = other_value(suite, name, suite.run[name])
    done = rescue_run("--suite", suite_name, "--dry-run", *command_line(name, value), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"  {name} = {json.dumps(value)} (command line)" in done.stdout, done.stdout[:3000]
    for other, suites_value in suite.run.items():  # the suite's other settings still hold
        if other != name:
            assert f"  {other} = {json.dumps(suites_value)} (suite)" in done.stdout
    if name == "tasks":
        assert _planned_tasks(done.stdout) == set(value)
    if name == "judges":
        assert [line for line in done.stdout.splitlines() if line.startswith("judge ")][0].startswith(
            f"judge {value[0]}:")


@pytest.mark.parametrize(("suite_name", "name"), SETTINGS)
def test_the_options_default_given_on_the_command_line_wins_too(suite_name, name, tmp_path):
    """A variant the fix was not written for: a user's suite that sets the option away from its default, and the
    default given on the command line. Telling a given option by its value (is it the default?) gets this wrong."""
    suite = SUITES[suite_name]
    default = _writable_default(name)
    if default is None:
        pytest.skip(f"--{name}'s default cannot be written on the command line")
    away = other_value(suite, name, default)
    mine = tmp_path / "mine.toml"  # JSON's literals of these types are TOML's
    mine.write_text(f'[suite]\nname = "mine"\n[run]\n{name} = {json.dumps(away)}\n[[models]]\n'
                    f'spec = {json.dumps(suite.models[0].spec)}\n', encoding="utf-8")
    assert load_suite(str(mine)).run[name] == away
    done = rescue_run("--suite", str(mine), "--dry-run", *command_line(name, default), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"  {name} = {json.dumps(default)} (command line)" in done.stdout

