"""What a submitter and a verifier both compute from the data and the run's recorded options: each task's
instances and prompts as digests, and every leaderboard cell with its interval. One function each, so that a
bundle's facts and a verifier's are made by the same code."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rescue.data.models import Sample
from rescue.engine.config import RunConfig
from rescue.engine.parts import Asking
from rescue.engine.plan import batch_plan, build_options, load_task
from rescue.report.leaderboard import build_leaderboard
from rescue.report.recompute import registry_aggregates
from rescue.report.runs import System, load_run
from rescue.submissions.bundle import TaskFacts, canonical_json
from rescue.tasks.render import RowCache


def task_facts(config: RunConfig, samples: list[Sample]) -> dict[str, TaskFacts]:
    """Per task of the run: how many instances, the digest of their ids (build order, one per line) and the
    digest of every request's messages as the run renders them (its batch plan, its context and mode)."""
    asking = config.part(Asking)
    facts: dict[str, TaskFacts] = {}
    for name in config.tasks:
        task = load_task(name)
        instances = task.build(samples, **build_options(config.task_options, task))
        ids = hashlib.sha256("".join(i.instance_id + "\n" for i in instances).encode("utf-8"))
        prompts = hashlib.sha256()
        options = asking.render(RowCache())
        for batch in batch_plan(asking, task, instances).batches:
            prompts.update(canonical_json(task.render(batch, options)).encode("utf-8") + b"\n")
        facts[name] = TaskFacts(instances=len(instances), instance_ids_sha256=ids.hexdigest(),
                                prompt_sha256=prompts.hexdigest())
    return facts


def _number(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def interval_cells(systems: Sequence[System]) -> list[dict[str, Any]]:
    """Every leaderboard cell of ``systems`` as ``rescue report`` computes it (its bootstrap, seed and level):
    system, scope, column, value, low, high, instances and failures; in the board's order."""
    tasks = sorted({t for s in systems for t in s.tasks})
    board = build_leaderboard(systems, registry_aggregates(tasks))
    cells: list[dict[str, Any]] = []
    for row in board.rows:
        for column, cell in row.cells.items():
            cells.append({"system": row.system, "scope": row.scope, "column": column, "value": _number(cell.value),
                          "low": _number(cell.low), "high": _number(cell.high), "instances": cell.instances,
                          "failures": cell.failures})
    return cells


def run_intervals(run_dir: Path) -> list[dict[str, Any]]:
    """:func:`interval_cells` of every system of a run directory."""
    return interval_cells(load_run(run_dir))
