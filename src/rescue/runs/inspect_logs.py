"""inspect_ai logs (``.eval``) of RESCUE-Bench tasks, read back as runs: one per model, with the prediction records
the scorer kept and the configuration the task recorded (``rescue.inspect_tasks``, which writes what this module
reads: the keys below are the format), so ``rescue report`` puts them beside ``rescue run`` directories under the
same comparability checks.

inspect_ai is imported only when a log is read; without it the error names the ``inspect`` extra.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from rescue.data.shapes import JsonObject
from rescue.archives import check_zip
from rescue.errors import InspectLogError as InspectLogError
from rescue.tasks import TASKS, judged_tasks
from rescue.tasks.base import PredictionRecord

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog

LOG_SUFFIX = ".eval"
EXTRA_HINT = "pip install 'rescue-bench[inspect]'"
# The task's metadata key (what the task evaluated and the run configuration it means) and the score's metadata
# key (the prediction record, a predictions.jsonl line).
CONFIG_KEY = "rescue"
RECORD_KEY = "rescue_record"
# The score's metadata key of the generate config the request was sent with ({"temperature", "max_tokens"});
# absent in logs written before rescue recorded it, whose requests may have carried no temperature at all.
GENERATE_KEY = "rescue_generate"
GRADER = "grader"  # the inspect model role that grades ER and VP with the task's judge rubric
# The fields of an inspect sample a report never reads (the conversation, the event transcript, attachments,
# the store, the output: its score's metadata holds the record), skipped by inspect's streaming reader.
NOT_READ = ("messages", "events", "attachments", "store", "output")


class SentGenerate(TypedDict):
    """What a score's metadata records under ``GENERATE_KEY``: the generate config its request was sent with."""

    temperature: float
    max_tokens: int  # the answer budget


@dataclass
class LoggedTask:
    """One inspect log: one model on one RESCUE task."""

    path: Path
    model: str
    task: str
    created: str
    status: str  # inspect's: success, error, cancelled, started
    # results.json's "config" and "data" as the log holds them (judges from the grader role): open here, so that keys
    # another rescue version wrote are kept; the report reads the config through StoredConfig.
    config: JsonObject
    data: JsonObject
    records: list[PredictionRecord]


@dataclass
class LoggedRun:
    """The logs of one model that share data and options: what a ``rescue run`` of their tasks would be."""

    source: Path  # the .eval file, or the folder of logs given
    model: str
    config: JsonObject  # as LoggedTask's, the tasks and used values of every log merged
    data: JsonObject
    records: list[PredictionRecord] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    incomplete: list[tuple[str, str]] = field(default_factory=list)  # (file, inspect status) of evals not finished


def log_files(path: str | Path) -> list[Path]:
    """The inspect logs ``path`` names: a ``.eval`` file, or a folder holding ``.eval`` files and no
    ``results.json`` (a run directory is never read as logs); empty when it names none."""
    root = Path(path)
    if root.suffix == LOG_SUFFIX and root.is_file():
        return [root]
    if root.is_dir() and not (root / "results.json").exists():
        return sorted(root.glob(f"*{LOG_SUFFIX}"))
    return []


def _read_eval_log(path: Path) -> EvalLog:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise InspectLogError(f"{path}: an inspect_ai log; reading it needs the 'inspect' extra: {EXTRA_HINT}") from None
    check_zip(path)  # a .eval log is a zip: a bomb is refused before inspect inflates it in memory
    try:
        # Each sample's bulky fields are streamed past, never held: a report keeps what the scorer recorded.
        return read_eval_log(str(path), exclude_fields=set(NOT_READ))
    except Exception as exc:  # noqa: BLE001 - inspect raises many kinds on a damaged file; each is named here
        raise InspectLogError(f"{path}: not a readable inspect log ({type(exc).__name__}: {exc})") from None


def _failure(meta: JsonObject, model: str, task: str, error: str) -> PredictionRecord:
    """The record of an instance whose inspect sample has no score (its request failed): a failure that counts.
    ``meta`` is the sample's metadata as the log holds it (open: read key by key, a missing one is the log's fault)."""
    record = PredictionRecord(model=model, task=task, instance_id=str(meta["instance_id"]),
                              sample_id=str(meta["sample_id"]), scenario=str(meta["scenario"]),
                              row_index=int(meta["row_index"]), gold=meta.get("gold"), status="request_error",
                              error=error or "the inspect sample has no score")
    record.scores = TASKS[task].instance_scores(record)
    return record


def _records(path: Path, log: EvalLog, model: str, task: str) -> list[PredictionRecord]:
    records = []
    for sample in log.samples or []:
        kept = [s.metadata[RECORD_KEY] for s in (sample.scores or {}).values() if s.metadata and RECORD_KEY in s.metadata]
        try:
            if kept:
                records.append(PredictionRecord.model_validate(kept[0]))
            else:
                error = sample.error.message if sample.error is not None else ""
                records.append(_failure(sample.metadata or {}, model, task, f"request_error: {error}".strip()))
        except (KeyError, ValueError, TypeError) as exc:
            raise InspectLogError(f"{path}: sample {sample.id}: field metadata.{RECORD_KEY}: {exc}") from None
    return records


def _sent_configs(log: EvalLog) -> list[JsonObject]:
    """The generate configs the log's scored samples record, one per distinct config, in order of appearance: as
    the log holds them (open: a log's are compared and shown, never trusted to be a :class:`SentGenerate`)."""
    seen: dict[str, JsonObject] = {}
    for sample in log.samples or []:
        for score in (sample.scores or {}).values():
            sent = (score.metadata or {}).get(GENERATE_KEY)
            if isinstance(sent, dict):
                seen.setdefault(json.dumps(sent, sort_keys=True), sent)
    return list(seen.values())


def _generation(config: JsonObject, log: EvalLog) -> None:
    """``config``'s ``temperature`` as the log's requests were sent: the one recorded, or None when the log records
    none (written before rescue did) or several (the requests differ); ``generate`` keeps what was recorded."""
    sent = _sent_configs(log)
    temperatures = {s.get("temperature") for s in sent}
    config["temperature"] = temperatures.pop() if len(temperatures) == 1 else None
    config["generate"] = sent


def _graders(log: EvalLog) -> list[str]:
    bound = (log.eval.model_roles or {}).get(GRADER)
    if bound is None:
        return []
    return [str(m.model) for m in (bound if isinstance(bound, list) else [bound])]


def read_log(path: str | Path) -> LoggedTask:
    """One ``.eval`` log of a RESCUE-Bench task; InspectLogError naming the file when it is not one."""
    file = Path(path)
    log = _read_eval_log(file)
    meta = (log.eval.metadata or {}).get(CONFIG_KEY)
    if not isinstance(meta, dict) or meta.get("task") not in TASKS:
        raise InspectLogError(f"{file}: field eval.metadata.{CONFIG_KEY}: missing; this log is not of a RESCUE-Bench "
                              f"task (inspect eval rescue/<task>), e.g. task {log.eval.task!r}")
    task, model = str(meta["task"]), str(log.eval.model)
    config = dict(meta.get("config") or {})
    config["models"] = [model]
    config["judges"] = _graders(log) if task in judged_tasks() else []
    _generation(config, log)
    return LoggedTask(file, model, task, str(log.eval.created), str(log.status), config, dict(meta.get("data") or {}),
                      _records(file, log, model, task))


def _group_key(logged: LoggedTask) -> str:
    config = logged.config
    used = config.get("used") or {}
    return json.dumps([logged.model, config.get("mode"), used.get("parse"), used.get("data_sha256"),
                       config.get("split"), config.get("judges"), config.get("judge_scale"),
                       logged.data.get("sample_ids"), config.get("temperature")], sort_keys=True, default=str)


def _merge(into: LoggedRun, logged: LoggedTask) -> None:
    """Add one task's log to a run of the same model and options (its task, its per-task used values)."""
    config = into.config
    config["tasks"] = [*config.get("tasks", []), logged.task]
    used, more = config.setdefault("used", {}), logged.config.get("used") or {}
    for key in ("task_options", "context_size", "batch_size", "rpp_gold_field"):
        if isinstance(more.get(key), dict):
            used.setdefault(key, {}).update(more[key])
    if more.get("rpp_gold") is not None:
        used["rpp_gold"] = more["rpp_gold"]
    sent = config.setdefault("generate", [])
    sent += [g for g in logged.config.get("generate") or [] if g not in sent]
    into.records += logged.records
    into.files.append(logged.path)


def read_logs(path: str | Path) -> list[LoggedRun]:
    """The runs ``path`` holds (a ``.eval`` file or a folder of them): one per model and set of options, each task
    once. InspectLogError when two logs hold the same task of the same run (name the one to report)."""
    runs: dict[str, LoggedRun] = {}
    seen: dict[tuple[str, str], Path] = {}
    for file in log_files(path):
        logged = read_log(file)
        key = _group_key(logged)
        if (key, logged.task) in seen:
            raise InspectLogError(f"{seen[(key, logged.task)]} and {file} both hold {logged.task.upper()} of "
                                  f"{logged.model} with the same options; give the one to report (a .eval file) "
                                  "or move the other away")
        seen[(key, logged.task)] = file
        run = runs.get(key)
        if run is None:
            config = dict(logged.config, tasks=[], used=dict(logged.config.get("used") or {}))
            run = runs[key] = LoggedRun(Path(path), logged.model, config, logged.data)
        _merge(run, logged)
        if logged.status != "success":
            run.incomplete.append((str(file), logged.status))
    return list(runs.values())
