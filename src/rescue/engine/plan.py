"""What a run asks before it asks anything: its samples, each task's instances and batches, the order requests
are sent in, the values it really used, and the checks that fail before any work (local models, extras)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from typing import Any, NotRequired, TypedDict

from rescue.data.models import Sample
from rescue.engine.config import RunError
from rescue.engine.run_options import TaskOptionValues
from rescue.engine.parts import Asking, Selection
from rescue.tasks.base import Instance, ParsePolicy, Task
from rescue.tasks.batching import BatchPlan, plan_batches


def load_task(name: str) -> Task:
    """The registered task ``name``."""
    from rescue.tasks import get_task

    return get_task(name)


def batch_plan(asking: Asking, task: Task, instances: list[Instance]) -> BatchPlan:
    """The run's batches of one task: the requested grouping, split wherever it would leak (tasks.batching)."""
    from rescue.tasks.prompts import resolve_context_size

    return plan_batches(task, instances, batch_size(asking, task),
                        resolve_context_size(asking.context_size, int(task.default_context_size)))


def batch_size(asking: Asking, task: Task) -> int:
    """The batch size the run uses for ``task``: ``--batch-size authors`` is the task's own."""
    return int(task.default_batch_size) if asking.batch_size == "authors" else int(asking.batch_size)


def names_preset(spec: str) -> bool:
    """Whether ``spec`` names a provider preset (``openai/...``), whose endpoint is the provider's own."""
    from rescue.llm import PRESETS

    prefix, _, rest = spec.partition("/")
    return bool(rest) and prefix in PRESETS


def build_options(task_options: TaskOptionValues, task: Task) -> dict[str, Any]:
    """The ``--task-option`` values given for ``task``, as its ``build`` takes them."""
    return dict(task_options.get(task.name, {}))


class Used(TypedDict):
    """What a run really used where its config says "default": results.json's ``config.used``, read back as
    ``rescue.runs.results.UsedValues`` (tests/engine/test_parts.py holds the keys equal)."""

    data_sha256: str
    task_options: dict[str, dict[str, Any]]  # per task its options model, defaults filled in, as JSON
    context_size: dict[str, int]
    batch_size: dict[str, int]
    parse: ParsePolicy
    rpp_gold: NotRequired[str | None]  # with a task that chooses its gold field (RPP)
    rpp_gold_field: NotRequired[dict[str, str | None]]  # per sample, the field its gold was read from
    baselines: NotRequired[dict[str, dict[str, Any]]]  # how each trained baseline answered (its describe())
    seeds: NotRequired[dict[str, int | None]]  # per model the seed its requests carry (None: its provider takes none)


def values_used(asking: Asking, task_options: TaskOptionValues, tasks: dict[str, Task],
                instances: dict[str, list[Instance]], data_sha: str) -> Used:
    """What the run really used where its config says "default" (None): a report compares runs on these."""
    from rescue.tasks.spec import validate_options

    used: Used = {
        "data_sha256": data_sha,
        "task_options": {n: validate_options(n, t.declaration.options, build_options(task_options, t))
                         .model_dump(mode="json") for n, t in tasks.items()},
        "context_size": {n: asking.context_size if asking.context_size is not None else int(t.default_context_size)
                         for n, t in tasks.items()},
        "batch_size": {n: batch_size(asking, t) for n, t in tasks.items()},
        "parse": asking.parse,
    }
    for name, task in tasks.items():
        if "rpp_gold" in task.declaration.options.model_fields:  # the option choosing a gold field (RPP)
            used["rpp_gold"] = used["task_options"][name].get("rpp_gold")
            used["rpp_gold_field"] = {i.sample_id: i.extra.get("gold_field") for i in instances.get(name, [])}
    return used


def select_samples(selection: Selection, samples: list[Sample]) -> tuple[list[Sample], str]:
    """The samples a run evaluates: its ``--split`` of the splits file, then ``--limit-samples`` of those;
    and how they were chosen (``all``, ``first``, ``stratified``; ``split:NAME`` for a whole split)."""
    from rescue.data.loading import choose_samples

    choice = "all"
    if selection.split is not None:
        from rescue.data.splits import SPLITS_FILE, select_split

        samples = select_split(samples, selection.splits or SPLITS_FILE, selection.split)
        choice = f"split:{selection.split}"
    if not selection.limit_samples:
        return samples, choice
    return choose_samples(samples, selection.limit_samples, selection.sample_choice), selection.sample_choice


def epoch_seeds(asking: Asking) -> list[int | None]:
    """The seed each epoch sends (``--epochs``): one epoch sends none of its own (the model's settings, ``--seed``,
    apply as ever); several send ``--seed`` (or 0) plus the epoch, so each epoch is a draw of its own, recorded."""
    if asking.epochs == 1:
        return [None]
    base = asking.seed or 0
    return [base + epoch for epoch in range(asking.epochs)]


# --limit's draw: a fixed seed, so the same command takes the same instances (recorded in results.json).
LIMIT_SEED = 0


def limit_instances(limit: int | None, task: str, instances: list[Instance]) -> list[Instance]:
    """``--limit N``: ``limit`` of one task's ``instances`` (all of them when there are no more), each scenario in
    its share (:func:`rescue.data.loading.stratified_quota`), drawn within it with the fixed seed
    :data:`LIMIT_SEED` and the task's name, kept in build order."""
    if limit is None or limit >= len(instances):
        return list(instances)
    import random

    from rescue.data.loading import stratified_quota

    by_scenario: dict[str, list[int]] = {}
    for index, instance in enumerate(instances):
        by_scenario.setdefault(instance.scenario, []).append(index)
    quota = stratified_quota({name: len(indices) for name, indices in by_scenario.items()}, limit)
    draw = random.Random(f"rescue-limit:{LIMIT_SEED}:{task}")
    taken = {i for name in sorted(by_scenario) for i in draw.sample(by_scenario[name], quota[name])}
    return [instance for index, instance in enumerate(instances) if index in taken]


def send_chains(batches: list[list[Instance]], concurrency: int, share: int | None = None) -> list[list[list[Instance]]]:
    """The order a task's requests are sent in, for providers' prompt caches: one chain per sample, its
    batches in row order, each sent after the one before it is answered, so each prompt finds the prefix it
    shares with the previous one (RPP's all-prior-rows context makes it a prefix extension) already cached.

    Chains run side by side, the longest first. A chain longer than ``share`` (a model's requests in the run
    over ``--concurrency``: :func:`chain_share`; default this task's alone) is cut into consecutive segments of
    near-equal length, so that no chain outlasts the rest of the run by itself (the tail a run ends with when
    its longest chain is longer than its share of the slots); with fewer samples than ``concurrency`` this
    keeps as many requests in flight as before."""
    chains: dict[str, list[list[Instance]]] = {}
    for batch in batches:
        chains.setdefault(batch[0].sample_id, []).append(batch)
    ordered = [sorted(chain, key=lambda b: b[0].row_index) for chain in chains.values()]
    limit = max(1, share if share is not None else chain_share([len(batches)], concurrency))
    cut = [segment for chain in ordered for segment in _segments(chain, limit)]
    return sorted(cut, key=len, reverse=True)


def chain_share(requests: Iterable[int], concurrency: int) -> int:
    """The longest chain a model's ``requests`` (per task) allow at ``concurrency``: their sum over the slots."""
    return max(1, math.ceil(sum(requests) / max(1, concurrency)))


def _segments(chain: list[list[Instance]], limit: int) -> list[list[list[Instance]]]:
    """``chain`` cut into the fewest consecutive segments of at most ``limit``, of near-equal lengths."""
    parts = math.ceil(len(chain) / limit)
    if parts <= 1:
        return [chain]
    size, extra = divmod(len(chain), parts)
    bounds = [n * size + min(n, extra) for n in range(parts + 1)]
    return [chain[bounds[n] : bounds[n + 1]] for n in range(parts)]


def samples_sha256(samples: list[Sample]) -> str:
    """The fingerprint of samples given in memory: their JSON, in order."""
    digest = hashlib.sha256()
    for sample in samples:
        digest.update(sample.model_dump_json().encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


BERTSCORE_EXTRA_HINT = ("pip install 'rescue-bench[bertscore]' (on a CPU-only machine first: pip install torch "
                        "--index-url https://download.pytorch.org/whl/cpu), or pass --no-bertscore")


def check_extras(bertscore: bool, tasks: dict[str, Task]) -> None:
    """A feature whose optional dependencies are missing fails before any work, naming its extra; ``bertscore``:
    whether BERTScore is on (``--bertscore``)."""
    import importlib.util

    if bertscore and any(t.declaration.bertscore is not None for t in tasks.values()):
        missing = [m for m in ("torch", "bert_score") if importlib.util.find_spec(m) is None]
        if missing:
            raise RunError(f"BERTScore (on by default for ER and VP) needs the 'bertscore' extra (missing: "
                           f"{', '.join(missing)}): {BERTSCORE_EXTRA_HINT}")


def check_local_models(specs: list[str], option: str) -> None:
    """A ``local/NAME`` that rescue does not know fails before any work, naming ``option`` and the known ones."""
    from rescue.llm.local import LOCAL_MODELS

    for spec in specs:
        prefix, _, name = spec.partition("/")
        if prefix == "local" and name not in LOCAL_MODELS:
            known = ", ".join(f"local/{n}" for n in LOCAL_MODELS)
            raise RunError(f"{option} {spec!r}: unknown local model; known: {known}")
