"""``rescue run --dry-run``: what a run would send, counted before anything is sent or written.

Per model and task: requests, the images (video mode, frames) or clip seconds (clip) they carry, estimated
input tokens (text at ~4 characters a token; media by :mod:`rescue.video._tokens`), the output token budget, and
the cost at most (input estimate + full output budget) from the price table. Per judge: one request per ER/VP
instance of each evaluated model, its prompt measured with the gold in place of the prediction (a prediction
is about as long), each with the judge's full answer budget. Estimates, not bills: the providers' own image
and video tokens, which the run records from each answer's usage, are the truth.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rescue.data.shapes import ChatMessage
from rescue.engine.parts import Asking, Judging, Selection
from rescue.llm import PriceTable, Usage
from rescue.tasks.render import RowCache

if TYPE_CHECKING:
    from rescue.data.models import Sample
    from rescue.engine.config import RunConfig
    from rescue.tasks.base import Instance, Task

CHARS_PER_TOKEN = 4


def text_tokens(text: str) -> int:
    """The estimated tokens of ``text`` (characters / CHARS_PER_TOKEN, rounded up)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass
class TaskEstimate:
    """What one model on one task would send: requests, instances, media and estimated tokens."""

    task: str
    requests: int = 0
    instances: int = 0
    images: int = 0
    clip_seconds: float = 0.0
    text_tokens: int = 0
    media_tokens: int = 0
    max_output_tokens: int = 0
    # Of text_tokens: the prefix each prompt shares with the one sent before it (rescue.engine.plan.send_chains),
    # what a provider's prompt cache can serve.
    cacheable_tokens: int = 0

    @property
    def input_tokens(self) -> int:
        """Text and media tokens together."""
        return self.text_tokens + self.media_tokens

    @property
    def cacheable_share(self) -> float | None:
        """The share of text tokens a provider's prompt cache could reuse (None without text)."""
        return None if not self.text_tokens else round(self.cacheable_tokens / self.text_tokens, 4)


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (binary search over C-speed comparisons)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass
class ModelEstimate:
    """What one model would send over all tasks, and what it would cost at most."""

    model: str
    tasks: list[TaskEstimate] = field(default_factory=list)
    cost_at_most: float | None = None  # None: no price for the model


@dataclass
class JudgeEstimate:
    """One judge's requests for one evaluated model (the same for every model: one per graded instance)."""

    judge: str
    tasks: list[TaskEstimate] = field(default_factory=list)
    cost_per_model: float | None = None  # None: no price for the judge
    models: int = 0  # evaluated models it grades

    @property
    def requests_per_model(self) -> int:
        """The judge requests for one evaluated model."""
        return sum(t.requests for t in self.tasks)

    @property
    def cost_at_most(self) -> float | None:
        """The judge's cost at most over all evaluated models (None without a price)."""
        return None if self.cost_per_model is None else round(self.cost_per_model * self.models, 4)


@dataclass
class RunEstimate:
    """What ``rescue run --dry-run`` reports: per model and judge, requests, tokens and cost, and warnings."""

    mode: str
    samples: int
    models: list[ModelEstimate]
    video_input: str | None = None  # video modes: frames or clip
    judges: list[JudgeEstimate] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # e.g. a thinking model with small answer budgets

    def to_json(self) -> dict[str, Any]:
        """The estimate as JSON."""
        return asdict(self)


def _content_text(messages: list[ChatMessage]) -> str:
    out = []
    for message in messages:
        content = message["content"]
        out.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return "\n".join(out)


def _planned(config: RunConfig, samples: list[Sample],
             single: bool) -> list[tuple[str, Task, list[Instance], list[list[Instance]]]]:
    """Each task's name, task, instances and batches as the run forms them (``single``: one instance each)."""
    from rescue.engine.plan import batch_plan, build_options, limit_instances, load_task

    planned = []
    for name in config.tasks:
        task = load_task(name)
        built = task.build(samples, **build_options(config.task_options, task))
        instances = limit_instances(config.part(Selection).limit, name, built)
        batches = [[i] for i in instances] if single else batch_plan(config.part(Asking), task, instances).batches
        planned.append((name, task, instances, batches))
    return planned


def _times(estimate: TaskEstimate, epochs: int) -> TaskEstimate:
    """What ``epochs`` askings of every instance send (--epochs): each count that is sent that many times."""
    if epochs == 1:
        return estimate
    for name in ("requests", "images", "clip_seconds", "text_tokens", "media_tokens", "max_output_tokens",
                 "cacheable_tokens"):
        setattr(estimate, name, getattr(estimate, name) * epochs)
    return estimate


def estimate_run(config: RunConfig) -> RunEstimate:
    """Count what ``rescue run`` with ``config`` would send; reads the data (and probes the media), writes nothing.
    Every option the run would refuse is refused first, with the run's message."""
    from rescue.data.loading import load_samples
    from rescue.engine.plan import chain_share, load_task, select_samples, send_chains
    from rescue.engine.runner import check_run

    check_run(config)  # a dry run refuses what the run would refuse, before it counts
    samples, _ = select_samples(config.part(Selection), load_samples(config.data))
    video = None
    if config.video is not None:  # a video mode
        from rescue.video import VideoContext

        video = VideoContext.locate(config.video, samples, None)  # probe only: no hashing, no store
    options = config.part(Asking).render(RowCache())
    per_task: list[TaskEstimate] = []
    graded: dict[str, list[Instance]] = {}  # judged task -> its instances
    planned = _planned(config, samples, video is not None)
    share = chain_share([len(batches) for *_, batches in planned], config.concurrency)  # as the run cuts chains
    for name, task, instances, batches in planned:
        if config.judges and task.declaration.judge is not None:
            graded[name] = instances
        estimate = TaskEstimate(name, instances=len(instances))
        chains = send_chains(batches, config.concurrency, share)
        head = ""  # the first prompt of the chain before: what every chain shares (the instructions)
        order = [(n, batch) for chain in chains for n, batch in enumerate(chain)]
        previous = ""
        for n, batch in order:
            prompt = _content_text(task.render(batch, options))
            # What a prefix cache can serve: the prefix shared with the prompt sent just before in its chain
            # (or, for a chain's first request, with the chain before's first).
            estimate.cacheable_tokens += common_prefix(prompt, previous if n else head) // CHARS_PER_TOKEN
            if n == 0:
                head = prompt
            previous = prompt
            estimate.requests += 1
            estimate.text_tokens += text_tokens(prompt)
            estimate.max_output_tokens += int(config.max_tokens or task.max_tokens)
            if video is not None:
                images, seconds, tokens = video.media_count(task, batch[0], config.context_size)
                estimate.images += images
                estimate.clip_seconds += seconds
                estimate.media_tokens += tokens
        estimate.clip_seconds = round(estimate.clip_seconds, 3)
        per_task.append(_times(estimate, config.epochs))
    prices = PriceTable.load(config.prices)
    models = []
    for spec in config.model_specs:
        model = ModelEstimate(spec, [TaskEstimate(**asdict(t)) for t in per_task])
        costs = [prices.cost(spec, Usage(t.input_tokens, t.max_output_tokens)) for t in model.tasks]
        model.cost_at_most = None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 4)
        models.append(model)
    judges = [_judge_estimate(spec, graded, len(config.model_specs), config.part(Judging), prices)
              for spec in config.judges]
    run = RunEstimate(config.mode, len(samples), models, video.options.video_input if video else None, judges)
    budgets = {name: int(config.max_tokens or load_task(name).max_tokens) for name in config.tasks}
    run.warnings = [w for spec in config.model_specs if (w := thinking_warning(config, spec, budgets))]
    return run


# Below this many answer tokens a thinking model often spends the whole budget thinking (finish_reason=length).
THINKING_BUDGET = 4096


def thinking_warning(config: RunConfig, spec: str, budgets: dict[str, int]) -> str | None:
    """A warning when ``spec`` is known to think and some task's answer budget looks too small for it."""
    from rescue.llm import PRESETS
    from rescue.llm._providers import known_to_think

    if spec.startswith(("baseline/", "local/")):
        return None
    settings = config.settings_for(spec)
    prefix, _, rest = spec.partition("/")
    preset = PRESETS.get(prefix) if rest else None
    extra = {**(preset.extra_body if preset else {}), **settings.extra_body}
    if not known_to_think(spec, extra, config.thinking):
        return None
    if settings.max_tokens:  # the model's own --model-settings budget wins over each task's
        budgets = dict.fromkeys(budgets, int(settings.max_tokens))
    small = {name: budget for name, budget in budgets.items() if budget < THINKING_BUDGET}
    if not small:
        return None
    shown = ", ".join(f"{name} {budget:,}" for name, budget in small.items())
    return (f"{spec} is known to think before it answers, and these answer budgets look too small for that "
            f"(tokens: {shown}; thinking counts against them): answers may end as budget_exhausted. Give "
            f"--max-tokens {THINKING_BUDGET * 2} or more, --budget-retry 3, or --thinking off where the provider has it.")


def _judge_estimate(spec: str, graded: dict[str, list[Instance]], models: int, judging: Judging,
                    prices: PriceTable) -> JudgeEstimate:
    from rescue.scoring.judge import JUDGE_MAX_TOKENS, Turn, judge_prompt

    estimate = JudgeEstimate(spec, models=models)
    for name, instances in graded.items():
        repeats = judging.judge_repeats  # --judge-repeats: each instance asked this often
        task = TaskEstimate(name, requests=len(instances) * repeats, instances=len(instances))
        for instance in instances:
            task.text_tokens += repeats * text_tokens(judge_prompt(name, judging.judge_scale, Turn.of(instance),
                                                                   instance.gold, instance.gold))
            task.max_output_tokens += repeats * JUDGE_MAX_TOKENS
        estimate.tasks.append(task)
    costs = [prices.cost(spec, Usage(t.input_tokens, t.max_output_tokens)) for t in estimate.tasks]
    estimate.cost_per_model = None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 4)
    return estimate
