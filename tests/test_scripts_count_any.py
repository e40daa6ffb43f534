"""scripts/count_any.py runs on a checkout and says what it counts (issue #36 item 4); the counts of rescue itself
are the closing note's, not a test's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "count_any.py"

MODULE = '''"""Any word in a docstring is prose."""
from typing import Any
import typing


def f(a: dict[str, Any], b: "typing.Dict[str, Any] | None", *rest: Any) -> list[Any]:
    """Any here neither."""
    c: int = 1  # Any in a comment
    return [cast(Any, a), dict[str, Any]]
'''


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_it_counts_a_checkout_named_by_root(tmp_path: Path) -> None:
    package = tmp_path / "src" / "rescue"
    package.mkdir(parents=True)
    (package / "m.py").write_text(MODULE, encoding="utf-8")
    done = _run("--root", str(tmp_path))
    assert done.returncode == 0, done.stderr
    # a, the quoted b, *rest and the return: 4 annotations; 6 references; dict[str, Any] 3 times (one quoted)
    assert done.stdout.splitlines() == ["Any annotations: 4", "Any references: 6", "dict[str, Any]: 3"]


def test_a_root_without_the_package_is_a_clear_error(tmp_path: Path) -> None:
    done = _run("--root", str(tmp_path))
    assert done.returncode != 0
    assert "src/rescue: no such folder" in done.stderr
