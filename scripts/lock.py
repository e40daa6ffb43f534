"""The committed lock: constraints.txt holds every distribution of a green test environment at its exact version.

    python scripts/lock.py                        # write constraints.txt from the running environment
    python scripts/lock.py --compare constraints.txt   # print each package whose version differs (locked -> here)

scripts/test.sh installs with ``--constraint constraints.txt`` so that a green run can be repeated; with
RESCUE_NEWEST=1 (scripts/test-newest.sh) it installs the newest of everything instead and runs ``--compare`` to say
what moved. Run this script in the environment that just passed the whole suite (``.venv/bin/python
scripts/lock.py``) and commit constraints.txt with the change that needed the new versions.
"""

from __future__ import annotations

import argparse
import re
import sys
from importlib import metadata
from pathlib import Path

from rescue.atomic import write_atomic

# The project itself (installed editable) and the installer's own tools are not pinned: pip freeze leaves them out too.
_NOT_PINNED = {"rescue-bench", "pip", "setuptools", "wheel"}
_HEADER = ("# The versions of a green `bash scripts/test.sh` run (written by scripts/lock.py; see its docstring).\n"
           "# scripts/test.sh installs with --constraint on this file; scripts/test-newest.sh tests without it.\n")


def canonical(name: str) -> str:
    """PEP 503's normalised name: what pip compares."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed() -> dict[str, str]:
    """Every distribution of the running environment, canonical name -> version."""
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and canonical(name) not in _NOT_PINNED:
            found[canonical(name)] = dist.version
    return found


def read_lock(path: Path) -> dict[str, str]:
    """``name==version`` lines of a constraints file, comments and blank lines skipped."""
    pins: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        name, sep, version = text.partition("==")
        if not sep or not name.strip() or not version.strip():
            raise SystemExit(f"{path}:{number}: expected NAME==VERSION, got {text!r}")
        pins[canonical(name.strip())] = version.strip()
    return pins


def differences(locked: dict[str, str], here: dict[str, str]) -> list[str]:
    """One line per package whose version differs, or that only one side has."""
    lines = []
    for name in sorted(locked.keys() | here.keys()):
        old, new = locked.get(name, "(not locked)"), here.get(name, "(not installed)")
        if old != new:
            lines.append(f"{name}: {old} -> {new}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", type=Path, help="print what differs from this lock instead of writing one")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "constraints.txt")
    args = parser.parse_args(argv)
    here = installed()
    if args.compare is not None:
        moved = differences(read_lock(args.compare), here)
        print("\n".join(moved) if moved else f"every version is the one in {args.compare}")
        return 0
    body = "".join(f"{name}=={version}\n" for name, version in sorted(here.items()))
    write_atomic(args.out, _HEADER + body)
    print(f"wrote {args.out}: {len(here)} distributions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
