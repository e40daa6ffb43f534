"""Resuming a run folder: a rerun of the same command continues the run its ``--out`` holds (the cache answers
what was asked); a folder holding a run with another configuration is refused unless ``--overwrite``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rescue.errors import RescueError
from rescue.engine.config import RunConfig, RunError, config_differences
from rescue.engine.parts import Resuming
from rescue.atomic import check_target, remove_stale_temporaries
from rescue.runs.folder import CACHE, LOG, read_results
from rescue.runs.results import PREDICTIONS, RESULTS


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
    differences = config_differences(stored_fields, result_fields) if stored_fields else []
    if stored_sha is not None and stored_sha != data_sha:
        differences.insert(0, f"data: sha256 {stored_sha[:12]}… → {data_sha[:12]}… "
                              f"({stored.config.data or 'demo'} → {resuming.data or 'demo'})")
    elif stored_sha is None and stored_fields and stored.config.data != resuming.data:
        differences.insert(0, f"data: {stored.config.data!r} → {resuming.data!r}")
    return differences, stored_fields


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
