"""A sha256 of the data a run evaluated, so a report can tell whether two runs saw the same data."""

from __future__ import annotations

import hashlib
from pathlib import Path

from rescue.data.loading import demo_path


def _files(root: Path) -> list[Path]:
    # The same files, in the same order, as rescue.data.loading.iter_records reads.
    if root.is_file():
        return [root]
    jsonl = sorted(p for p in root.rglob("*.jsonl") if p.is_file())
    return jsonl or sorted(p for p in root.rglob("*.json") if p.is_file() and p.name != "manifest.json")


def data_sha256(path: str | Path | None) -> str:
    """sha256 over the data files' relative names and bytes (the bundled demo data when ``path`` is None).

    Names are relative to the data root, so the same data copied elsewhere hashes the same.
    """
    root = demo_path() if path is None else Path(path)
    digest = hashlib.sha256()
    base = root.parent if root.is_file() else root
    for file in _files(root):
        digest.update(file.relative_to(base).as_posix().encode("utf-8") + b"\0")
        with file.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()
