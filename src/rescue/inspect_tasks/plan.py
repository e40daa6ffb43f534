"""What one inspect task evaluates, chosen and recorded exactly as ``rescue run`` does.

The samples (``--data``, ``--split``, ``--limit-samples``) go through the runner's own selection, the instances
through the task's ``build``, and what the run used (data sha256, context size, task options, parse policy)
through the runner's :func:`~rescue.engine.plan.values_used`; the prompt of an instance is the task's
``render`` of that instance alone (``rescue run``'s default ``--batch-size 1``). Nothing imports inspect_ai.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from rescue.data.shapes import ChatMessage, JsonObject
from rescue._version import __version__
from rescue.errors import BenchError as BenchError
from rescue.data.choices import JudgeScale, Mode, ParsePolicy
from rescue.engine.config import RunConfig
from rescue.engine.run_options import RunOptions, SampleChoice
from rescue.runs.results import DataInfo, StoredConfig
from rescue.tasks import SCENARIOS, get_task
from rescue.tasks.base import PARSE_POLICIES, VIDEO_MODES, Instance, RenderOptions, Task
from rescue.tasks.render import RowCache


@dataclass(frozen=True)
class BenchOptions:
    """The parameters of one inspect task (``inspect eval rescue/itp -T mode=audio -T split=test``): ``rescue
    run``'s options of the same names, with its types and defaults (RunOptions), plus ``scenario`` and ``options``."""

    task: str
    mode: Mode = RunOptions.mode
    context_size: int | None = None  # None: the task's default; -1: every prior row
    scenario: str | None = None  # couple or family; None: both
    split: str | None = None  # a split of the splits file (rescue splits); None: every sample
    splits: str | None = None  # the splits file (None: ./splits.json, as rescue run --split)
    parse: ParsePolicy = RunOptions.parse
    data: str | None = None  # None: the bundled demo dataset, as rescue run
    limit_samples: int | None = None
    sample_choice: SampleChoice = RunOptions.sample_choice
    # The task's build options (rpp_gold ...): open here, as a user gives them; the task's options model checks them.
    options: JsonObject = field(default_factory=dict)
    judge_scale: JudgeScale = RunOptions.judge_scale  # ER/VP: the judge rubric's scale

    def run_config(self) -> RunConfig:
        """The ``rescue run`` configuration these options mean (one task, one instance per request)."""
        if self.mode in VIDEO_MODES:
            raise BenchError(f"mode={self.mode!r}: video modes send media that only `rescue run` prepares; "
                             "use a transcript mode (dialogue, audio, visual, audiovisual)")
        if self.scenario is not None and self.scenario not in SCENARIOS:
            raise BenchError(f"scenario={self.scenario!r}: choose one of {', '.join(SCENARIOS)}")
        if self.parse not in PARSE_POLICIES:
            raise BenchError(f"parse={self.parse!r}: choose one of {', '.join(PARSE_POLICIES)}")
        name = get_task(self.task).name
        return RunConfig.model_validate({
            "out": ".", "tasks": [name], "data": self.data, "mode": self.mode, "context_size": self.context_size,
            "limit_samples": self.limit_samples, "sample_choice": self.sample_choice, "split": self.split,
            "splits": self.splits, "parse": self.parse, "task_options": {name: dict(self.options)} if self.options else {},
            "judge_scale": self.judge_scale, "bertscore": False})


class PlanMetadata(TypedDict):
    """What an inspect log keeps of a plan (its task metadata under ``CONFIG_KEY``), read back by
    :func:`rescue.runs.inspect_logs.read_log`."""

    task: str
    config: JsonObject  # the StoredConfig as JSON; its fields beyond StoredConfig's are RunConfig's, open to it
    data: JsonObject  # the DataInfo as JSON, the fields it was given only
    scenario: str | None


@dataclass
class BenchPlan:
    """The instances of one inspect task, how each is rendered, and the configuration its log records."""

    task: Task
    instances: list[Instance]
    render_options: RenderOptions
    config: StoredConfig  # results.json "config" as rescue run writes it (judges filled in from the log)
    data: DataInfo  # results.json "data"
    scenario: str | None = None
    _by_id: dict[str, Instance] = field(default_factory=dict, init=False, repr=False)

    def instance(self, instance_id: str) -> Instance:
        """The instance an inspect sample is about (its id is the instance id)."""
        if not self._by_id:
            self._by_id = {i.instance_id: i for i in self.instances}
        return self._by_id[instance_id]

    def messages(self, instance: Instance) -> list[ChatMessage]:
        """The exact messages ``rescue run`` sends for ``instance`` (asked alone)."""
        return list(self.task.render([instance], self.render_options))

    def metadata(self) -> PlanMetadata:
        """What the inspect log keeps of the plan (task metadata): the config and data with the keys they were
        built from, none added by their models' defaults."""
        return {"task": self.task.name, "config": self.config.model_dump(mode="json", exclude_unset=True),
                "data": self.data.model_dump(mode="json", exclude_unset=True), "scenario": self.scenario}


def build_plan(options: BenchOptions) -> BenchPlan:
    """Samples, instances and the recorded configuration of one inspect task; BenchError or RescueError naming
    the parameter or file that is wrong."""
    from rescue.data.fingerprint import data_sha256
    from rescue.data.loading import load_samples
    from rescue.engine.parts import Asking, Selection
    from rescue.engine.plan import build_options, select_samples, values_used

    config = options.run_config()
    task = get_task(options.task)
    samples, choice = select_samples(config.part(Selection), load_samples(config.data))
    sha = data_sha256(config.data)
    instances = task.build(samples, **build_options(config.task_options, task))
    if options.scenario is not None:
        instances = [i for i in instances if i.scenario == options.scenario]
    stored = config.to_json()
    stored.pop("out", None)  # an inspect task writes no run directory
    stored.update(bertscore_enabled=False, bertscore=None, rescue_version=__version__,
                  used=values_used(config.part(Asking), config.task_options, {task.name: task}, {task.name: instances},
                                   sha))
    data = DataInfo(path=str(Path(config.data).resolve()) if config.data else None, sha256=sha, samples=len(samples),
                    sample_choice=choice, sample_ids=[s.sample_id for s in samples] if choice != "all" else None,
                    split=config.split)
    render = config.part(Asking).render(RowCache())
    return BenchPlan(task, instances, render, StoredConfig.model_validate(stored), data, options.scenario)
