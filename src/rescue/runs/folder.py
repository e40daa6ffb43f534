"""A run directory on disk: its file names, its lock, the one writer and the readers of ``results.json`` and
``predictions.jsonl``.

``results.json`` names the SHA-256 and record count of the ``predictions.jsonl`` written with it, so a reader
can tell when the two come from different commands (a kill between the two replaces) instead of mixing them.
:func:`read_run` is the one reader of a run directory; the report and ``rescue rescore`` both use it, and
:func:`write_run` is the one writer (``rescue run`` and ``rescue rescore``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from rescue.errors import RunDirError as RunDirError
from rescue.atomic import write_atomic
from rescue.errors import LockedError
from rescue.files import DirectoryLock, sha256_file
from rescue.runs.results import PREDICTIONS, RESULTS, SCHEMA_VERSION, PredictionsInfo, RunResults
from rescue.data.readback import check_regular, parse_json, read_json_file
from rescue.tasks.base import PredictionRecord, held

CACHE = "cache.sqlite"
LOG = "run.log"


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = list(first["loc"])
    if len(loc) > 3 and loc[0] == "models" and loc[2] == "tasks":  # the file has no "tasks" level
        del loc[2]
    where = ".".join(str(p) for p in loc) or "(top level)"
    return f"field {where}: {first['msg']}"


def locked_message(folder: Path) -> str | None:
    """Why ``folder`` cannot be read now: a running ``rescue run`` holds its lock; None when none does."""
    pid = DirectoryLock.writer(folder)
    if pid is None:
        return None
    who = f"process {pid}" if pid > 0 else "another process"
    return (f"{folder}: locked by a running run ({who} is writing this run directory now); wait for it to "
            "finish, then try again")


def read_results(path: str | Path) -> RunResults:
    """``results.json`` as :class:`RunResults`; :class:`RunDirError` names the file, line and field it cannot read
    (:mod:`rescue.data.readback`: anything edited, cut, nested, or holding numbers no field can hold)."""
    file = Path(path)
    if not os.path.lexists(file):
        locked = locked_message(file.parent)
        if locked:
            raise RunDirError(locked)
        raise RunDirError(f"{file}: missing (is this a run directory written by `rescue run --out`?)")
    try:
        data = read_json_file(file, RunDirError)
    except FileNotFoundError:  # a link to nothing
        raise RunDirError(f"{file}: missing (a link to nothing)") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{file}:1: expected a JSON object at the top level")
    if "config" not in data:
        raise RunDirError(f"{file}: field config: missing; cannot know what the run was")
    if isinstance(data.get("schema_version"), int) and data["schema_version"] > SCHEMA_VERSION:
        raise RunDirError(f"{file}: field schema_version: {data['schema_version']} is newer than this rescue "
                          f"understands ({SCHEMA_VERSION}); upgrade rescue")
    try:
        return RunResults.model_validate(data)
    except ValidationError as exc:
        raise RunDirError(f"{file}: {_first_error(exc)}") from None


def read_predictions(path: str | Path) -> list[PredictionRecord]:
    """``predictions.jsonl``, one :class:`PredictionRecord` per line; :class:`RunDirError` names the line and field
    (each line read as :func:`rescue.data.readback.parse_json` reads a file)."""
    file = Path(path)
    if not os.path.lexists(file):
        raise RunDirError(f"{file}: missing (is this a run directory written by `rescue run --out`?)")
    check_regular(file, RunDirError)
    records: list[PredictionRecord] = []
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{file}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RunDirError(f"{where}: not UTF-8 text (byte {exc.start + 1} of the line)") from None
            if not line.strip():
                continue
            value = parse_json(line, where, RunDirError)
            if not isinstance(value, dict):
                raise RunDirError(f"{where}: expected a JSON object (one prediction record per line)")
            try:
                record = PredictionRecord.model_validate(value)
            except ValidationError as exc:
                raise RunDirError(f"{where}: {_first_error(exc)}") from None
            records.append(held(record))  # a report holds every record of its runs
    return records


def read_run(run_dir: str | Path) -> tuple[RunResults, list[PredictionRecord]]:
    """``results.json`` and the ``predictions.jsonl`` written with it; refuses a pair from different commands."""
    root = Path(run_dir)
    results = read_results(root / RESULTS)
    path = root / PREDICTIONS
    if results.predictions is not None and path.is_file() and sha256_file(path) != results.predictions.sha256:
        raise RunDirError(
            f"{path}: does not match {root / RESULTS} (field predictions.sha256): the two files come from "
            f"different commands, e.g. a run killed while writing them. Run `rescue rescore {root}` to rebuild "
            "both from the cache, or rerun the run's command")
    records = read_predictions(path)
    if results.predictions is not None and len(records) != results.predictions.records:
        raise RunDirError(f"{path}: {len(records)} record(s), where {root / RESULTS} (field predictions.records) "
                          f"says {results.predictions.records}: lines were removed or added. Run `rescue rescore "
                          f"{root}` to rebuild both from the cache, or rerun the run's command")
    return results, records


def lock_run(folder: Path) -> DirectoryLock:
    """The run directory's lock, held: one command writes a run directory at a time. Raises
    :class:`RunDirError` naming the process that holds it."""
    lock = DirectoryLock(folder)
    try:
        lock.acquire()
    except LockedError as exc:
        who = f"process {exc.pid}" if exc.pid is not None else "another process"
        raise RunDirError(f"{folder}: {who} is writing this run directory now; wait for it to finish or choose "
                          "another --out") from None
    return lock


def write_run(folder: Path, results: RunResults, records: list[PredictionRecord]) -> None:
    """``predictions.jsonl`` then ``results.json``, each atomically; ``results.predictions`` is set to the hash
    and count of the records written. Predictions first: a kill before results.json is replaced leaves a pair
    :func:`read_run` refuses (results.json names the hash of the predictions it was written with)."""
    digest = hashlib.sha256()

    def lines() -> Iterator[bytes]:  # one record at a time: the file is never held whole in memory
        for record in records:
            line = (record.model_dump_json() + "\n").encode("utf-8")
            digest.update(line)
            yield line

    write_atomic(folder / PREDICTIONS, lines())
    results.predictions = PredictionsInfo(sha256=digest.hexdigest(), records=len(records))
    write_atomic(folder / RESULTS, results.to_json_text())
