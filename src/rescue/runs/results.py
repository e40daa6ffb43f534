"""``results.json`` as typed models: :class:`RunResults` → :class:`StoredConfig`, :class:`ModelResults` →
:class:`TaskResults` → :class:`ScopeMetrics`, with the schema version they write.

The engine builds a :class:`RunResults` and :mod:`rescue.runs.folder` writes it; the report reads it back with
the records through :func:`rescue.runs.folder.read_run`, ``rescue rescore`` through
:func:`rescue.runs.folder.read_results`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

# JsonObject is open here: metric keys a task declares, pydantic's serialized dicts, a provider's usage
from rescue.data.shapes import JsonObject
from rescue.runs.failures import FailureReason
from rescue.tasks import TASK_NAMES

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 2  # 1: results.json before it carried schema_version, run_id, data and predictions blocks
RESULTS = "results.json"
PREDICTIONS = "predictions.jsonl"
SCOPE_KEYS = ("all", "couple", "family")


class RunStatus(BaseModel):
    """results.json's "run": whether the run completed, why it stopped, how long it took."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _offline_was_rescored(cls, data: Any) -> Any:
        if isinstance(data, dict) and "offline" in data and "rescored" not in data:
            data = dict(data)
            data["rescored"] = data.pop("offline")
        return data

    complete: bool
    stopped: str | None = None
    elapsed_s: float = 0.0
    # Written by `rescue rescore`: the answers came from the cache and nothing was asked. It was called "offline"
    # until issue 35, which read as a contradiction of "offline baselines" (a baseline run asks no server either
    # and was "offline": false); a results.json written then is read with its value here.
    rescored: bool = False
    run_id: str | None = None  # shared with nothing else; names this command's write of the directory
    requests: int = 0  # new requests answered or finally failed in this command
    cache_hits: int = 0  # answers reused from the cache
    request_errors: int = 0  # instances left without an answer; complete only when 0
    judge_failures: int = 0  # grades a judge could not give (failed, refused, never valid); complete only when 0


class DataInfo(BaseModel):
    """results.json's "data": which data (path and SHA-256) and which samples the run used."""

    path: str | None  # absolute (runs before #28: as given); None: the bundled demo data
    sha256: str
    samples: int  # samples the run used
    sample_choice: str = "all"  # all | first | stratified | split:NAME
    sample_ids: list[str] | None = None  # with --limit-samples or --split: exactly which samples were taken
    split: str | None = None  # --split: the split of the splits file the samples came from
    # --limit N: at most N instances of each task, each scenario in its share, drawn with limit_seed; per task the
    # ids of the instances taken (None: every instance of the samples)
    limit: int | None = None
    limit_seed: int | None = None
    instance_ids: dict[str, list[str]] | None = None


class PredictionsInfo(BaseModel):
    """results.json's "predictions": the predictions file, its SHA-256 and record count."""

    file: str = PREDICTIONS
    sha256: str
    records: int


class CostBlock(BaseModel):
    """results.json's "cost": the total and what this invocation spent."""

    model_config = ConfigDict(extra="allow")

    total: float | None = None
    spent_this_run: float = 0.0


class ScopeMetrics(BaseModel):
    """One task's metrics over one scope (all, a scenario, or one sample): counts, then the task's metric keys.

    The metric keys are whatever the task declares (``rescue.tasks.spec.Metric``), so they are kept as extra
    fields and read through :meth:`value`; a metric that could not be computed is ``None``.
    """

    model_config = ConfigDict(extra="allow")

    instances: int = 0
    failures: int = 0

    def value(self, key: str) -> Any:
        """The metric ``key`` of this scope (None when absent)."""
        if key in ("instances", "failures"):
            return getattr(self, key)
        return (self.model_extra or {}).get(key)

    def values(self) -> JsonObject:
        """Every metric of this scope, counts first, as written in ``results.json``."""
        return {"instances": self.instances, "failures": self.failures, **(self.model_extra or {})}


class EpochSpread(BaseModel):
    """``--epochs`` above 1: how many epochs, the seed each sent, and per scope each epoch's metrics and their
    spread (the sample standard deviation over the epochs); the scopes themselves hold the epochs' means."""

    model_config = ConfigDict(extra="allow")

    count: int
    seeds: list[int | None] = Field(default_factory=list)
    per_epoch: dict[str, dict[str, list[float | None]]] = Field(default_factory=dict)
    spread: dict[str, dict[str, float | None]] = Field(default_factory=dict)


class TaskResults(BaseModel):
    """One model on one task: the pooled scope, each scenario present, and one entry per sample; with several
    epochs each the mean over the epochs, and ``epochs`` their values and spread."""

    model_config = ConfigDict(extra="allow")

    all: ScopeMetrics | None = None
    couple: ScopeMetrics | None = None
    family: ScopeMetrics | None = None
    samples: dict[str, ScopeMetrics] = Field(default_factory=dict)
    epochs: EpochSpread | None = None  # None (absent from the file): one epoch

    def scope(self, name: str) -> ScopeMetrics | None:
        """``all``, ``couple`` or ``family``; ``None`` where the run had no instance of that scope."""
        if name in SCOPE_KEYS:
            found: ScopeMetrics | None = getattr(self, name)
            return found
        return None

    @model_serializer(mode="wrap")
    def _absent_scopes_omitted(self, handler: SerializerFunctionWrapHandler) -> JsonObject:
        # A scenario the data lacks is absent from results.json, not null: readers test for the key.
        data: JsonObject = handler(self)
        return {k: v for k, v in data.items() if not ((k in SCOPE_KEYS or k == "epochs") and v is None)}


class ModelCost(BaseModel):
    """One model's cost: total, per task, the judge's, and whether it is a lower bound."""

    model_config = ConfigDict(extra="allow")

    total: float | None = None  # None: a price was missing for some of the model's usage
    tasks: dict[str, float | None] = Field(default_factory=dict)
    judge: float | None = None
    incomplete: bool = False  # some answers came without a readable usage: total is a lower bound


class ModelResults(BaseModel):
    """One model: usage, cost, and per task a :class:`TaskResults`.

    In ``results.json`` the tasks sit beside ``usage`` and ``cost`` under their own names
    (``models[m]["itp"]["all"]["f1"]``); in Python they are gathered in :attr:`tasks`.
    """

    model_config = ConfigDict(extra="allow")

    usage: JsonObject = Field(default_factory=dict)
    cost: ModelCost = Field(default_factory=ModelCost)
    # task -> the commonest reasons its answers failed (rescue.runs.failures); absent: none failed, or a run
    # written before they were stored (the report computes them from the records then).
    failure_reasons: dict[str, list[FailureReason]] = Field(default_factory=dict)
    tasks: dict[str, TaskResults] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _gather_tasks(cls, data: Any) -> Any:
        if isinstance(data, dict) and "tasks" not in data:
            data = dict(data)
            data["tasks"] = {name: data.pop(name) for name in TASK_NAMES if name in data}
        return data

    @model_serializer(mode="wrap")
    def _tasks_beside_usage(self, handler: SerializerFunctionWrapHandler) -> JsonObject:
        data: JsonObject = handler(self)
        tasks = data.pop("tasks", {})
        return {**data, **tasks}

    def scope(self, task: str, scope: str = "all") -> ScopeMetrics | None:
        """The stored metrics of ``task`` in ``scope``, None when absent."""
        entry = self.tasks.get(task)
        return None if entry is None else entry.scope(scope)


class BertScoreInfo(BaseModel):
    """What ``results.json`` records about the BERTScore backbone a run used (no machine paths)."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    num_layers: int | None = None
    rescale_with_baseline: bool = False


class UsedValues(BaseModel):
    """What a run really used where its options said "default": runs are compared on these."""

    model_config = ConfigDict(extra="allow")

    data_sha256: str | None = None
    task_options: dict[str, JsonObject] = Field(default_factory=dict)
    context_size: dict[str, int] = Field(default_factory=dict)
    batch_size: JsonObject = Field(default_factory=dict)
    parse: str | None = None
    rpp_gold: str | None = None
    rpp_gold_field: dict[str, str | None] = Field(default_factory=dict)
    # Per model the seed its requests carried (None: its provider takes none, or a baseline); empty before #46.
    seeds: dict[str, int | None] = Field(default_factory=dict)


class StoredConfig(BaseModel):
    """``results.json["config"]``: the run's :class:`~rescue.engine.config.RunConfig` as run, plus what it used.

    Only the fields a reader of results relies on are typed here; the rest of ``RunConfig`` is kept as extra
    fields and checked where it matters (:meth:`RunConfig.from_json` on resume and rescore). ``bertscore`` is
    the backbone's description (``None``: BERTScore was off or had nothing to score); the option itself is
    ``bertscore_enabled``.
    """

    model_config = ConfigDict(extra="allow")

    mode: str = "dialogue"
    data: str | None = None  # as given (None: the bundled demo data)
    context_size: int | None = None
    parse: str = "strict"
    rpp_gold: str | None = None
    judges: list[str] = Field(default_factory=list)
    judge_scale: str = "likert"
    bertscore: BertScoreInfo | None = None
    bertscore_enabled: bool | None = None
    rescue_version: str | None = None
    used: UsedValues = Field(default_factory=UsedValues)
    thinking: str | None = None  # --thinking (None: the models' own default, and every run before it existed)
    model_settings: dict[str, JsonObject] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _option_is_not_a_backbone(cls, data: Any) -> Any:
        # A hand-written config may hold the option (true/false) where rescue writes the backbone.
        if isinstance(data, dict) and isinstance(data.get("bertscore"), bool):
            data = dict(data)
            data.setdefault("bertscore_enabled", data["bertscore"])
            data["bertscore"] = None
        return data

    def as_dict(self) -> JsonObject:
        """The config as JSON."""
        return self.model_dump(mode="json")


class GrowthStep(BaseModel):
    """One step of a run that grew (``results.json["growth"]``): the models and tasks one command added to the run
    directory, which command (its ``run_id``) and when (UTC, ISO 8601). The first step is the run as it was made."""

    model_config = ConfigDict(extra="allow")

    run_id: str | None = None
    at: str | None = None
    models: list[str] = Field(default_factory=list)
    tasks: list[str] = Field(default_factory=list)


class RunResults(BaseModel):
    """``results.json``."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    config: StoredConfig
    run: RunStatus | None = None  # None only in hand-written files; rescue always writes it
    data: DataInfo | None = None
    predictions: PredictionsInfo | None = None
    cost: CostBlock = Field(default_factory=CostBlock)
    models: dict[str, ModelResults]
    # Empty for a run made by one command; a run that grew (a model or task added in place) lists its steps.
    growth: list[GrowthStep] = Field(default_factory=list)

    def metrics(self, model: str, task: str, scope: str = "all") -> JsonObject:
        """The stored metrics of ``model`` on ``task`` in ``scope`` (empty when absent)."""
        found = self.models[model].scope(task, scope)
        return {} if found is None else found.values()

    def to_pandas(self, *, samples: bool = False) -> pd.DataFrame:
        """One row per (model, task, scope) with every metric as a column; ``samples`` adds per-sample rows."""
        import pandas as pd

        rows: list[JsonObject] = []
        for model, entry in self.models.items():
            for task, scopes in entry.tasks.items():
                for scope in SCOPE_KEYS:
                    found = scopes.scope(scope)
                    if found is not None:
                        rows.append({"model": model, "task": task, "scope": scope, **found.values()})
                if samples:
                    for sample_id, values in scopes.samples.items():
                        rows.append({"model": model, "task": task, "scope": f"sample:{sample_id}", **values.values()})
        return pd.DataFrame(rows)

    def to_json_text(self) -> str:
        """results.json's text (a value that is not a finite number is null)."""
        from rescue.data.text import json_safe

        # JSON has no NaN or Infinity: such a metric is written as null.
        return json.dumps(json_safe(self.model_dump(mode="json")), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
