"""Loading samples: read the release files (:mod:`rescue.data.reading`), validate every record
(:mod:`rescue.data.validation`), return the samples. Reading, validation and loading form a chain
without cycles: reading <- validation <- loading."""

from __future__ import annotations

from pathlib import Path

from rescue.data.errors import DataError
from rescue.data.models import Sample
from rescue.data.reading import RawRecord, demo_path, infer_participants, infer_scenario, iter_records
from rescue.data.validation import validate_records

__all__ = ["RawRecord", "demo_path", "infer_participants", "infer_scenario", "iter_records", "load_samples"]


def load_samples(path: str | Path | None = None, *, strict: bool = True) -> list[Sample]:
    """Load and validate every sample under ``path`` (the demo dataset when None).

    Raises DataError listing every error (file, line, sample, row, field) unless ``strict`` is False,
    in which case invalid samples are still reported but the valid ones are returned.
    """
    records = list(iter_records(path))
    report = validate_records(records)
    if strict and report.errors:
        raise DataError(report.issues)
    return report.samples


def choose_samples(samples: list[Sample], limit: int, how: str = "first") -> list[Sample]:
    """``limit`` samples: the first in file order, or ``stratified``: each scenario in its share of the data
    (at least one of each while ``limit`` allows), spread evenly over that scenario's file order."""
    if limit >= len(samples):
        return list(samples)
    if how == "first":
        return samples[:limit]
    if how != "stratified":
        raise ValueError(f"unknown sample choice {how!r}")
    groups: dict[str, list[Sample]] = {}
    for sample in samples:
        groups.setdefault(sample.scenario, []).append(sample)
    shares = {name: limit * len(group) / len(samples) for name, group in groups.items()}
    quota = {name: min(len(groups[name]), max(1, int(share))) for name, share in shares.items()}
    while sum(quota.values()) > limit:  # more scenarios than samples asked for: the largest keep theirs
        smallest = min((n for n in quota if quota[n] > 0), key=lambda n: (shares[n], n))
        quota[smallest] -= 1
    while sum(quota.values()) < limit:  # largest remainders first
        name = max((n for n in quota if quota[n] < len(groups[n])), key=lambda n: (shares[n] - quota[n], n))
        quota[name] += 1
    chosen: set[int] = set()
    for name, group in groups.items():
        k = quota[name]
        chosen.update(id(group[int(i * len(group) / k)]) for i in range(k))
    return [s for s in samples if id(s) in chosen]
