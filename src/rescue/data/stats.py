"""Dataset statistics: the paper's Table 3 per scenario and overall, plus label distributions.

Definitions (they reproduce the paper's family column exactly on the 17 released family samples):

- a *turn* is a row;
- a sample's *duration* is its largest ``end_time`` (clips start at 0), in minutes;
- a sample's *speakers* are its distinct ``primary_speaker`` values, Therapist included, and the group
  label included too: one family sample has ``Family`` as the speaker of three rows, and counting it
  gives the paper's 4.06 (leaving it out gives 4.00);
- the *therapist share* is the fraction of all rows whose speaker is Therapist;
- *session groups* are the clips of one couple or one family (:mod:`rescue.data.groups`), the unit the
  report's bootstrap resamples.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rescue.data.groups import infer_groups
from rescue.data.models import GROUP_LABELS, THERAPIST, Sample
from rescue.data.taxonomy import UTTERANCE_TYPES, relation_taxonomy, strategy_taxonomy

SCOPES = ("couple", "family", "all")

# (key, column heading, how the paper prints it)
TABLE3_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("samples", "Samples", "{:,}"),
    ("total_minutes", "Total min", "{:,.1f}"),
    ("total_turns", "Total turns", "{:,}"),
    ("avg_minutes", "Avg min", "{:.2f}"),
    ("avg_turns", "Avg turns", "{:.2f}"),
    ("avg_speakers", "Avg speakers", "{:.2f}"),
    ("therapist_share", "Therapist share", "{:.1%}"),
)


def speakers(sample: Sample) -> set[str]:
    """Distinct speakers of a sample as Table 3 counts them."""
    return {row.speaker for row in sample.rows}


def table3_row(samples: list[Sample]) -> dict[str, float | int]:
    """One scope of Table 3 (unrounded)."""
    n = len(samples)
    minutes = sum(sample.duration_minutes for sample in samples)
    turns = sum(len(sample.rows) for sample in samples)
    therapist = sum(1 for sample in samples for row in sample.rows if row.speaker == THERAPIST)
    return {
        "samples": n,
        "total_minutes": minutes,
        "total_turns": turns,
        "avg_minutes": minutes / n if n else 0.0,
        "avg_turns": turns / n if n else 0.0,
        "avg_speakers": sum(len(speakers(s)) for s in samples) / n if n else 0.0,
        "therapist_share": therapist / turns if turns else 0.0,
    }


def table3(samples: list[Sample]) -> dict[str, dict[str, float | int]]:
    """``{"couple": {...}, "family": {...}, "all": {...}}``, each with the seven Table 3 keys."""
    return {
        "couple": table3_row([s for s in samples if s.scenario == "couple"]),
        "family": table3_row([s for s in samples if s.scenario == "family"]),
        "all": table3_row(samples),
    }


def _count(values: Iterable[str], order: list[str]) -> dict[str, int]:
    """Counts in taxonomy order; labels outside the taxonomy (if any) follow, most frequent first."""
    counts = Counter(values)
    ordered = {name: counts.pop(name, 0) for name in order}
    ordered.update(dict(counts.most_common()))
    return ordered


def distributions(samples: list[Sample]) -> dict[str, dict[str, dict[str, int]]]:
    """Label distributions per scenario: relation patterns, strategies, support targets, utterance types, intensity.

    Relation patterns count both fields that carry them in the release (``relation_pattern`` and
    ``relation_cycle_state``), separately, because they sit on different rows in couple samples.
    """
    result: dict[str, dict[str, dict[str, int]]] = {}
    for scenario in ("couple", "family"):
        scoped = [s for s in samples if s.scenario == scenario]
        rows = [row for s in scoped for row in s.rows]
        relations = relation_taxonomy(scenario).names
        group = GROUP_LABELS[scenario]
        targets: Counter[str] = Counter()
        for row in rows:
            if row.is_therapist and row.support_strategy:
                names = [t.strip() for t in row.support_strategy[0].target if t.strip() and t.strip() != THERAPIST]
                if names:
                    # The benchmark's rule (STP): two or more people collapse to the group label.
                    targets["individual" if len(names) == 1 and names[0] != group else "group"] += 1
        result[scenario] = {
            "relation_pattern": _count((r.relation_pattern.strip() for r in rows if r.relation_pattern), relations),
            "relation_cycle_state": _count(
                (r.relation_cycle_state.strip() for r in rows if r.relation_cycle_state), relations
            ),
            "support_strategy": _count(
                (m.strategy_type.strip() for r in rows for m in r.support_strategy[:1] if m.strategy_type),
                strategy_taxonomy(scenario).names,
            ),
            "support_target": dict(targets),
            "utterance_type": _count(
                (r.utterance_type for r in rows if not r.is_therapist and r.utterance_type),
                [label.name for label in UTTERANCE_TYPES],
            ),
            "emotion_intensity": _count(
                (
                    str(round(e.intensity))
                    for r in rows
                    for e in r.internal_emotion
                    if e.intensity is not None and e.person == r.speaker
                ),
                [str(i) for i in range(11)],
            ),
        }
    return result


@dataclass
class DatasetStats:
    """The statistics of a dataset: the paper's Table 3 per scope, label distributions and session groups."""

    table3: dict[str, dict[str, float | int]]
    distributions: dict[str, dict[str, dict[str, int]]]
    groups: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # scenario -> group -> sample ids
    grouping: str = ""  # how the groups were made

    def to_json(self) -> dict[str, Any]:
        """The three scope keys exactly, then the distributions and the session groups under their own keys."""
        out: dict[str, Any] = {scope: _rounded(self.table3[scope]) for scope in SCOPES}
        out["distributions"] = self.distributions
        out["groups"] = self.groups
        return out


def _rounded(row: dict[str, float | int]) -> dict[str, float | int]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}


def compute(samples: list[Sample]) -> DatasetStats:
    """Table 3, the label distributions and the inferred session groups of ``samples``."""
    groups = infer_groups(samples)
    return DatasetStats(table3(samples), distributions(samples), groups.members(), groups.method)


# --- rendering ---------------------------------------------------------------------------------------------


def table3_cells(stats: DatasetStats) -> list[list[str]]:
    """Table 3 as text cells, formatted the way the paper prints it, one row per scope."""
    return [
        [scope] + [fmt.format(stats.table3[scope][key]) for key, _, fmt in TABLE3_COLUMNS] for scope in SCOPES
    ]


def render_markdown(stats: DatasetStats) -> str:
    """The statistics as Markdown tables: Table 3, each distribution, the session groups. Every label, group and
    id goes through ``markdown_text`` (one line, controls escaped, ``|`` and HTML defused)."""
    from rescue.data.text import markdown_text as cell

    header = ["Scenario"] + [title for _, title, _ in TABLE3_COLUMNS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in cells) + " |" for cells in table3_cells(stats)]
    for scenario, dists in stats.distributions.items():
        for name, counts in dists.items():
            lines += ["", f"**{cell(scenario)} {cell(name.replace('_', ' '))}**", "", "| Label | Count |", "|---|---|"]
            lines += [f"| {cell(label)} | {count} |" for label, count in counts.items()]
    lines += ["", "**Session groups**", "", "| Scenario | Group | Clips | Sample ids |", "|---|---|---|---|"]
    lines += [f"| {cell(scenario)} | {cell(group)} | {len(ids)} | {cell(', '.join(ids))} |"
              for scenario, groups in stats.groups.items() for group, ids in groups.items()]
    if stats.grouping:
        lines += ["", f"Session groups {stats.grouping}."]
    return "\n".join(lines) + "\n"


def _latex_escape(text: str) -> str:
    from rescue.data.text import latex_text

    return latex_text(text)


def render_latex(stats: DatasetStats) -> str:
    """Table 3 as a LaTeX tabular (booktabs)."""
    header = ["Scenario"] + [title for _, title, _ in TABLE3_COLUMNS]
    lines = [
        r"\begin{tabular}{l" + "r" * len(TABLE3_COLUMNS) + "}",
        r"\toprule",
        " & ".join(header) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(_latex_escape(c) for c in cells) + r" \\" for cells in table3_cells(stats)]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def render_json(stats: DatasetStats) -> str:
    """The statistics as JSON text (a value that is not a finite number is null)."""
    from rescue.data.text import json_safe

    # JSON has no NaN or Infinity: a value that is not a finite number is written as null.
    return json.dumps(json_safe(stats.to_json()), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
