"""The paper's analyses (Sec 4.3, 5.3, App. E), computed from the data and the runs' prediction records.

Every function returns a pandas DataFrame in long or matrix form, ready for CSV, tables and figures.
Gold labels come from the prediction records (the instances the runs evaluated); dialogue positions
need the samples' lengths, so those analyses take the loaded samples.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import pairwise

import pandas as pd

from rescue.data.models import GROUP_LABELS, Sample
from rescue.metrics.classification import confusion_matrix as confusion_counts
from rescue.report.outcomes import FAILED_LABEL, gold_label, is_correct, is_right_wrong, predicted_label, top1
from rescue.report.preference import preference_bias
from rescue.report.runs import System
from rescue.tasks import TASKS
from rescue.tasks import TASK_NAMES
from rescue.tasks.base import PredictionRecord

BINS = 10
NO_LABEL = "(none)"


def position_bin(row_index: int, n_rows: int, bins: int = BINS) -> int:
    """Bin of a row's normalised position (row_index - 1) / (n_rows - 1); integer arithmetic avoids 0.3*10 = 2.999."""
    if n_rows <= 1:
        return 0
    return min((row_index - 1) * bins // (n_rows - 1), bins - 1)


def bin_name(b: int, bins: int = BINS) -> str:
    """The name of position bin ``b`` of ``bins`` (e.g. ``20-40%``)."""
    width = 100 // bins
    return f"{b * width}-{(b + 1) * width}%"


def sample_lengths(samples: Iterable[Sample]) -> dict[str, int]:
    """The number of rows of each sample, by sample id."""
    return {s.sample_id: len(s.rows) for s in samples}


def unique_instances(systems: Sequence[System], task: str) -> list[PredictionRecord]:
    """One record per instance across systems, for gold-only analyses."""
    seen: dict[str, PredictionRecord] = {}
    for system in systems:
        for record in system.task_records(task):
            seen.setdefault(record.instance_id, record)
    return list(seen.values())


def closed_tasks() -> list[str]:
    """The tasks with right/wrong outcomes, in the registry's order."""
    return [t for t in TASK_NAMES if is_right_wrong(t)]


def tasks_with(analysis: str) -> list[str]:
    """The tasks that declare the paper analysis ``analysis`` ("position", "per_label", "preference")."""
    return [name for name, task in TASKS.items() if analysis in task.declaration.analyses]


def _label_order(task: str, scenario: str, found: Iterable[str]) -> list[str]:
    """The task's closed set in its declared order (shown labels), then any other label found, sorted."""
    order = TASKS[task].declaration.label_order if task in TASKS else None
    known = list(order(scenario)) if order is not None and scenario in GROUP_LABELS else []
    extra = sorted(set(found) - set(known) - {FAILED_LABEL})
    return [*known, *extra]


def shown(task: str, label: str | None) -> str | None:
    """A label as analyses show it: the task's declared view of it (STP: a person as the role "individual")."""
    view = TASKS[task].declaration.shown_label if task in TASKS else None
    if view is None or label is None or label == FAILED_LABEL:
        return label
    return view(label)


def _shown_gold(record: PredictionRecord) -> str:
    return shown(record.task, gold_label(record) or None) or NO_LABEL


# --- over dialogue position (Fig. 4, Fig. 5: RPP) -----------------------------------------------------


def accuracy_by_position(systems: Sequence[System], lengths: dict[str, int], task: str,
                         bins: int = BINS) -> pd.DataFrame:
    """A task's accuracy per position bin, per system and pooled over systems, with the binomial standard error."""
    rows = []
    pooled: dict[int, list[int]] = {b: [0, 0] for b in range(bins)}
    for system in systems:
        counts: dict[int, list[int]] = {b: [0, 0] for b in range(bins)}
        for record in system.task_records(task):
            n_rows = lengths.get(record.sample_id)
            if n_rows is None:
                continue
            b = position_bin(record.row_index, n_rows, bins)
            for tally in (counts[b], pooled[b]):
                tally[0] += 1
                tally[1] += int(is_correct(record))
        rows += _bin_rows(system.label, counts, bins)
    if len(systems) > 1:
        rows += _bin_rows("all systems", pooled, bins)
    return pd.DataFrame(rows, columns=["system", "bin", "position", "instances", "correct", "accuracy", "se"])


def _bin_rows(label: str, counts: dict[int, list[int]], bins: int) -> list[list[object]]:
    rows: list[list[object]] = []
    for b in range(bins):
        n, k = counts[b]
        accuracy = k / n if n else None
        se = math.sqrt(accuracy * (1 - accuracy) / n) if n and accuracy is not None else None
        rows.append([label, b, bin_name(b, bins), n, k, accuracy, se])
    return rows


def gold_by_position(systems: Sequence[System], lengths: dict[str, int], task: str, bins: int = BINS) -> pd.DataFrame:
    """Share of each gold label of a task within each position bin, per scenario (label sets differ)."""
    rows = []
    for record in unique_instances(systems, task):
        n_rows = lengths.get(record.sample_id)
        if n_rows is not None:
            rows.append((record.scenario, position_bin(record.row_index, n_rows, bins), gold_label(record) or NO_LABEL))
    frame = pd.DataFrame(rows, columns=["scenario", "bin", "label"])
    if frame.empty:
        return pd.DataFrame(columns=["scenario", "bin", "position", "label", "count", "share"])
    counts = frame.groupby(["scenario", "bin", "label"]).size().rename("count").reset_index()
    counts["share"] = counts["count"] / counts.groupby(["scenario", "bin"])["count"].transform("sum")
    counts.insert(2, "position", counts["bin"].map(lambda b: bin_name(int(b), bins)))
    return counts


# --- transitions (Fig. 3) -----------------------------------------------------------------------------


def transition_matrix(sequences: Iterable[Sequence[str]], labels: Sequence[str]) -> pd.DataFrame:
    """Row-normalised transitions between consecutive labels (row: current, column: next), self-transitions
    excluded as in the paper. A row with no outgoing transition stays all zero."""
    counts = pd.DataFrame(0.0, index=list(labels), columns=list(labels))
    for sequence in sequences:
        for current, following in pairwise(sequence):
            if current != following and current in counts.index and following in counts.columns:
                counts.loc[current, following] += 1
    totals = counts.sum(axis=1).replace(0, 1)
    return counts.div(totals, axis=0)


def label_sequences(records: Iterable[PredictionRecord], *, predicted: bool) -> dict[str, list[str]]:
    """Per sample, the labels of its labelled rows in row order (gold, or the top-1 prediction; failures and
    rows without a gold label are skipped, so a transition joins consecutive *labelled* rows)."""
    by_sample: dict[str, list[tuple[int, str]]] = {}
    for record in records:
        label = (top1(record.prediction) if record.ok else None) if predicted else gold_label(record)
        if label:
            by_sample.setdefault(record.sample_id, []).append((record.row_index, label))
    return {sid: [label for _, label in sorted(items)] for sid, items in by_sample.items()}


def transitions(systems: Sequence[System], task: str) -> dict[tuple[str, str], pd.DataFrame]:
    """(source, scenario) -> transition matrix of a task's labels; source is "gold" or a system label."""
    result: dict[tuple[str, str], pd.DataFrame] = {}
    gold_records = unique_instances(systems, task)
    for scenario in sorted({r.scenario for r in gold_records}):
        labels = _label_order(task, scenario, (gold_label(r) for r in gold_records if r.scenario == scenario))
        gold = [r for r in gold_records if r.scenario == scenario]
        result[("gold", scenario)] = transition_matrix(label_sequences(gold, predicted=False).values(), labels)
        for system in systems:
            records = [r for r in system.task_records(task) if r.scenario == scenario]
            if records:
                sequences = label_sequences(records, predicted=True).values()
                result[(system.label, scenario)] = transition_matrix(sequences, labels)
    return result


# --- label distributions, confusion, per-label accuracy ------------------------------------------------


def gold_distributions(systems: Sequence[System]) -> pd.DataFrame:
    """Gold label counts and shares per task and scenario (STP as individual vs group target)."""
    rows = []
    for task in closed_tasks():
        for record in unique_instances(systems, task):
            rows.append((task, record.scenario, _shown_gold(record)))
    frame = pd.DataFrame(rows, columns=["task", "scenario", "label"])
    if frame.empty:
        return pd.DataFrame(columns=["task", "scenario", "label", "count", "share"])
    counts = frame.groupby(["task", "scenario", "label"]).size().rename("count").reset_index()
    counts["share"] = counts["count"] / counts.groupby(["task", "scenario"])["count"].transform("sum")
    return counts


def confusion_matrix(records: Sequence[PredictionRecord], task: str, scenario: str) -> pd.DataFrame:
    """Gold (rows) by top-1 prediction (columns) counts; failures get their own column."""
    golds = [_shown_gold(r) for r in records]
    preds = [shown(task, predicted_label(r)) or FAILED_LABEL for r in records]
    labels = _label_order(task, scenario, golds + preds)
    counts = confusion_counts(golds, [None if p == FAILED_LABEL else p for p in preds], labels=labels)
    matrix = pd.DataFrame.from_dict(counts, orient="index")
    if not matrix[FAILED_LABEL].any():
        matrix = matrix.drop(columns=FAILED_LABEL)
    matrix.index.name = "gold"
    matrix.columns.name = "predicted"
    return matrix


def confusion_matrices(systems: Sequence[System]) -> dict[tuple[str, str, str], pd.DataFrame]:
    """(system, task, scenario) -> confusion matrix for the closed tasks."""
    result = {}
    for system in systems:
        for task in closed_tasks():
            records = system.task_records(task)
            for scenario in sorted({r.scenario for r in records}):
                scoped = [r for r in records if r.scenario == scenario]
                result[(system.label, task, scenario)] = confusion_matrix(scoped, task, scenario)
    return result


def per_label_accuracy(systems: Sequence[System], task: str) -> pd.DataFrame:
    """Accuracy (recall of the gold label) per gold label, system and scenario."""
    rows = []
    for system in systems:
        for record in system.task_records(task):
            rows.append((system.label, record.scenario, gold_label(record) or NO_LABEL, int(is_correct(record))))
    frame = pd.DataFrame(rows, columns=["system", "scenario", "label", "correct"])
    if frame.empty:
        return pd.DataFrame(columns=["system", "scenario", "label", "instances", "correct", "accuracy"])
    grouped = frame.groupby(["system", "scenario", "label"], sort=False)["correct"].agg(["size", "sum"]).reset_index()
    grouped.columns = ["system", "scenario", "label", "instances", "correct"]
    grouped["accuracy"] = grouped["correct"] / grouped["instances"]
    return grouped


def preferences(systems: Sequence[System], task: str) -> pd.DataFrame:
    """Bradley-Terry label strengths and preference bias per system and scenario (see preference.py)."""
    rows = []
    for system in systems:
        records = system.task_records(task)
        for scenario in sorted({r.scenario for r in records}):
            scoped = [r for r in records if r.scenario == scenario]
            labels = _label_order(task, scenario, (gold_label(r) for r in scoped))
            result = preference_bias(
                labels,
                [gold_label(r) for r in scoped],
                [top1(r.prediction) if r.ok else None for r in scoped],
            )
            for label, strength in zip(result.labels, result.strengths):
                rows.append((system.label, scenario, label, strength, result.bias, result.log_spread, result.converged))
    return pd.DataFrame(rows, columns=["system", "scenario", "label", "strength", "bias", "log_spread", "converged"])
