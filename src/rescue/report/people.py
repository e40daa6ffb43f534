"""People beside models (issue #43): a human run in a report.

``rescue review export DIR --as-run OUT`` writes, beside the run, ``human.json`` whose ``people`` block says
which instances people were given (``subset``), each person's group and the instances assigned to and answered
by them, which people make each panel system (``human/pooled``, ``human/GROUP/panel``), and each group's figures.
When a report holds such a run:

- every other system (the models) is restricted to the people's subset, so people and models are compared on
  the same instances (said under the leaderboard);
- a person's system is restricted to the instances they answered, a panel's to those one of its people answered:
  an unanswered instance is coverage (answered of assigned), never a wrong answer;
- people's rows are marked and never ranked (no best value, no bold), and each group gets an "average person" row
  (the mean of its people's values, cell by cell);
- ``people.md`` gives per group: people, items per person, coverage, time per item and agreement between people.

The file is read as JSON with its known keys only (the report does not import the human reference's package).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rescue.display import markdown_table, markdown_text
from rescue.errors import ReportError
from rescue.report.html import HtmlTable
from rescue.report.runs import System, keep_records
from rescue.tasks import TASK_NAMES
from rescue.tasks.base import PredictionRecord

HUMAN_FILE = "human.json"
PREFIX = "human/"


@dataclass
class People:
    """What the report knows of the people of its human runs."""

    subset: dict[str, set[str]] = field(default_factory=dict)  # task -> instance ids people were given
    groups: dict[str, list[str]] = field(default_factory=dict)  # group -> labels of its people's systems
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)  # group -> human.json's figures
    coverage: dict[str, tuple[int, int]] = field(default_factory=dict)  # person's label -> (answered, assigned)
    protocol: str = ""
    left_out_late: int = 0
    disputed: list[str] = field(default_factory=list)  # the runs' disputed.jsonl files


def _block(system: System) -> dict[str, Any] | None:
    path = system.run_dir / HUMAN_FILE
    if not system.model.startswith(PREFIX) or not path.is_file():
        return None
    try:
        block = json.loads(path.read_text(encoding="utf-8")).get("people")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
        raise ReportError(f"{path}: cannot read the people of this human run ({exc})") from None
    if block is None:  # written before people were recorded: a human run as any other
        return None
    if not isinstance(block, dict) or not all(isinstance(block.get(k), dict) for k in ("subset", "people", "panels")):
        raise ReportError(f"{path}: field people: expected subset, people and panels objects "
                          "(write it with `rescue review export --as-run`)")
    return block


def _ids(value: Any, where: str) -> dict[str, set[str]]:
    if not isinstance(value, dict) or not all(isinstance(v, list) for v in value.values()):
        raise ReportError(f"{where}: expected task -> list of instance ids")
    return {str(task): {str(i) for i in ids} for task, ids in value.items()}


def apply_people(systems: Sequence[System]) -> tuple[People | None, list[str]]:
    """Mark the human runs' systems, restrict every system as the module says, and return what the report says
    of the people (None when no run holds people) with notes for the report."""
    people = People()
    found = False
    for system in systems:
        block = _block(system)
        if block is None:
            continue
        found = True
        where = str(system.run_dir / HUMAN_FILE)
        for task, ids in _ids(block["subset"], f"{where}: field people.subset").items():
            people.subset.setdefault(task, set()).update(ids)
        name = system.model[len(PREFIX):]
        person = block["people"].get(name)
        if person is not None:
            system.people = "person"
            answered = _ids(person.get("answered", {}), f"{where}: field people.people.{name}.answered")
            assigned = _ids(person.get("assigned", {}), f"{where}: field people.people.{name}.assigned")
            keep_records(system, _within([answered]))
            people.coverage[system.label] = (sum(map(len, answered.values())), sum(map(len, assigned.values())))
            people.groups.setdefault(str(person.get("group") or "all"), []).append(system.label)
            if person.get("group"):
                people.groups.setdefault("all", []).append(system.label)
        elif system.model in block["panels"]:
            system.people = "panel"
            members = set(block["panels"][system.model])
            answered_by = [_ids(block["people"][m].get("answered", {}), where) for m in members if m in block["people"]]
            keep_records(system, _within(answered_by))
        people.figures.update(block.get("groups") or {})
        people.protocol = str(block.get("protocol", ""))
        people.left_out_late += int(block.get("left_out_late", 0) or 0)
        disputed = system.run_dir / "disputed.jsonl"
        if disputed.is_file() and str(disputed) not in people.disputed:
            people.disputed.append(str(disputed))
    if not found:
        return None, []
    for system in systems:
        if not system.people:
            keep_records(system, _within([people.subset]))
    return people, [subset_note(people)]


def _within(sets: list[dict[str, set[str]]]) -> Callable[[PredictionRecord], bool]:
    """Whether a record's instance is in one of ``sets`` (task -> instance ids)."""
    def keep(record: PredictionRecord) -> bool:
        return any(record.instance_id in ids.get(record.task, set()) for ids in sets)

    return keep


def subset_note(people: People) -> str:
    """What the leaderboard says under the table of a report with people."""
    counts = ", ".join(f"{task.upper()} {len(ids)}" for task, ids in people.subset.items())
    return (f"People and models on the same instances: every model's row is restricted to the "
            f"{sum(len(v) for v in people.subset.values())} instances people were given ({counts}); a person's "
            "cells are on the instances they answered (coverage, answered of assigned, in people.md), never "
            "counting an unanswered one as wrong. People's rows are marked and never ranked.")


def _figure(value: Any, percent: bool = False) -> str:
    if value is None:
        return "—"
    if percent:
        return f"{float(value):.0%}"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) >= 1 else f"{value:.2f}"
    return str(value)


def people_markdown(people: People) -> str:
    """``people.md``: per group, what a reader of a human row asks (how many people, on which items, in what
    protocol, with what agreement), each person's coverage, and where the disputed items are."""
    tasks = [t for t in TASK_NAMES if any(t in (g.get("agreement") or {}) for g in people.figures.values())]
    rows = [[markdown_text(group), str(g.get("people", "")), _figure(g.get("assigned_per_person")),
             _figure(g.get("answered_per_person")), _figure(g.get("coverage"), True), _figure(g.get("median_s_per_item")),
             *(_figure((g.get("agreement") or {}).get(t, {}).get("alpha")) for t in tasks)]
            for group, g in people.figures.items()]
    persons = [[markdown_text(label), f"{a} of {n}", _figure(a / n if n else None, True)]
               for label, (a, n) in people.coverage.items()]
    lines = ["# People beside the models", "", f"Protocol: {markdown_text(people.protocol)}." if people.protocol else "",
             "", markdown_table(["group", "people", "items per person", "answered per person", "coverage",
                                 "median s per item", *(f"{t.upper()} α" for t in tasks)], rows),
             "α: agreement between the group's people (Krippendorff; the ceiling models are read against); "
             "`—` where fewer than two people answered an instance.", "",
             markdown_table(["person", "answered of assigned", "coverage"], persons)]
    if people.left_out_late:
        lines.append(f"{people.left_out_late} answer(s) given after their reveal were left out (not counted).")
    lines += ["", "Disputed items (answered differently by two people or more), with every answer: "
              + (", ".join(markdown_text(Path(p).as_posix()) for p in people.disputed) or "none written") + "."]
    return "\n".join(lines) + "\n"


def people_table(people: People) -> HtmlTable:
    """report.html's table of the people: per group what ``people.md`` gives (people, items per person,
    coverage, time per item, agreement between people per task)."""
    tasks = [t for t in TASK_NAMES if any(t in (g.get("agreement") or {}) for g in people.figures.values())]
    rows = [[group, str(g.get("people", "")), _figure(g.get("assigned_per_person")), _figure(g.get("answered_per_person")),
             _figure(g.get("coverage"), True), _figure(g.get("median_s_per_item")),
             *(_figure((g.get("agreement") or {}).get(t, {}).get("alpha")) for t in tasks)]
            for group, g in people.figures.items()]
    return HtmlTable("People (marked in the leaderboard, never ranked)",
                     ["group", "people", "items per person", "answered per person", "coverage", "median s per item",
                      *(f"{t.upper()} α" for t in tasks)], rows,
                     subset_note(people) + " α: agreement between the group's people (the ceiling models are read "
                     "against). Each person's coverage and the disputed items: people.md.")
