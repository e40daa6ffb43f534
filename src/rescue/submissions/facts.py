"""What a submitter and a verifier both compute from the data and the run's recorded options: each task's
instances and prompts as digests, and every leaderboard cell with its interval. One function each, so that a
bundle's facts and a verifier's are made by the same code."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from rescue.data.models import Sample
from rescue.engine.config import RunConfig
from rescue.engine.parts import Asking, Selection
from rescue.engine.plan import batch_plan, build_options, limit_instances, load_task
from rescue.report.leaderboard import add_average_rows, build_leaderboard
from rescue.report.people import People, apply_people
from rescue.report.recompute import registry_aggregates
from rescue.report.runs import System, load_run, run_systems
from rescue.runs.results import RunResults
from rescue.submissions.bundle import TaskFacts, canonical_json
from rescue.tasks.base import PredictionRecord
from rescue.tasks.render import RowCache


def task_facts(config: RunConfig, samples: list[Sample],
               only: Mapping[str, Collection[str]] | None = None) -> dict[str, TaskFacts]:
    """Per task of the run: how many instances (after ``--limit``'s draw), the digest of their ids (build order,
    one per line) and the digest of every request's messages as the run renders them (its batch plan, its
    context and mode)."""
    asking, limit = config.part(Asking), config.part(Selection).limit
    facts: dict[str, TaskFacts] = {}
    rows = RowCache()  # the tasks' prompts show the same rows: each encoded once
    for name in config.tasks:
        task = load_task(name)
        instances = limit_instances(limit, name, task.build(samples, **build_options(config.task_options, task)))
        if only is not None:  # the instances the run recorded as taken (results.json data.instance_ids)
            kept = set(only.get(name, ()))
            instances = [i for i in instances if i.instance_id in kept]
        ids = hashlib.sha256("".join(i.instance_id + "\n" for i in instances).encode("utf-8"))
        prompts = hashlib.sha256()
        options = asking.render(rows)
        for batch in batch_plan(asking, task, instances).batches:
            prompts.update(canonical_json(task.render(batch, options)).encode("utf-8") + b"\n")
        facts[name] = TaskFacts(instances=len(instances), instance_ids_sha256=ids.hexdigest(),
                                prompt_sha256=prompts.hexdigest())
    return facts


def taken_instances(results: RunResults) -> dict[str, list[str]] | None:
    """The instances a run recorded as taken per task (``--limit``, a benchmark project's subset); None: all."""
    return results.data.instance_ids if results.data is not None else None


def _number(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def interval_cells(systems: Sequence[System], people: People | None = None) -> list[dict[str, Any]]:
    """Every leaderboard cell of ``systems`` as ``rescue report`` computes it (its bootstrap, seed and level), with
    an "average person" row per group of ``people`` as the report adds it: system, scope, column, value, low,
    high, instances and failures; in the board's order."""
    tasks = sorted({t for s in systems for t in s.tasks})
    board = build_leaderboard(systems, registry_aggregates(tasks))
    if people is not None:
        add_average_rows(board, people.groups)
    cells: list[dict[str, Any]] = []
    for row in board.rows:
        for column, cell in row.cells.items():
            cells.append({"system": row.system, "scope": row.scope, "column": column, "value": _number(cell.value),
                          "low": _number(cell.low), "high": _number(cell.high), "instances": cell.instances,
                          "failures": cell.failures})
    return cells


def run_intervals(run_dir: Path, read: tuple[RunResults, list[PredictionRecord]] | None = None) -> list[dict[str, Any]]:
    """:func:`interval_cells` of every system of a run directory (``read``: the run as already read from it), each
    restricted as the report restricts a people's run (:func:`rescue.report.people.apply_people`: a person on the
    instances they answered)."""
    systems = load_run(run_dir) if read is None else run_systems(read[0], read[1], run_dir)
    people, _ = apply_people(systems)
    return interval_cells(systems, people)
