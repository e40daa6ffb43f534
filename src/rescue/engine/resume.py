"""Resuming a run folder: a rerun of the same command continues the run its ``--out`` holds (the cache answers
what was asked); a command that adds models or tasks to it, with the same data, rendering and settings, grows it in
place (:func:`plan_growth`); a folder holding a run with another configuration is refused unless ``--overwrite``."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rescue.errors import RescueError
from rescue.engine.config import RunConfig, RunError, config_differences
from rescue.engine.parts import Resuming
from rescue.atomic import check_target, remove_stale_temporaries
from rescue.runs.folder import CACHE, LOG, read_results
from rescue.tasks import graded_tasks
from rescue.runs.results import PREDICTIONS, RESULTS, GrowthStep, RunResults

# The seed a new run sends where its provider takes one (--seed unset): recorded in results.json's config.seed.
DEFAULT_SEED = 0

# Result fields that only the graded tasks (ER, VP) read: a run without them stores none (RunConfig.result_fields),
# so a run that grows by a graded task sets them for the first time.
_GRADING_PREFIXES = ("bertscore", "judge")


@dataclass(frozen=True)
class Growth:
    """What a run adds to the run its folder holds: the models and tasks of the grown run (the folder's first, in
    their order, then the new ones), those added, and the steps the folder's run already grew by."""

    models: list[str]
    tasks: list[str]
    added_models: list[str] = field(default_factory=list)
    added_tasks: list[str] = field(default_factory=list)
    history: list[GrowthStep] = field(default_factory=list)
    holds: bool = False  # whether the folder holds a run this one continues (or grows)
    held_seed: int | None = None  # that run's --seed (None: it sent none, as runs before #46 did)

    @property
    def grows(self) -> bool:
        """Whether this run adds anything to the folder's run."""
        return bool(self.added_models or self.added_tasks)

    def describe(self) -> str:
        """What is added, in words (``model b; task rpp``)."""
        parts = []
        if self.added_models:
            parts.append(f"model{'s' if len(self.added_models) > 1 else ''} {', '.join(self.added_models)}")
        if self.added_tasks:
            parts.append(f"task{'s' if len(self.added_tasks) > 1 else ''} {', '.join(self.added_tasks)}")
        return "; ".join(parts)

    def steps(self, run_id: str) -> list[GrowthStep]:
        """results.json's ``growth``: the steps so far, and this run's when it adds something."""
        if not self.grows:
            return list(self.history)
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        return [*self.history, GrowthStep(run_id=run_id, at=now, models=self.added_models, tasks=self.added_tasks)]


def plan_growth(resuming: Resuming, models: list[str], given_models: bool, tasks: list[str], out: Path) -> Growth:
    """The models and tasks this run evaluates in ``out``: those given, joined to those of the run ``out`` holds (its
    answers come from the cache), which this run grows. ``given_models``: whether models were named (no --model:
    the run's own models, not the offline baselines beside them). Nothing is joined with --overwrite, in a folder
    without a run, or one whose results.json cannot be read (:func:`prepare_folder` says so)."""
    if resuming.overwrite or not (out / RESULTS).exists():
        return Growth(models, tasks)
    try:
        stored = read_results(out / RESULTS)
    except RescueError:
        return Growth(models, tasks)
    extra = stored.config.model_extra or {}
    # An edited results.json is read as untrusted: names that are no list of strings grow nothing (prepare_folder
    # then names the field it cannot read).
    held_models, held_tasks = _names(extra.get("models")), _names(extra.get("tasks"))
    held_seed = extra.get("seed")
    held_seed = held_seed if isinstance(held_seed, int) and not isinstance(held_seed, bool) else None
    if not held_models or not held_tasks:
        return Growth(models, tasks, holds=True, held_seed=held_seed)
    added_models = [m for m in models if m not in held_models] if given_models else []
    added_tasks = [t for t in tasks if t not in held_tasks]
    history = list(stored.growth)
    if (added_models or added_tasks) and not history:  # the run as it was made is the first step
        made = datetime.datetime.fromtimestamp((out / RESULTS).stat().st_mtime, datetime.UTC)
        history = [GrowthStep(run_id=stored.run.run_id if stored.run is not None else None,
                              at=made.isoformat(timespec="seconds"), models=held_models, tasks=held_tasks)]
    return Growth([*held_models, *added_models], [*held_tasks, *added_tasks], added_models, added_tasks, history,
                  holds=True, held_seed=held_seed)


def stored_growth(results: RunResults) -> Growth:
    """The growth steps of a run read back (``rescue rescore`` keeps them), adding nothing."""
    extra = results.config.model_extra or {}
    return Growth(_names(extra.get("models")), _names(extra.get("tasks")), history=list(results.growth))


def _names(value: object) -> list[str]:
    """A list of model or task names read back from results.json (``[]`` for anything else)."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return []


def prepare_folder(resuming: Resuming, result_fields: dict[str, Any], out: Path, data_sha: str, *,
                   offline: bool) -> list[Path]:
    """Refuse a folder that holds a run with another configuration (``result_fields``: this run's,
    ``RunConfig.result_fields``), unless --overwrite (which empties it); clean leftovers. Returns the leftover
    temporary files removed."""
    if not offline and (out / RESULTS).exists():
        differences, stored_fields = _differences(resuming, result_fields, out, data_sha)
        if differences and not resuming.overwrite:
            shown = "; ".join(differences[:4]) + (f"; and {len(differences) - 4} more" if len(differences) > 4 else "")
            raise RunError(f"--out {out}: holds a run with another configuration ({shown}). Rerun with "
                           "the same options to resume it, choose another --out, or add --overwrite to "
                           "replace it")
        if differences or (resuming.overwrite and not stored_fields):
            clear_folder(out, resuming.cache_dir)
    elif resuming.overwrite and not offline:
        clear_folder(out, resuming.cache_dir)
    return remove_stale_temporaries(out)


def _differences(resuming: Resuming, result_fields: dict[str, Any], out: Path,
                 data_sha: str) -> tuple[list[str], dict[str, Any]]:
    """How the run in ``out`` differs from this one (data first), and its stored result fields ({} when its
    results.json cannot be read and --overwrite replaces it)."""
    results_path = out / RESULTS
    try:
        stored = read_results(results_path)
        stored_fields = RunConfig.from_json(stored.config.as_dict(), str(results_path)).result_fields()
        stored_sha = stored.data.sha256 if stored.data is not None else None
    except RescueError as exc:
        if not resuming.overwrite:
            raise RunError(f"--out {out}: holds a results.json this run cannot read ({exc}); "
                           "add --overwrite to replace it, or choose another --out") from None
        return [], {}
    differences = config_differences(*_comparable(stored_fields, result_fields)) if stored_fields else []
    if stored_sha is not None and stored_sha != data_sha:
        differences.insert(0, f"data: sha256 {stored_sha[:12]}… → {data_sha[:12]}… "
                              f"({stored.config.data or 'demo'} → {resuming.data or 'demo'})")
    elif stored_sha is None and stored_fields and stored.config.data != resuming.data:
        differences.insert(0, f"data: {stored.config.data!r} → {resuming.data!r}")
    return differences, stored_fields


def _comparable(stored: dict[str, Any], current: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two runs' result fields as a run that grows compares them: the tasks the stored run holds decide; what
    only a task it lacks reads (that task's options, the judges and BERTScore where it had no graded task) is new,
    never a difference; and models and tasks added to those it holds (:func:`plan_growth`) are growth."""
    stored, current = dict(stored), dict(current)
    held = set(stored.get("tasks") or [])
    for key in ("models", "tasks"):
        before, now = stored.get(key), current.get(key)
        if isinstance(before, list) and isinstance(now, list) and now[:len(before)] == before:
            stored[key] = current[key] = now
    for fields in (stored, current):
        if isinstance(fields.get("task_options"), dict):
            fields["task_options"] = {t: v for t, v in fields["task_options"].items() if t in held}
    if not held & set(graded_tasks()):
        for key in [k for k in current if k.startswith(_GRADING_PREFIXES) and k not in stored]:
            del current[key]
    return stored, current


def clear_folder(out: Path, cache_dir: str | None) -> None:
    """Remove a run's files from ``out``: results, predictions, log, and its caches unless they live in a
    shared ``--cache-dir``."""
    names = [RESULTS, PREDICTIONS, LOG]
    if not cache_dir:
        from rescue.scoring.bertscore import SCORE_CACHE

        names += [CACHE, CACHE + "-wal", CACHE + "-shm", SCORE_CACHE, SCORE_CACHE + "-wal", SCORE_CACHE + "-shm"]
    for name in names:  # all checked before any goes: --overwrite replaces a run's files, nothing else put there
        check_target(out / name)
    for name in names:
        (out / name).unlink(missing_ok=True)
