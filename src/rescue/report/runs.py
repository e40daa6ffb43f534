"""Reading run directories (``results.json`` + ``predictions.jsonl``) into systems to compare.

A *system* is one model of one run: the unit every table row, bootstrap and comparison is about.
A report reads run directories only; it never calls a model.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rescue.data.errors import RescueError
from rescue.tasks.base import TASK_NAMES, VIDEO_MODES, PredictionRecord


class ReportError(RescueError):
    """A run directory that cannot be reported on; the message names the file, line and field."""


@dataclass
class System:
    label: str  # unique among the systems of one report
    model: str
    mode: str
    run_dir: Path
    config: dict[str, Any]
    results: dict[str, Any]  # results.json "models"[model]: task -> scope -> metrics
    records: list[PredictionRecord] = field(default_factory=list, repr=False)
    _by_task: dict[str, list[PredictionRecord]] | None = field(default=None, init=False, repr=False, compare=False)
    _indexed: int = field(default=-1, init=False, repr=False, compare=False)

    def task_records(self, task: str) -> list[PredictionRecord]:
        # Asked for every cell, scope and pair: index the records by task once.
        if self._by_task is None or self._indexed != len(self.records):
            self._by_task = {}
            for record in self.records:
                self._by_task.setdefault(record.task, []).append(record)
            self._indexed = len(self.records)
        return self._by_task.get(task, [])

    @property
    def tasks(self) -> list[str]:
        present = {r.task for r in self.records} | {t for t in self.results if t in TASK_NAMES}
        return [t for t in TASK_NAMES if t in present]


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ReportError(f"{path}: missing (is this a run directory written by `rescue run --out`?)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ReportError(f"{path}:1: expected a JSON object at the top level")
    return data


def read_predictions(path: Path) -> list[PredictionRecord]:
    if not path.is_file():
        raise ReportError(f"{path}: missing (is this a run directory written by `rescue run --out`?)")
    records: list[PredictionRecord] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(PredictionRecord.model_validate_json(line))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "(line)"
                raise ReportError(f"{path}:{number}: field {where}: {first['msg']}") from exc
    return records


def load_run(run_dir: str | Path) -> list[System]:
    """The systems (one per model) of one run directory, labelled by model name only."""
    root = Path(run_dir)
    results = _read_json(root / "results.json")
    models = results.get("models")
    if not isinstance(models, dict):
        raise ReportError(f"{root / 'results.json'}: field models: expected an object keyed by model name")
    config = results.get("config") or {}
    records = read_predictions(root / "predictions.jsonl")
    by_model: dict[str, list[PredictionRecord]] = {}
    for record in records:
        by_model.setdefault(record.model, []).append(record)
    names = list(models) + [m for m in by_model if m not in models]
    return [
        System(
            label=name,
            model=name,
            mode=str(config.get("mode", "")),
            run_dir=root,
            config=config,
            results=models.get(name) or {},
            records=by_model.get(name, []),
        )
        for name in names
    ]


def load_systems(run_dirs: list[str | Path]) -> list[System]:
    """All systems of all runs, with labels made unique by adding the mode, then the run folder name."""
    systems = [s for d in run_dirs for s in load_run(d)]
    if not systems:
        raise ReportError("no systems: the run directories hold no models")
    counts = Counter(s.label for s in systems)
    for s in systems:
        # A video run is always labelled with its mode: what it saw is part of what the score means.
        if (counts[s.label] > 1 or s.mode in VIDEO_MODES) and s.mode:
            s.label = f"{s.model} [{s.mode}]"
    counts = Counter(s.label for s in systems)
    for s in systems:
        if counts[s.label] > 1:
            s.label = f"{s.label} ({s.run_dir.name})"
    counts = Counter(s.label for s in systems)
    duplicates = [label for label, n in counts.items() if n > 1]
    if duplicates:
        raise ReportError(f"the same run directory was given twice: {', '.join(duplicates)}")
    return systems
