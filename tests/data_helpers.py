"""Helpers for the data tests: a small valid sample to break on purpose, and running the real CLI entry point."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from rescue.data.loading import demo_path


def demo_records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in demo_path().read_text(encoding="utf-8").splitlines()]


def couple_record() -> dict[str, Any]:
    """A deep copy of the first demo couple session (Riley and Sam), valid as it stands."""
    return copy.deepcopy(next(r for r in demo_records() if r["scenario"] == "couple"))


def write_jsonl(path: Path, records: list[Any]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """Run ``rescue ARGS`` through the real entry point (which turns RescueError into exit status 2)."""
    from rescue.cli import main

    monkeypatch.setattr(sys, "argv", ["rescue", *args])
    capsys.readouterr()
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err
