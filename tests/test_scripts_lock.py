"""The committed lock (#47 item 2): scripts/test.sh installs with constraints.txt, so the test environment is the
lock's; scripts/lock.py writes it and says what moved; every direct dependency is locked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "lock.py"
LOCK = ROOT / "constraints.txt"
sys.path.insert(0, str(SCRIPT.parent))
import lock  # noqa: E402


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def _requirement_name(requirement: str) -> str:
    return lock.canonical(re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0])


def test_every_direct_dependency_of_every_extra_is_locked() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = {_requirement_name(r) for r in project["dependencies"]}
    for extra, requirements in project["optional-dependencies"].items():
        if extra != "mutation":  # mutation testing is not part of the test environment
            wanted |= {_requirement_name(r) for r in requirements}
    locked = lock.read_lock(LOCK)
    assert sorted(wanted - locked.keys()) == []


@pytest.mark.skipif(os.environ.get("RESCUE_NEWEST") == "1", reason="scripts/test-newest.sh tests the newest versions")
def test_the_test_environment_has_the_locked_versions() -> None:
    """What scripts/test.sh installed is what constraints.txt says: a green run is repeatable."""
    locked = lock.read_lock(LOCK)
    here = {lock.canonical(d.metadata["Name"]): d.version for d in metadata.distributions() if d.metadata["Name"]}
    moved = {name: (version, here[name]) for name, version in locked.items() if name in here and here[name] != version}
    assert moved == {}, "installed versions differ from constraints.txt: run scripts/test.sh (or scripts/lock.py)"


def test_lock_writes_every_installed_distribution_and_compare_says_what_moved(tmp_path: Path) -> None:
    out = tmp_path / "constraints.txt"
    assert _run("--out", str(out)).returncode == 0
    pins = lock.read_lock(out)
    assert pins == lock.installed()
    assert "rescue-bench" not in pins and "pip" not in pins
    same = _run("--compare", str(out))
    assert same.returncode == 0 and "every version is the one in" in same.stdout
    name = next(iter(pins))
    edited = out.read_text(encoding="utf-8").replace(f"{name}=={pins[name]}\n", f"{name}==0.0.0\n")
    out.write_text(edited + "not-a-real-dist==1.0\n", encoding="utf-8")
    moved = _run("--compare", str(out)).stdout.splitlines()
    assert f"{name}: 0.0.0 -> {pins[name]}" in moved
    assert "not-a-real-dist: 1.0 -> (not installed)" in moved


@pytest.mark.parametrize("line", ["torch>=2", "just-a-name", "==1.0x"])
def test_a_lock_line_that_is_not_a_pin_names_its_file_and_line(tmp_path: Path, line: str) -> None:
    bad = tmp_path / "constraints.txt"
    bad.write_text("# header\nsix==1.16.0\n" + line + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"constraints.txt:3: expected NAME==VERSION"):
        lock.read_lock(bad)


def test_every_core_dependency_is_imported_by_rescue() -> None:
    """A core dependency nothing imports is weight every user installs (#47 item 2: `openai` was one)."""
    import ast

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {_requirement_name(r) for r in project["dependencies"]}
    imported: set[str] = set()
    for path in (ROOT / "src" / "rescue").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
    providers = metadata.packages_distributions()
    used = {lock.canonical(dist) for module in imported for dist in providers.get(module, [])}
    # uvicorn's server runs the review app (imported), typing_extensions is read by pydantic (see pyproject).
    assert sorted(core - used - {"typing-extensions"}) == []
