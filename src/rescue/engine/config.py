"""The one model of a run's configuration: ``rescue run`` builds it, ``results.json`` stores it, resume checks it.

Its fields, with their types, defaults and command-line spelling, are declared once in
:class:`rescue.engine.run_options.RunOptions`; this module adds the checks (which name the option a bad value came
from) and what a run does with the configuration.

Fields are split by what they decide. *Result* fields change which requests are made or how answers are
scored: a run directory resumes only a run whose result fields (and data fingerprint) are the same.
*Operational* fields (where to write, how hard to push the endpoint, when to give up) may change between
a run and its resume.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from rescue.errors import RunError as RunError
from rescue.engine.parts import G, part
from rescue.engine.run_options import RunOptions, TaskOptionValues, declared_options, gather_video
from rescue.llm import GenerationSettings
from rescue.tasks import TASK_NAMES, graded_tasks
from rescue.tasks.base import VIDEO_MODES
from rescue.video import VideoOptions


# Fields that may differ between a run and its resume: they change neither requests nor scores.
OPERATIONAL_FIELDS = frozenset({
    "out", "data", "api_key_env", "judge_api_key_env", "timeout", "concurrency", "max_retries", "max_failures",
    "max_cost", "retry_errors", "cache_dir", "prices", "quiet", "overwrite", "retry_after_cap", "splits",
    "progress_interval",
    # A streamed answer is the same answer; keeping reasoning changes no score; --budget-retry only adds
    # answers for what ran out of budget, so a rerun with it continues the same run.
    "stream", "store_reasoning", "budget_retry",
    # A batch answer is the same answer, stored under the same key: a run may be continued with or without it.
    "batch", "batch_poll", "batch_settle",
})

_FIELDS = {d.name: d for d in declared_options() if d.in_config}
_CLOSED = [name for name, d in _FIELDS.items() if d.choices]  # Literal fields
_CHECKED = [name for name, d in _FIELDS.items() if d.opt.check is not None]


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


class RunConfig(RunOptions, BaseModel):
    """Everything that decides a run's results; stored as ``results.json["config"]`` and read back by rescore."""

    model_config = ConfigDict(extra="forbid")

    def __init__(self, **fields: Any):
        # From the command line, a suite's [run] table or the notebook API, a value of the wrong type or an
        # option that does not exist is a RunError naming it, never pydantic's report.
        try:
            super().__init__(**fields)
        except ValidationError as exc:
            raise RunError(_option_problem(exc)) from None

    @model_validator(mode="before")
    @classmethod
    def _video_from_its_options(cls, data: Any) -> Any:
        # rescue run's video options (--media-root, --frame-size ...) by name, as rescue.evaluate takes them too
        return gather_video(data) if isinstance(data, dict) else data

    @field_validator("video", mode="plain")
    @classmethod
    def _video_as_given(cls, value: Any) -> Any:
        # Read and checked by VideoOptions itself, with the mode (_check), into a VideoOptions or None: its
        # errors name the option, where pydantic's reading of the dataclass would drop an unknown one silently.
        return value

    @field_serializer("video")
    def _video_as_json(self, video: VideoOptions | None) -> dict[str, Any] | None:
        return None if video is None else video.to_json()

    @model_validator(mode="before")
    @classmethod
    def _every_task_by_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("tasks") is None:
            return {**data, "tasks": list(TASK_NAMES)}
        return data

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks_any_case(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list | tuple):
            return [str(t).strip().lower() for t in value if str(t).strip()]
        return value

    @field_validator("tasks")
    @classmethod
    def _known_tasks(cls, value: list[str]) -> list[str]:
        value = list(dict.fromkeys(value))
        if not value:
            raise RunError(f"--tasks: no task given; choose from {', '.join(TASK_NAMES)}")
        unknown = [t for t in value if t not in TASK_NAMES]
        if unknown:
            raise RunError(f"--tasks: unknown task(s) {', '.join(unknown)}; choose from {', '.join(TASK_NAMES)}")
        return value

    @field_validator("models")
    @classmethod
    def _named_models(cls, value: list[str]) -> list[str]:
        value = list(dict.fromkeys(m.strip() for m in value))  # a model named twice is run once
        if any(not m for m in value):
            raise RunError("--model: empty model name")
        return value

    @field_validator("judges")
    @classmethod
    def _each_judge_once(cls, value: list[str]) -> list[str]:
        value = [j.strip() for j in value]
        if any(not j for j in value):
            raise RunError("--judge: empty model name")
        twice = sorted({j for j in value if value.count(j) > 1})
        if twice:
            raise RunError(f"--judge {twice[0]!r} is given twice: each judge grades once (--judge-repeats asks a "
                           "judge several times)")
        return value

    @field_validator(*_CLOSED, mode="before")
    @classmethod
    def _one_of_its_choices(cls, value: Any, info: ValidationInfo) -> Any:
        declared = _FIELDS[str(info.field_name)]
        if value is not None and value not in declared.choices:
            raise RunError(f"{declared.opt.flag} {value!r}: choose one of {', '.join(declared.choices)}")
        return value

    @field_validator(*_CHECKED)
    @classmethod
    def _passes_its_check(cls, value: Any, info: ValidationInfo) -> Any:
        declared = _FIELDS[str(info.field_name)]
        test, problem = declared.opt.check  # type: ignore[misc]
        if not test(value):
            raise RunError(f"{declared.opt.flag} {_shown(value)}: {problem}")
        return value

    @model_validator(mode="after")
    def _check(self) -> RunConfig:
        if self.mode in VIDEO_MODES:
            from rescue.video import check_video_config

            self.video = check_video_config(self.video, self.batch_size)
        elif self.video is not None:
            raise RunError(f"--media-root and the video options need --mode {' or '.join(VIDEO_MODES)}")
        for spec in self.model_settings:
            self.settings_for(spec)  # unknown generation settings fail before any work
        self.task_options = _checked_task_options(self.task_options, self.rpp_gold)
        return self

    @property
    def model_specs(self) -> list[str]:
        """The models to run: those given, else every offline baseline."""
        if self.models:
            return list(self.models)
        from rescue.baselines import BASELINE_NAMES

        return list(BASELINE_NAMES)

    def settings_for(self, spec: str) -> GenerationSettings:
        """The generation settings of model ``spec``: the run's, overridden by the model's own (extra_body merged)."""
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

    def part(self, group: type[G]) -> G:
        """The part of the config a helper reads (a group of :mod:`rescue.engine.parts`: ``config.part(Judging)``)."""
        return part(self, group)

    def to_json(self) -> dict[str, Any]:
        """The config as results.json records it (models resolved, credentials removed from URLs)."""
        from rescue.llm._secrets import redact_url

        data = self.model_dump(mode="json")
        data["models"] = self.model_specs
        # A key in an endpoint URL never reaches results.json; resume compares the redacted forms.
        for name in ("base_url", "judge_base_url"):
            data[name] = redact_url(data[name])
        if self.judge_repeats == 1:  # judged once: results.json as before, and older runs resume
            del data["judge_repeats"]
        if self.epochs == 1:  # asked once: results.json as before, and older runs resume
            del data["epochs"]
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
        """The config a results.json recorded, read back (older spellings accepted); ``origin`` names it in errors."""
        known = set(cls.model_fields)
        data = dict(data)
        # results.json records the BERTScore backbone under "bertscore" (None: BERTScore was off or had
        # nothing to score) and the option itself under "bertscore_enabled".
        if isinstance(data.get("bertscore_enabled"), bool):
            data["bertscore"] = data["bertscore_enabled"]
        elif not isinstance(data.get("bertscore"), bool):
            data["bertscore"] = data.get("bertscore") is not None
        try:
            return cls.model_validate({k: v for k, v in data.items() if k in known})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise RunError(f"{origin}: field config.{where}: {first['msg']}") from None


def _option_problem(exc: ValidationError) -> str:
    """The first problem of a configuration pydantic refused, named by its option (``--max-tokens``)."""
    first = exc.errors()[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    declared = _FIELDS.get(name)
    if first["type"] == "extra_forbidden":
        return f"unknown option {name!r} (rescue run --help lists them; in Python, by their RunConfig names)"
    where = declared.opt.flag if declared is not None else name
    if first["type"] == "missing":
        return f"{where} is required"
    inner = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"][1:])
    shown = _shown(first.get("input"))
    return f"{where}{inner} {shown if len(shown) <= 80 else shown[:79] + '…'}: {first['msg']}"


def _checked_task_options(options: TaskOptionValues, rpp_gold: str | None) -> TaskOptionValues:
    """Per-task build options, each checked against its task's options model before any work."""
    from rescue.tasks import get_task
    from rescue.tasks.spec import validate_options

    checked: TaskOptionValues = {}
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
