"""A seventh task is one new file: a task module written here, in a temporary folder, registers itself and
keeps the contract every task keeps, and `rescue run` evaluates it with no edit anywhere else. It comes in
through the decorator (imported in this process) and through an entry point of the ``rescue.tasks`` group
(a plugin distribution on the path of a fresh process)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import shutil
from pathlib import Path

import pytest
from task_contract import check_task
from test_docstrings import undocumented
from typer.testing import CliRunner

from rescue.cli import app
from rescue.tasks import TASK_NAMES, TASKS, get_task, register, unregister

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tasks.md"


def docs_example() -> str:
    """The task module docs/tasks.md shows under "Adding a task": the first Python block there that registers
    a task. The tests run that very text, so the documented example cannot drift from what works."""
    section = DOCS.read_text(encoding="utf-8").split("\n## Adding a task\n", 1)[1]
    blocks = re.findall(r"^```python\n(.*?)^```$", section, flags=re.S | re.M)
    return next(block for block in blocks if "@register" in block)


# A task not in the paper with an existing answer shape (one label): is a client turn a question?
# It uses only the shared modules of rescue.tasks: no private name of another task.
TASK_MODULE = docs_example()
# The module name the example has when saved as src/rescue/tasks/qsp.py: with the example dropped into the
# package the registry then sees the same task registered again (replaced), not a second task named qsp.
MODULE_NAME = "rescue.tasks.qsp"


@pytest.fixture
def new_task(tmp_path):
    """The new task, imported from its one file (the decorator registers it), and taken out again after."""
    path = tmp_path / "qsp.py"
    path.write_text(TASK_MODULE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    before = TASKS.get("qsp")  # the example itself where it was dropped into the package
    spec.loader.exec_module(module)
    try:
        yield get_task("qsp")
    finally:
        unregister("qsp")
        if before is not None:
            register(before)


def test_the_documented_example_is_a_whole_module_that_keeps_the_house_rules(tmp_path):
    """Saved as it stands, the example imports, has every docstring test_docstrings asks of rescue's own
    modules, and declares the task the other tests here evaluate."""
    path = tmp_path / "qsp.py"
    path.write_text(TASK_MODULE, encoding="utf-8")
    assert undocumented(path) == []
    compile(TASK_MODULE, str(path), "exec")
    assert 'name="qsp"' in TASK_MODULE and "@register" in TASK_MODULE


def test_a_new_task_registers_itself_and_keeps_the_contract(new_task, demo_samples):
    assert list(TASKS)[-1] == "qsp" and "qsp" in TASK_NAMES  # after the paper's six
    assert new_task.declaration.paper_counts == {}  # not in the paper: no counts to compare
    check_task("qsp", new_task, demo_samples)


def test_rescue_run_evaluates_a_new_task(new_task, tmp_path, demo_samples):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--tasks", "qsp,itp", "--model", "baseline/majority",
                                      "--no-bertscore", "-q"])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    scores = results["models"]["baseline/majority"]["qsp"]["all"]
    assert scores["instances"] == len(new_task.build(demo_samples)) and scores["failures"] == 0
    assert [k for k in results["models"]["baseline/majority"] if k in TASKS] == ["itp", "qsp"]  # registry order
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["task"] for r in records} == {"itp", "qsp"}


@pytest.mark.slow
def test_the_example_dropped_into_a_copy_of_the_package_is_found_and_run(tmp_path):
    """The documented way in rescue itself: the example saved as ``rescue/tasks/qsp.py`` in a copy of the
    package, and nothing else edited; ``rescue tasks`` lists it and ``rescue run`` evaluates it."""
    import rescue

    root = tmp_path / "src"
    shutil.copytree(Path(rescue.__file__).parent, root / "rescue", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "rescue" / "tasks" / "qsp.py").write_text(TASK_MODULE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    listed = _rescue(env, "tasks", "--format", "json")
    counts = json.loads(listed)
    assert list(counts) == (list(TASKS) if "qsp" in TASKS else [*TASKS, "qsp"])  # after the package's own
    assert sum(scope["instances"] for scope in counts["qsp"].values()) > 0
    out = tmp_path / "run"
    _rescue(env, "run", "--out", str(out), "--tasks", "qsp", "--model", "baseline/majority", "--no-bertscore", "-q")
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["models"]["baseline/majority"]["qsp"]["all"]["failures"] == 0
    where = _rescue(env, "-c", "import rescue.tasks.qsp as m; print(m.__file__)", module=False)
    assert Path(where.strip()).is_relative_to(root)  # the copy's module, not an installed one


def _rescue(env: dict[str, str], *args: str, module: bool = True) -> str:
    command = [sys.executable, *(["-m", "rescue"] if module else []), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_a_plugin_distribution_adds_a_task_through_its_entry_point(tmp_path):
    """A package outside rescue: its module plus the entry point its pyproject.toml would declare,
    ``[project.entry-points."rescue.tasks"] qsp_plugin = "qsp_plugin"``, installed as a dist-info folder. The
    plugin's task is the example under another name, so it is a second task even where the example itself
    was dropped into the package."""
    site = tmp_path / "site"
    site.mkdir()
    assert TASK_MODULE.count('name="qsp"') == 1
    (site / "qsp_plugin.py").write_text(TASK_MODULE.replace('name="qsp"', 'name="qsp_plugin"'), encoding="utf-8")
    info = site / "qsp_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: qsp-plugin\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[rescue.tasks]\nqsp_plugin = qsp_plugin\n", encoding="utf-8")
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    _rescue(env, "run", "--out", str(out), "--tasks", "qsp_plugin", "--model", "baseline/uniform", "--no-bertscore",
            "-q")
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["models"]["baseline/uniform"]["qsp_plugin"]["all"]["instances"] > 0
    listed = _rescue(env, "tasks", "--format", "json")
    assert list(json.loads(listed)) == [*TASKS, "qsp_plugin"]  # after every task rescue itself holds


def test_a_plugin_that_cannot_load_is_a_clear_error(tmp_path, monkeypatch):
    from importlib.metadata import EntryPoint

    from rescue.tasks.registry import TaskRegistryError, _load_entry_point

    point = EntryPoint(name="broken", value="zz_no_such_task_module", group="rescue.tasks")
    with pytest.raises(TaskRegistryError, match="task plugin 'broken' .*cannot be loaded: ModuleNotFoundError"):
        _load_entry_point(point)


def test_two_tasks_under_one_name_are_an_error():
    from rescue.tasks.registry import TaskRegistryError, register

    class Impostor:
        declaration = get_task("itp").declaration

    original, order = get_task("itp"), list(TASKS)
    again = type(original)()
    try:
        assert register(again) is again and get_task("itp") is again  # the same task again: replaced
        with pytest.raises(TaskRegistryError, match="two tasks named 'itp'"):
            register(type("Impostor", (type(original),), {})())
        with pytest.raises(TaskRegistryError, match="is not a task"):
            register(Impostor())
    finally:
        register(original)
    assert get_task("itp") is original and list(TASKS) == order
