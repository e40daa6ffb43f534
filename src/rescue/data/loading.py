"""Loading samples: read the release files (:mod:`rescue.data.reading`), validate every record
(:mod:`rescue.data.validation`), return the samples. Reading, validation and loading form a chain
without cycles: reading <- validation <- loading."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rescue.data.errors import DataError
from rescue.data.models import Sample
from rescue.data.reading import RawRecord, demo_path, infer_participants, infer_scenario, iter_records
from rescue.data.validation import validate_records

__all__ = ["RawRecord", "demo_path", "infer_participants", "infer_scenario", "iter_records", "load_samples"]


def load_samples(path: str | Path | None = None, *, strict: bool = True, keep_text: bool = True) -> list[Sample]:
    """Load and validate every sample under ``path`` (the demo dataset when None).

    Raises DataError listing every error (file, line, sample, row, field) unless ``strict`` is False,
    in which case invalid samples are still reported but the valid ones are returned. ``keep_text=False``: the
    samples keep no copy of their records' text, which only an export writes back (``rescue run`` holds every
    sample while it asks, and never exports, so it holds no compressed copy it would never read).
    """
    # One record at a time: a record's parsed JSON is freed as soon as its sample is made, so the memory it
    # held is reused by the next (holding every record first raised a run's peak by the size of the whole file's
    # parsed JSON, which the allocator then kept).
    report = validate_records(iter_records(path), keep_text=keep_text)
    if strict and report.errors:
        raise DataError(report.issues)
    return report.samples


def choose_samples(samples: list[Sample], limit: int, how: str = "first") -> list[Sample]:
    """``limit`` samples: the first in file order, or ``stratified`` (the default of ``rescue run``): each
    scenario in its share of the data (at least one of each while ``limit`` allows) and, within a scenario, as
    many session groups (:mod:`rescue.data.groups`) as possible, spread evenly over the file order."""
    if limit >= len(samples):
        return list(samples)
    if how == "first":
        return samples[:limit]
    if how != "stratified":
        raise ValueError(f"unknown sample choice {how!r}")
    groups: dict[str, list[Sample]] = {}
    for sample in samples:
        groups.setdefault(sample.scenario, []).append(sample)
    quota = stratified_quota({name: len(group) for name, group in groups.items()}, limit)
    from rescue.data.groups import infer_groups

    sessions = infer_groups(samples)
    chosen: set[int] = set()
    for name, group in groups.items():
        chosen.update(id(s) for s in _across_groups(group, quota[name], sessions.group_of))
    return [s for s in samples if id(s) in chosen]


def stratified_quota(sizes: dict[str, int], limit: int) -> dict[str, int]:
    """How many of ``limit`` to take from each stratum of ``sizes`` (stratum -> its size, ``limit`` below their
    sum): each in its share, at least one of each while ``limit`` allows, the largest remainders rounding up."""
    total = sum(sizes.values())
    shares = {name: limit * size / total for name, size in sizes.items()}
    quota = {name: min(sizes[name], max(1, int(share))) for name, share in shares.items()}
    while sum(quota.values()) > limit:  # more strata than taken: the largest keep theirs
        smallest = min((n for n in quota if quota[n] > 0), key=lambda n: (shares[n], n))
        quota[smallest] -= 1
    while sum(quota.values()) < limit:  # largest remainders first
        name = max((n for n in quota if quota[n] < sizes[n]), key=lambda n: (shares[n] - quota[n], n))
        quota[name] += 1
    return quota


def _across_groups(samples: list[Sample], k: int, group_of: Callable[[str], str]) -> list[Sample]:
    """``k`` of one scenario's samples from as many session groups as possible (the bootstrap resamples groups:
    with one couple's clips only it has no interval to give), spread evenly over the file order: the groups
    take turns, each giving its clips in order, evenly spaced within it."""
    by_group: dict[str, list[Sample]] = {}
    for sample in samples:
        by_group.setdefault(group_of(sample.sample_id), []).append(sample)
    names = list(by_group)
    # Which groups, when fewer than all: evenly spaced over the file order.
    names = [names[int(i * len(names) / k)] for i in range(k)] if k < len(names) else names
    taken: dict[str, int] = dict.fromkeys(names, 0)
    while sum(taken.values()) < k:
        for name in names:
            if sum(taken.values()) < k and taken[name] < len(by_group[name]):
                taken[name] += 1
    picked: list[Sample] = []
    for name in names:
        clips, n = by_group[name], taken[name]
        picked.extend(clips[int(i * len(clips) / n)] for i in range(n))
    return picked
