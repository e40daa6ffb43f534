"""What a run directory holds, as typed models: ``results.json`` (with a schema version) and its predictions.

``results.json`` names the SHA-256 and record count of the ``predictions.jsonl`` written with it, so a reader
can tell when the two come from different commands (a kill between the two replaces) instead of mixing them.
:func:`read_run` is the one reader of a run directory; the report and ``rescue rescore`` both use it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rescue.data.errors import RescueError
from rescue.tasks.base import TASK_NAMES, PredictionRecord

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 2  # 1: results.json before it carried schema_version, run_id, data and predictions blocks
RESULTS = "results.json"
PREDICTIONS = "predictions.jsonl"
SCOPE_KEYS = ("all", "couple", "family")


class RunDirError(RescueError):
    """A run directory that cannot be read; the message names the file, line and field."""


class RunStatus(BaseModel):
    model_config = ConfigDict(extra="allow")

    complete: bool
    stopped: str | None = None
    elapsed_s: float = 0.0
    offline: bool = False
    run_id: str | None = None  # shared with nothing else; names this command's write of the directory
    requests: int = 0  # new requests answered or finally failed in this command
    cache_hits: int = 0  # answers reused from the cache
    request_errors: int = 0  # instances left without an answer; complete only when 0


class DataInfo(BaseModel):
    path: str | None  # as given (None: the bundled demo data)
    sha256: str
    samples: int  # samples the run used
    sample_choice: str = "all"  # all | first | stratified
    sample_ids: list[str] | None = None  # with --limit-samples: exactly which samples were taken


class PredictionsInfo(BaseModel):
    file: str = PREDICTIONS
    sha256: str
    records: int


class CostBlock(BaseModel):
    model_config = ConfigDict(extra="allow")

    total: float | None = None
    spent_this_run: float = 0.0


class ModelResults(BaseModel):
    """One model: per task ``{"all", "couple", "family": metrics, "samples": {id: metrics}}``, usage and cost."""

    model_config = ConfigDict(extra="allow")

    usage: dict[str, Any] = Field(default_factory=dict)
    cost: dict[str, Any] = Field(default_factory=dict)

    def tasks(self) -> dict[str, dict[str, Any]]:
        extra = self.model_extra or {}
        return {name: extra[name] for name in TASK_NAMES if isinstance(extra.get(name), dict)}


class RunResults(BaseModel):
    """``results.json``."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    config: dict[str, Any]
    run: RunStatus | None = None  # None only in hand-written files; rescue always writes it
    data: DataInfo | None = None
    predictions: PredictionsInfo | None = None
    cost: CostBlock = Field(default_factory=CostBlock)
    models: dict[str, ModelResults]

    def metrics(self, model: str, task: str, scope: str = "all") -> dict[str, Any]:
        return dict(self.models[model].tasks().get(task, {}).get(scope) or {})

    def to_pandas(self, *, samples: bool = False) -> pd.DataFrame:
        """One row per (model, task, scope) with every metric as a column; ``samples`` adds per-sample rows."""
        import pandas as pd

        rows: list[dict[str, Any]] = []
        for model, entry in self.models.items():
            for task, scopes in entry.tasks().items():
                for scope in SCOPE_KEYS:
                    if isinstance(scopes.get(scope), dict):
                        rows.append({"model": model, "task": task, "scope": scope, **scopes[scope]})
                if samples:
                    for sample_id, values in (scopes.get("samples") or {}).items():
                        rows.append({"model": model, "task": task, "scope": f"sample:{sample_id}", **values})
        return pd.DataFrame(rows)

    def to_json_text(self) -> str:
        from rescue.io import json_safe

        # JSON has no NaN or Infinity: such a metric is written as null.
        return json.dumps(json_safe(self.model_dump(mode="json")), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    return f"field {where}: {first['msg']}"


def read_results(path: str | Path) -> RunResults:
    file = Path(path)
    if not file.is_file():
        raise RunDirError(f"{file}: missing (is this a run directory written by `rescue run --out`?)")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise RunDirError(f"{file}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{file}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise RunDirError(f"{file}:1: nested too deeply to be a results file") from None
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
    file = Path(path)
    if not file.is_file():
        raise RunDirError(f"{file}: missing (is this a run directory written by `rescue run --out`?)")
    records: list[PredictionRecord] = []
    with file.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(PredictionRecord.model_validate_json(line))
            except ValidationError as exc:
                raise RunDirError(f"{file}:{number}: {_first_error(exc)}") from None
    return records


def read_run(run_dir: str | Path) -> tuple[RunResults, list[PredictionRecord]]:
    """``results.json`` and the ``predictions.jsonl`` written with it; refuses a pair from different commands."""
    from rescue.io import sha256_file

    root = Path(run_dir)
    results = read_results(root / RESULTS)
    path = root / PREDICTIONS
    if results.predictions is not None and path.is_file() and sha256_file(path) != results.predictions.sha256:
        raise RunDirError(
            f"{path}: does not match {root / RESULTS} (field predictions.sha256): the two files come from "
            f"different commands, e.g. a run killed while writing them. Run `rescue rescore {root}` to rebuild "
            "both from the cache, or rerun the run's command")
    return results, read_predictions(path)
