"""The optional steps of ``rescue verify``, which ask models again (they need the network and keys):

- ``--rejudge N``: N judged answers, drawn with a seed taken from the bundle's own digest, graded again by the
  run's pinned judges (same scale, same prompts: :func:`rescue.scoring.judge.judge_records`); agreement is the
  share of answers whose every judged score is the submitted one, and the largest difference on the judge's scale.
  It passes when at least :data:`REJUDGED_SHARE` agree exactly and none differs by more than
  :data:`REJUDGED_MAX_DIFFERENCE`.
- ``--reproduce N --model SPEC``: the run made again for N instances of each task (``rescue run --limit N``'s draw),
  with the bundle's own options, by the model the user names (its endpoint and key are the user's), without a
  judge; the share of predictions equal to the submitted ones. It passes at :data:`REPRODUCED_SHARE`.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rescue.data.models import Sample
from rescue.engine.config import RunConfig
from rescue.engine.parts import Selection
from rescue.engine.plan import build_options, limit_instances, load_task
from rescue.engine.resolve import resolve_model
from rescue.engine.runner import Runner
from rescue.llm import Model
from rescue.runs.folder import read_run
from rescue.scoring.judge import judge_records
from rescue.tasks import judged_tasks
from rescue.tasks.base import Instance, PredictionRecord

REJUDGED_SHARE = 0.8  # temperature-0 judges give the same grade most of the time, not always
REJUDGED_MAX_DIFFERENCE = 1.0  # points of the judge's scale
REPRODUCED_SHARE = 0.9


def bundle_seed(bundle_path: Path) -> int:
    """A seed only the bundle's bytes decide: the same bundle always draws the same items, and a submitter
    cannot know the draw before the bundle is fixed."""
    return int.from_bytes(hashlib.sha256(bundle_path.read_bytes()).digest()[:8], "big")


def _instances(config: RunConfig, samples: list[Sample], tasks: Sequence[str]) -> dict[str, Instance]:
    limit = config.part(Selection).limit
    found: dict[str, Instance] = {}
    for name in tasks:
        task = load_task(name)
        for instance in limit_instances(limit, name, task.build(samples, **build_options(config.task_options, task))):
            found[instance.instance_id] = instance
    return found


def _judge_difference(submitted: PredictionRecord, again: PredictionRecord) -> float:
    """The largest difference between the two records' scores (every score the judge decides), 0 when equal."""
    keys = submitted.scores.keys() | again.scores.keys()
    differences = [abs((submitted.scores.get(k) or 0.0) - (again.scores.get(k) or 0.0)) for k in keys]
    return max(differences, default=0.0)


async def _grade(config: RunConfig, pairs: dict[str, list[tuple[Instance, PredictionRecord]]],
                 judges: list[Model]) -> None:
    try:
        for task_name, task_pairs in pairs.items():
            await judge_records(task_pairs, judges=judges, task_name=task_name, scale=config.judge_scale,
                                concurrency=config.concurrency)
    finally:
        for judge in judges:
            await judge.aclose()


def rejudge(config: RunConfig, samples: list[Sample], records: Sequence[PredictionRecord], count: int, seed: int,
            *, base_url: str | None = None, api_key_env: str | None = None) -> tuple[bool, str]:
    """Grade ``count`` judged answers again with the run's judges; (passed, what was found)."""
    judged = set(judged_tasks())
    pool = [r for r in records if r.task in judged and r.ok and r.judge is not None]
    if not config.judges or not pool:
        return False, "the run has no judged answers to grade again"
    picked = random.Random(seed).sample(pool, min(count, len(pool)))
    instances = _instances(config, samples, sorted({r.task for r in picked}))
    copies = [r.model_copy(deep=True) for r in picked]
    pairs: dict[str, list[tuple[Instance, PredictionRecord]]] = {}
    for copy in copies:
        copy.judge = None
        pairs.setdefault(copy.task, []).append((instances[copy.instance_id], copy))
    judges = [resolve_model(spec, base_url=base_url or config.judge_base_url or config.base_url,
                            api_key_env=api_key_env or config.judge_api_key_env,
                            settings=config.settings_for(spec)) for spec in config.judges]
    asyncio.run(_grade(config, pairs, judges))  # type: ignore[arg-type]
    differences = [_judge_difference(s, a) for s, a in zip(picked, copies, strict=True)]
    same = sum(d == 0 for d in differences)
    largest = max(differences, default=0.0)
    passed = same >= REJUDGED_SHARE * len(picked) and largest <= REJUDGED_MAX_DIFFERENCE
    return passed, (f"{same} of {len(picked)} grades the same, the largest difference {largest:g} point(s) "
                    f"(judges: {', '.join(config.judges)})")


def reproduce(config: RunConfig, data: str | None, records: Sequence[PredictionRecord], count: int, model: str,
              *, system: str, base_url: str | None = None, api_key_env: str | None = None) -> tuple[bool, str]:
    """Ask ``model`` again on ``count`` instances per task with the run's options; (passed, what was found)."""
    mine = {(r.task, r.instance_id): r for r in records if r.model == system}
    if not mine:
        return False, f"the bundle has no answers of {system!r} to reproduce"
    tasks = sorted({task for task, _ in mine})
    with tempfile.TemporaryDirectory(prefix="rescue-reproduce-") as tmp:
        again = config.model_copy(update={"models": [model], "model_settings": {model: config.model_settings.get(
            system, {})}, "judges": [], "bertscore": False, "limit": count, "tasks": tasks, "out": str(Path(tmp)),
            "data": data, "quiet": True, "cache_dir": None, "batch": False,
            **({"base_url": base_url} if base_url else {}), **({"api_key_env": api_key_env} if api_key_env else {})})
        asyncio.run(Runner(again).run())
        _, redone = read_run(Path(tmp))
    compared = [(mine[(r.task, r.instance_id)], r) for r in redone if (r.task, r.instance_id) in mine]
    same = sum(s.prediction == r.prediction and s.status == r.status for s, r in compared)
    passed = bool(compared) and same >= REPRODUCED_SHARE * len(compared)
    return passed, f"{same} of {len(compared)} predictions reproduced by {model} ({count} per task)"
