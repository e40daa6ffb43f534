"""Run rescue's CLI in a fresh interpreter that cannot find some installed packages, as on a machine
installed without an extra; tests check what a user sees there."""

from __future__ import annotations

import subprocess
import sys

_PRELUDE = """
import importlib.machinery, sys
HIDDEN = {hidden!r}
class Without:  # the path finder, blind to HIDDEN as if they were never installed
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            return None
        return importlib.machinery.PathFinder.find_spec(name, path, target)
sys.meta_path = [Without if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
from rescue.cli import main
sys.argv = ["rescue", *{args!r}]
try:
    main()
finally:
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in HIDDEN)
    print("hidden modules loaded:", loaded, file=sys.stderr)
"""


def run_without(packages: tuple[str, ...], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``rescue ARGS`` where ``packages`` (top-level import names) cannot be imported."""
    code = _PRELUDE.format(hidden=tuple(packages), args=list(args))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
