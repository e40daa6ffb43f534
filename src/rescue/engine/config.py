"""The one model of a run's configuration: ``rescue run`` builds it, ``results.json`` stores it, resume checks it.

Fields are split by what they decide. *Result* fields change which requests are made or how answers are
scored: a run directory resumes only a run whose result fields (and data fingerprint) are the same.
*Operational* fields (where to write, how hard to push the endpoint, when to give up) may change between
a run and its resume. ``tests/test_run_config.py`` checks that every field is a ``rescue run`` option with
the same default, so the CLI cannot drift from this model.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from rescue.data.errors import RescueError
from rescue.llm.client import DEFAULT_MAX_ANSWER_BYTES, GenerationSettings
from rescue.llm.providers import THINKING_LEVELS
from rescue.llm.reliable import DEFAULT_RETRY_AFTER_CAP
from rescue.tasks import graded_tasks
from rescue.tasks.base import MODES, PARSE_POLICIES, TASK_NAMES, VIDEO_MODES


class RunError(RescueError):
    """A run that cannot start or cannot be rescored; the message says which option or file is wrong."""


JUDGE_SCALES = ("likert", "authors")
SAMPLE_CHOICES = ("first", "stratified")

# Fields that may differ between a run and its resume: they change neither requests nor scores.
OPERATIONAL_FIELDS = frozenset({
    "out", "data", "api_key_env", "judge_api_key_env", "timeout", "concurrency", "max_retries", "max_failures",
    "max_cost", "retry_errors", "cache_dir", "prices", "quiet", "overwrite", "retry_after_cap", "splits",
    # A streamed answer is the same answer; keeping reasoning changes no score; --budget-retry only adds
    # answers for what ran out of budget, so a rerun with it continues the same run.
    "stream", "store_reasoning", "budget_retry",
    # A batch answer is the same answer, stored under the same key: a run may be continued with or without it.
    "batch", "batch_poll",
})


class RunConfig(BaseModel):
    """Everything that decides a run's results; stored as ``results.json["config"]`` and read back by rescore."""

    model_config = ConfigDict(extra="forbid")

    out: str
    models: list[str] = []  # empty: the offline baselines
    tasks: list[str] = list(TASK_NAMES)
    data: str | None = None  # None: the bundled demo dataset; compared through results.json's data sha256
    mode: str = "dialogue"
    video: Any = None  # video modes: rescue.video.VideoOptions (media root, frames or clip ...); stored as a dict
    context_size: int | None = None  # None: each task's default
    limit_samples: int | None = None
    # with limit_samples: stratified by scenario and session group (enough groups for intervals), or the first N
    sample_choice: str = "stratified"
    split: str | None = None  # only this split of the splits file (rescue.data.splits), before limit_samples
    splits: str | None = None  # the splits file --split reads (None: ./splits.json)
    batch_size: str = "1"  # "1", a number, or "authors" (each task's authors' batch size)
    parse: str = "strict"  # "strict" or "lenient" (rescue.tasks.base.ParsePolicy); rescore can switch it
    rpp_gold: str | None = None  # shorthand for task_options["rpp"]["rpp_gold"]
    task_options: dict[str, dict[str, Any]] = {}  # per task: its build options
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    seed: int | None = None  # sent to the API where supported; seeds baseline/uniform
    max_tokens: int | None = None
    json_mode: bool = True
    extra_body: dict[str, Any] = {}
    timeout: float = 240.0  # seconds for a whole request, the body included
    retry_after_cap: float = DEFAULT_RETRY_AFTER_CAP  # the longest Retry-After obeyed; asked twice for more: failed
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES  # a larger answer is a request_error, never stored
    stream: bool | None = None  # server-sent events; None: each preset's default
    thinking: str | None = None  # on, off, low, medium, high, mapped per provider; None: the models' defaults
    store_reasoning: bool = True  # keep thinking models' reasoning with each record
    budget_retry: float | None = None  # ask budget_exhausted answers once more with the budget times this
    batch: bool = False  # send the requests through the providers' batch APIs (rescue.llm.batch)
    batch_poll: float = 30.0  # seconds between two reads of a batch's status
    model_settings: dict[str, dict[str, Any]] = {}  # per model spec: overrides
    concurrency: int = 16
    max_retries: int = 5
    max_failures: int | None = 50
    max_cost: float | None = None
    retry_errors: bool = False
    cache_dir: str | None = None  # None: the run directory
    prices: str | None = None
    judges: list[str] = []
    judge_base_url: str | None = None  # None: the judges' presets, or --base-url
    judge_api_key_env: str | None = None
    judge_scale: str = "likert"
    judge_repeats: int = 1  # --judge-repeats: each judge asked this often per item (the first repeat scores)
    bertscore: bool = True
    bertscore_model: str | None = None
    bertscore_layers: int | None = None  # None: the backbone's default layer
    bertscore_rescale: bool = False
    quiet: bool = False
    overwrite: bool = False  # replace a run directory that holds a run with another configuration

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks_any_case(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list | tuple):
            return [str(t).strip().lower() for t in value if str(t).strip()]
        return value

    @model_validator(mode="after")
    def _check(self) -> RunConfig:
        self.models = list(dict.fromkeys(m.strip() for m in self.models))  # a model named twice is run once
        self.tasks = list(dict.fromkeys(self.tasks))
        if not self.tasks:
            raise RunError(f"--tasks: no task given; choose from {', '.join(TASK_NAMES)}")
        unknown = [t for t in self.tasks if t not in TASK_NAMES]
        if unknown:
            raise RunError(f"--tasks: unknown task(s) {', '.join(unknown)}; choose from {', '.join(TASK_NAMES)}")
        if any(not m for m in self.models):
            raise RunError("--model: empty model name")
        if self.mode not in MODES:
            raise RunError(f"--mode {self.mode!r}: choose one of {', '.join(MODES)}")
        if self.mode in VIDEO_MODES:
            from rescue.video import check_video_config

            self.video = check_video_config(self.video, self.batch_size)
        elif self.video is not None:
            raise RunError(f"--media-root and the video options need --mode {' or '.join(VIDEO_MODES)}")
        if self.batch_size != "authors":
            try:
                if int(self.batch_size) < 1:
                    raise ValueError
            except ValueError:
                raise RunError(f"--batch-size {self.batch_size!r}: a positive number or 'authors'") from None
        if self.context_size is not None and self.context_size < -1:
            raise RunError(f"--context-size {self.context_size}: use -1 (all prior rows), 0 (none) or a positive count")
        if self.parse not in PARSE_POLICIES:
            raise RunError(f"--parse {self.parse!r}: choose one of {', '.join(PARSE_POLICIES)}")
        if self.concurrency < 1:
            raise RunError("--concurrency must be at least 1")
        if self.limit_samples is not None and self.limit_samples < 1:
            raise RunError("--limit-samples must be at least 1")
        if self.sample_choice not in SAMPLE_CHOICES:
            raise RunError(f"--sample-choice {self.sample_choice!r}: choose one of {', '.join(SAMPLE_CHOICES)}")
        if self.judge_scale not in JUDGE_SCALES:
            raise RunError(f"--judge-scale {self.judge_scale!r}: choose one of {', '.join(JUDGE_SCALES)}")
        if self.judge_repeats < 1:
            raise RunError(f"--judge-repeats {self.judge_repeats}: must be at least 1")
        if not self.timeout > 0:
            raise RunError(f"--timeout {self.timeout}: a positive number of seconds")
        if not self.retry_after_cap >= 0:
            raise RunError(f"--retry-after-cap {self.retry_after_cap}: 0 or more seconds")
        if self.max_answer_bytes < 1:
            raise RunError(f"--max-answer-bytes {self.max_answer_bytes}: a positive number of bytes")
        if self.max_retries < 0:
            raise RunError("--max-retries must be 0 or more")
        if not self.batch_poll > 0:
            raise RunError(f"--batch-poll {self.batch_poll}: a positive number of seconds")
        if self.thinking is not None and self.thinking not in THINKING_LEVELS:
            raise RunError(f"--thinking {self.thinking!r}: choose one of {', '.join(THINKING_LEVELS)}")
        if self.budget_retry is not None and not self.budget_retry > 1:
            raise RunError(f"--budget-retry {self.budget_retry}: a factor above 1 (2 asks again with twice the "
                           "budget)")
        for spec in self.model_settings:
            self.settings_for(spec)  # unknown generation settings fail before any work
        self.task_options = _checked_task_options(self.task_options, self.rpp_gold)
        return self

    @property
    def model_specs(self) -> list[str]:
        if self.models:
            return list(self.models)
        from rescue.engine.baselines import BASELINE_NAMES

        return list(BASELINE_NAMES)

    def settings_for(self, spec: str) -> GenerationSettings:
        base: dict[str, Any] = {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
                                "json_mode": self.json_mode, "extra_body": dict(self.extra_body), "timeout": self.timeout,
                                "max_answer_bytes": self.max_answer_bytes, "stream": self.stream,
                                "thinking": self.thinking, "store_reasoning": self.store_reasoning}
        own = self.model_settings.get(spec, {})
        merged = {**base, **{k: v for k, v in own.items() if k != "extra_body"}}
        merged["extra_body"] = {**base["extra_body"], **own.get("extra_body", {})}
        allowed = set(GenerationSettings.__dataclass_fields__)
        bad = set(merged) - allowed
        if bad:
            raise RunError(f"model settings for {spec!r}: unknown field(s) {', '.join(sorted(bad))}; "
                           f"known: {', '.join(sorted(allowed))}")
        return GenerationSettings(**merged)

    def to_json(self) -> dict[str, Any]:
        from rescue.llm.secrets import redact_url

        data = self.model_dump(mode="json")
        data["models"] = self.model_specs
        # A key in an endpoint URL never reaches results.json; resume compares the redacted forms.
        for name in ("base_url", "judge_base_url"):
            data[name] = redact_url(data[name])
        if self.judge_repeats == 1:  # judged once: results.json as before, and older runs resume
            del data["judge_repeats"]
        return data

    def result_fields(self) -> dict[str, Any]:
        """The fields a resumed run must share with the run it continues."""
        data = {k: v for k, v in self.to_json().items() if k not in OPERATIONAL_FIELDS}
        if isinstance(data.get("video"), dict):  # where the media lie and how many make them changes no request
            data["video"] = {k: v for k, v in data["video"].items() if k not in ("media_root", "workers")}
        if self.limit_samples is None:  # every sample: how N would be chosen changes nothing
            data.pop("sample_choice", None)
        if not set(self.tasks) & set(graded_tasks()):  # judges and BERTScore score nothing else
            for key in [k for k in data if k.startswith(("bertscore", "judge"))]:
                del data[key]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], origin: str) -> RunConfig:
        known = set(cls.model_fields)
        data = dict(data)
        # results.json records the BERTScore backbone under "bertscore" (None: BERTScore was off or had
        # nothing to score) and the option itself under "bertscore_enabled".
        if isinstance(data.get("bertscore_enabled"), bool):
            data["bertscore"] = data["bertscore_enabled"]
        elif not isinstance(data.get("bertscore"), bool):
            data["bertscore"] = data.get("bertscore") is not None
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise RunError(f"{origin}: field config.{where}: {first['msg']}") from None


def _checked_task_options(options: dict[str, dict[str, Any]], rpp_gold: str | None) -> dict[str, dict[str, Any]]:
    """Per-task build options, each checked against its task's options model before any work."""
    from rescue.tasks import get_task
    from rescue.tasks.spec import validate_options

    checked: dict[str, dict[str, Any]] = {}
    for name, values in options.items():
        task = get_task(name)
        checked[task.name] = dict(values)
    if rpp_gold:  # --rpp-gold: the shorthand for --task-option rpp.rpp_gold=...
        checked.setdefault("rpp", {}).setdefault("rpp_gold", rpp_gold)
    for name, values in checked.items():
        validate_options(name, get_task(name).declaration.options, values)
    return checked


def config_differences(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``field: old → new`` for every result field on which two configurations differ."""
    differences = []
    for key in sorted(set(stored) | set(current)):
        if stored.get(key) != current.get(key):
            differences.append(f"{key}: {_short(stored.get(key))} → {_short(current.get(key))}")
    return differences


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"
