"""Leak-free dataset splits: train/dev/test (or K folds) assigned by **session group**.

A session group is one couple, or one family across its clips (:mod:`rescue.data.groups`, the grouping the
report's bootstrap resamples). Clips of one group share people, so a group lies wholly in one split: a model
trained on a split never meets the test split's couples or families.

The assignment is stratified by scenario and deterministic for a seed: within each scenario the groups are
shuffled by ``random.Random(f"{seed}|{scenario}")`` and taken in that order;

- hold-out (``test``/``dev`` shares): each group goes to the split furthest below its share of the scenario's
  samples (train gets the rest; ties: train, then test, then dev);
- folds (``folds=K``): the groups, largest first (ties: shuffled order), each go to the fold holding the
  fewest samples of that scenario so far (ties: the lower fold), named ``fold1`` ... ``foldK``.

The plan is written as ``splits.json`` (:class:`SplitPlan`) and read back by ``--split NAME`` on
``rescue run``, ``tasks``, ``stats`` and ``report``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rescue.data.choices import SPLITS_FILE as SPLITS_FILE
from rescue.data.groups import SessionGroups, infer_groups
from rescue.data.models import Sample
from rescue.data.names import distinct_path_names, path_name
from rescue.data.readback import read_json_file, validated
from rescue.errors import SplitError as SplitError

HOLDOUT_NAMES = ("train", "dev", "test")


MAX_PLAN_BYTES = 256 * 1024 * 1024  # sample ids of a release a hundred times the paper's, and room to spare


class SplitPlan(BaseModel):
    """``splits.json``: which samples (and session groups) each split holds, and how it was made. A key it does
    not know is refused when read (a misspelt ``split`` would otherwise read as a plan of no splits)."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    scheme: Literal["holdout", "folds"]
    seed: int
    test: float | None = None
    dev: float | None = None
    folds: int | None = None
    grouping: str
    data: str | None = None  # the data the plan was made from, as given
    data_sha256: str | None = None
    splits: dict[str, list[str]] = Field(default_factory=dict)  # split -> sample ids (data order)
    groups: dict[str, list[str]] = Field(default_factory=dict)  # split -> session group names (sorted)
    # Splits asked for that no session group fell to (fewer groups than splits): left out, as a plan never holds an
    # empty split (read_plan refuses one).
    left_out: list[str] = Field(default_factory=list)

    def names(self) -> list[str]:
        """The split names, in the plan's order."""
        return list(self.splits)


def _shuffled_groups(samples: list[Sample], groups: SessionGroups, scenario: str, seed: int) -> list[str]:
    names = sorted({groups.group_of(s.sample_id) for s in samples if s.scenario == scenario})
    random.Random(f"{seed}|{scenario}").shuffle(names)
    return names


def _sizes(samples: list[Sample], groups: SessionGroups) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for sample in samples:
        name = groups.group_of(sample.sample_id)
        sizes[name] = sizes.get(name, 0) + 1
    return sizes


def make_splits(samples: Iterable[Sample], *, groups: SessionGroups | None = None, test: float = 0.2,
                dev: float = 0.1, folds: int | None = None, seed: int = 0) -> SplitPlan:
    """Assign every session group of ``samples`` to one split (module docstring); ``groups`` defaults to the
    inferred grouping."""
    samples = list(samples)
    if not samples:
        raise SplitError("no samples to split")
    groups = groups or infer_groups(samples)
    sizes = _sizes(samples, groups)
    scenarios = sorted({s.scenario for s in samples})
    assignment: dict[str, str] = {}
    if folds is not None:
        if folds < 2:
            raise SplitError(f"--folds {folds}: at least 2 folds are needed")
        names = [f"fold{k}" for k in range(1, folds + 1)]
        for scenario in scenarios:
            order = _shuffled_groups(samples, groups, scenario, seed)
            load = dict.fromkeys(names, 0)
            for group in sorted(order, key=lambda g: (-sizes[g], order.index(g))):
                fold = min(names, key=lambda n: (load[n], names.index(n)))
                assignment[group] = fold
                load[fold] += sizes[group]
        scheme: Literal["holdout", "folds"] = "folds"
    else:
        if not (0 <= test < 1 and 0 <= dev < 1 and test + dev < 1):
            raise SplitError(f"--test {test} --dev {dev}: each share must be in [0, 1) and together under 1")
        names = ["train", "test", "dev"]  # the order ties are broken in
        shares = {"train": 1 - test - dev, "test": test, "dev": dev}
        for scenario in scenarios:
            order = _shuffled_groups(samples, groups, scenario, seed)
            total = sum(sizes[g] for g in order)
            held = dict.fromkeys(names, 0)
            for group in order:
                split = max(names, key=lambda n: (shares[n] * total - held[n], -names.index(n)))
                assignment[group] = split
                held[split] += sizes[group]
        names = [n for n in HOLDOUT_NAMES if n != "dev" or dev > 0]
        scheme = "holdout"
    splits = {name: [s.sample_id for s in samples if assignment[groups.group_of(s.sample_id)] == name]
              for name in names}
    members = {name: sorted({g for g, n in assignment.items() if n == name}) for name in names}
    empty = [name for name in names if not splits[name]]
    return SplitPlan(scheme=scheme, seed=seed, test=None if folds else test, dev=None if folds else dev,
                     folds=folds, grouping=groups.method, left_out=empty,
                     splits={n: ids for n, ids in splits.items() if ids},
                     groups={n: g for n, g in members.items() if n not in empty})


def check_leak_free(plan: SplitPlan, groups: SessionGroups) -> None:
    """Raise if a session group has samples in two splits (a plan edited by hand, or another grouping)."""
    seen: dict[str, str] = {}
    for name, ids in plan.splits.items():
        for sample_id in ids:
            group = groups.group_of(sample_id)
            if seen.setdefault(group, name) != name:
                raise SplitError(f"session group {group!r} is in two splits: {seen[group]!r} and {name!r}")


def read_plan(path: str | Path) -> SplitPlan:
    """A ``splits.json``; a missing or malformed file is a :class:`SplitError` naming it, the line or the field
    (read as :mod:`rescue.data.readback` reads every file rescue wrote: edited, cut or hostile ones included)."""
    path = Path(path)
    try:
        data = read_json_file(path, SplitError, max_bytes=MAX_PLAN_BYTES)
    except FileNotFoundError:
        raise SplitError(f"{path}: no such splits file (make one with `rescue splits --out {path}`)") from None
    except OSError as exc:
        raise SplitError(f"{path}: cannot read the splits file: {exc.strerror or exc}") from None
    if not isinstance(data, dict):
        raise SplitError(f"{path}:1: expected a JSON object (a plan written by `rescue splits`)")
    plan = validated(SplitPlan, data, str(path), SplitError)
    check_plan(plan, path)
    return plan


def check_plan(plan: SplitPlan, path: str | Path) -> None:
    """A plan's split names become folder names (``rescue export --format hf``), so each must be a safe one
    (:func:`rescue.files.path_name`), and no two may differ only in case; every split holds samples, and no
    sample is in two splits (or twice in one). Raises naming the file and the split."""
    for name in plan.splits:
        path_name(name, file=path, field="splits")
    distinct_path_names(plan.splits, file=path, field="splits")
    seen: dict[str, str] = {}
    for name, ids in plan.splits.items():
        if not ids:
            raise SplitError(f"{path}: field splits.{name}: an empty split (no samples); remove it or remake the plan")
        for sample_id in ids:
            if sample_id in seen:
                first = seen[sample_id]
                where = f"in splits {first!r} and {name!r}" if first != name else f"twice in split {name!r}"
                raise SplitError(f"{path}: field splits.{name}: sample {sample_id!r} is {where}; a sample belongs "
                                 "to one split")
            seen[sample_id] = name


def select_split(samples: list[Sample], path: str | Path, name: str) -> list[Sample]:
    """The samples of split ``name`` of the plan at ``path``, in data order. The plan must name only samples the
    data holds, so a split of other data is never applied silently."""
    plan = read_plan(path)
    if name not in plan.splits:
        raise SplitError(f"{path}: no split {name!r}; it holds: {', '.join(plan.names())}")
    present = {s.sample_id for s in samples}
    unknown = [i for ids in plan.splits.values() for i in ids if i not in present]
    if unknown:
        raise SplitError(f"{path}: names {len(unknown)} sample(s) the data does not hold (first: {unknown[0]!r}); "
                         "was it made from other data?")
    wanted = set(plan.splits[name])
    return [s for s in samples if s.sample_id in wanted]
