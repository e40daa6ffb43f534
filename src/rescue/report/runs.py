"""Reading run directories (``results.json`` + ``predictions.jsonl``) into systems to compare.

A *system* is one model of one run: the unit every table row, bootstrap and comparison is about.
A report reads run directories only; it never calls a model. inspect_ai logs of ``inspect eval rescue/<task>``
(a ``.eval`` file, or a folder of them) are runs too (:mod:`rescue.runs.inspect_logs`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rescue.errors import ReportError as ReportError
from rescue.data.text import visible_text
from rescue.runs.results import ModelResults, RunResults, StoredConfig
from rescue.tasks import TASK_NAMES
from rescue.tasks.base import VIDEO_MODES, PredictionRecord


@dataclass
class System:
    """One model of one run as the report sees it: its label, run folder, stored config and results, records."""

    label: str  # unique among the systems of one report
    model: str
    mode: str
    run_dir: Path
    config: StoredConfig  # results.json "config": the run's options and what it used
    results: ModelResults  # results.json "models"[model]: per task, per scope, the stored metrics
    records: list[PredictionRecord] = field(default_factory=list, repr=False)
    notes: list[str] = field(default_factory=list, repr=False)  # what the report says about how it was read
    people: str = ""  # a human run's system: "person" or "panel" (rescue.report.people); never ranked
    _by_task: dict[str, list[PredictionRecord]] | None = field(default=None, init=False, repr=False, compare=False)
    _indexed: int = field(default=-1, init=False, repr=False, compare=False)

    def task_records(self, task: str) -> list[PredictionRecord]:
        # Asked for every cell, scope and pair: index the records by task once.
        """The system's records of ``task`` (indexed by task once)."""
        if self._by_task is None or self._indexed != len(self.records):
            self._by_task = {}
            for record in self.records:
                self._by_task.setdefault(record.task, []).append(record)
            self._indexed = len(self.records)
        return self._by_task.get(task, [])

    @property
    def tasks(self) -> list[str]:
        """The tasks the system has records or results for, in the registry's order."""
        present = {r.task for r in self.records} | set(self.results.tasks)
        return [t for t in TASK_NAMES if t in present]


def read_predictions(path: Path) -> list[PredictionRecord]:
    """The records of a predictions.jsonl; ReportError naming the file and line when one cannot be read."""
    from rescue.runs.folder import RunDirError
    from rescue.runs.folder import read_predictions as read

    try:
        return read(path)
    except RunDirError as exc:
        raise ReportError(str(exc)) from None


def load_run(run_dir: str | Path) -> list[System]:
    """The systems (one per model) of one run directory, labelled by model name only."""
    from rescue.runs.folder import RunDirError, read_run

    root = Path(run_dir)
    # The one reader of a run directory: typed results, and a predictions file that matches them.
    try:
        typed, records = read_run(root)
    except RunDirError as exc:
        raise ReportError(str(exc)) from None
    return run_systems(typed, records, root)


def run_systems(typed: RunResults, records: list[PredictionRecord], root: Path) -> list[System]:
    """The systems (one per model) of a run already read (:func:`rescue.runs.folder.read_run`), labelled by model
    name only; ``root`` is the folder it was read from."""
    by_model: dict[str, list[PredictionRecord]] = {}
    for record in records:
        by_model.setdefault(record.model, []).append(record)
    names = list(typed.models) + [m for m in by_model if m not in typed.models]
    systems = [
        System(
            label=name,
            model=name,
            mode=typed.config.mode,
            run_dir=root,
            config=typed.config,
            results=typed.models.get(name) or ModelResults(),
            records=by_model.get(name, []),
        )
        for name in names
    ]
    if systems:  # said once per run, whatever its number of models
        systems[0].notes.extend(limited_notes(typed, root))
        epochs = typed.config.model_extra.get("epochs") if typed.config.model_extra else None
        if isinstance(epochs, int) and epochs > 1:
            systems[0].notes.append(
                f"{visible_text(str(root), max_length=200)} asked each instance {epochs} times (--epochs): the "
                "report's counts are answers (instances × epochs) and each metric is computed over every epoch's "
                "answers (for accuracy and Recall@1 the mean over the epochs; results.json keeps each epoch's value "
                "and their spread); paired tests pair epoch with epoch, McNemar's exact test takes an instance as "
                "right where it was in more than half of its epochs.")
    return systems


def limited_notes(results: RunResults, root: Path) -> list[str]:
    """What the report says of a run that evaluated part of its data (``--limit-samples``, ``--limit``)."""
    data = results.data
    if data is None:
        return []
    taken = []
    if data.sample_choice in ("first", "stratified") and data.sample_ids is not None:
        taken.append(f"{len(data.sample_ids)} sample(s) ({data.sample_choice}, --limit-samples)")
    if data.limit is not None:
        taken.append(f"at most {data.limit} instance(s) per task (--limit, drawn with seed {data.limit_seed})")
    if not taken:
        return []
    return [f"{visible_text(str(root), max_length=200)} is a limited run: {' and '.join(taken)}; its numbers are a sample of the "
            "benchmark, not the benchmark's."]


def load_logs(path: str | Path) -> list[System]:
    """The systems of inspect_ai logs (a ``.eval`` file or a folder of them): one per model and set of options,
    its metrics the tasks' own aggregates of the records the logs kept."""
    from rescue.runs.inspect_logs import InspectLogError, read_logs
    from rescue.tasks import TASKS, scoped_aggregates

    try:
        runs = read_logs(path)
    except InspectLogError as exc:
        raise ReportError(str(exc)) from None
    systems = []
    for run in runs:
        by_task: dict[str, list[PredictionRecord]] = {}
        for record in run.records:
            by_task.setdefault(record.task, []).append(record)
        config = StoredConfig.model_validate(run.config)
        results = ModelResults.model_validate({t: scoped_aggregates(TASKS[t], rs) for t, rs in by_task.items()})
        source = run.files[0] if len(run.files) == 1 else run.source
        notes = [f"{name}: the inspect eval ended with status {status}; its samples without a score count as "
                 "failures (request_error), samples it never ran are missing" for name, status in run.incomplete]
        if run.config.get("temperature") is None:
            notes.append(unrecorded_generation(run.model, run.config.get("generate") or []))
        systems.append(System(label=run.model, model=run.model, mode=config.mode, run_dir=source, config=config,
                              results=results, records=run.records, notes=notes))
    return systems


def unrecorded_generation(model: str, sent: list[dict[str, Any]]) -> str:
    """The note on an inspect system whose requests' temperature is not one known value."""
    if sent:
        shown = "; ".join(json.dumps(s, sort_keys=True) for s in sent)
        return f"{model}: the inspect logs' requests were sent with different generate configs ({shown})"
    return (f"{model}: the inspect log records no generate config (written before rescue recorded it): its "
            "requests may have carried no temperature (inspect drops it for model names it takes for reasoning "
            "models); rerun it with this rescue")


def load_source(path: str | Path) -> list[System]:
    """The systems of one argument of ``rescue report``: a run directory, or inspect_ai logs."""
    from rescue.runs.inspect_logs import log_files

    return load_logs(path) if log_files(path) else load_run(path)


def load_systems(run_dirs: list[str | Path]) -> list[System]:
    """All systems of all runs, with labels made unique by adding the mode, then the run folder name."""
    systems = [s for d in run_dirs for s in load_source(d)]
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


def restrict_systems(systems: list[System], sample_ids: set[str], label: str) -> list[str]:
    """Keep only the records of ``sample_ids`` (a split) in every system, with each task's stored metrics
    recomputed from what is kept (usage and cost stay as run); returns notes for the report."""
    notes = []
    for system in systems:
        before = {r.sample_id for r in system.records}
        keep_records(system, lambda r: r.sample_id in sample_ids)
        kept = len({r.sample_id for r in system.records})
        notes.append(f"{system.label}: {label}: {kept} of {len(before)} evaluated sample(s) kept")
    if not any(s.records for s in systems):
        raise ReportError(f"{label}: none of the runs evaluated a sample of this split")
    return notes


def keep_records(system: System, keep: Callable[[PredictionRecord], bool]) -> None:
    """Keep the system's records ``keep`` accepts, each task's stored metrics recomputed from them (usage and
    cost stay as run; a task left with none is dropped)."""
    from rescue.tasks import TASKS, epoch_aggregates

    system.records = [r for r in system.records if keep(r)]
    stored = system.results.model_dump(mode="json")
    for task in {r.task for r in system.records}:
        if task in TASKS:
            stored[task] = epoch_aggregates(TASKS[task], system.task_records(task))
    for task in [t for t in system.results.tasks if t not in {r.task for r in system.records}]:
        stored.pop(task, None)
    system.results = ModelResults.model_validate(stored)
