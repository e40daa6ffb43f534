"""RPP, relation pattern prediction: rank the 3 most likely relation patterns at a target row whose
content is hidden, from the rows before it (protocol §4)."""

from __future__ import annotations

import functools
from typing import ClassVar

# RPP's gold choices live in rescue.data.choices, where the command line reads them without the tasks. "auto"
# reproduces Table 6 on the complete family scenario (525) and keeps the couple samples that carry only
# relation_cycle_state (see docs/tasks.md, "RPP gold").
from rescue.data.choices import DEFAULT_RPP_GOLD as DEFAULT_RPP_GOLD
from rescue.data.choices import RPP_GOLD_CHOICES as RPP_GOLD_CHOICES
from rescue.data.choices import RppGold as RppGold
from rescue.errors import RescueError
from rescue.data.models import Sample, Scenario
from rescue.data.taxonomy import (
    COUPLE_RELATION,
    FAMILY_RELATION,
    Label,
    label_block,
    relation_taxonomy,
)
from rescue.metrics.classification import (
    confusion_matrix,
    macro_scores,
    per_label_scores,
)
from rescue.tasks import prompts
from rescue.tasks.base import Instance, PredictionRecord
from rescue.tasks.labels import RELATION_SYNONYMS
from rescue.tasks.ranking import RANKING_ALIASES, RANKING_METRICS, GivenFields, RankingTask, gold_and_rankings
from rescue.tasks.registry import register
from rescue.tasks.spec import Declaration, Metric, TaskOptions, validate_options



def gold_field(sample: Sample, rpp_gold: str) -> str:
    """The row field holding RPP gold for ``sample``: ``auto`` takes ``relation_pattern`` when the sample
    has any non-empty one, else ``relation_cycle_state``."""
    if rpp_gold not in RPP_GOLD_CHOICES:
        raise RescueError(f"unknown RPP gold field {rpp_gold!r}; choose one of: {', '.join(RPP_GOLD_CHOICES)}")
    if rpp_gold != "auto":
        return rpp_gold
    has_pattern = any((row.relation_pattern or "").strip() for row in sample.rows)
    return "relation_pattern" if has_pattern else "relation_cycle_state"


def macro_labels(scenarios: set[str]) -> list[str]:
    """The labels macro metrics average over: the scenario's taxonomy, or the union (couple order first)."""
    names: list[str] = []
    for taxonomy in (COUPLE_RELATION, FAMILY_RELATION):
        if taxonomy.scenario in scenarios:
            names.extend(n for n in taxonomy.names if n not in names)
    return names


class RppOptions(TaskOptions):
    """RPP's build options: which gold the relation pattern comes from."""

    rpp_gold: RppGold = DEFAULT_RPP_GOLD


class RelationPatternTask(RankingTask):
    """RPP: the group's relation pattern at a therapist turn, as a top-3 ranking."""

    declaration: ClassVar[Declaration] = Declaration(
        name="rpp",
        title="Relation pattern prediction",
        order=2,
        default_context_size=-1,
        default_batch_size=3,
        max_tokens=1800,
        answer_key="relation_top3",
        answer_aliases=RANKING_ALIASES,
        synonyms=RELATION_SYNONYMS,
        options=RppOptions,
        metrics=(
            Metric("accuracy", "Acc", headline=True, right_wrong=True),
            *(Metric(m.key, m.label, column=False, compared=False) for m in RANKING_METRICS),
            Metric("macro_f1", "macro F1", column=False, compared=False),
        ),
        answer="ranking",
        gold_persists=True,
        label_order=lambda scenario: list(relation_taxonomy(scenario).names),  # type: ignore[arg-type]
        analyses=("position", "per_label"),
        paper_counts={"couple": (1608, 172), "family": (525, 17)},
    )

    def build(self, samples: list[Sample], **options: object) -> list[Instance]:
        """Every row whose gold field holds a label of the scenario's taxonomy (all speakers, as the paper)."""
        rpp_gold = validate_options(self.name, RppOptions, options).rpp_gold
        instances = []
        for sample in samples:
            field = gold_field(sample, rpp_gold)
            names = relation_taxonomy(sample.scenario).names
            known = set(names)
            for row in sample.rows:
                label = (getattr(row, field) or "").strip()
                if label and label in known:
                    instances.append(
                        Instance.at_row(self.name, sample, row.row_index, label, labels=names,
                                        extra={"gold_field": field})
                    )
        return instances

    def label_defs(self, instance: Instance) -> list[Label]:
        return list(relation_taxonomy(instance.sample.scenario).labels)

    def label_text(self, instance: Instance) -> str:
        return _label_text(instance.sample.scenario)

    def instructions(self, sample: Sample) -> list[str]:
        unit = (
            "dyadic pattern between the partners"
            if sample.scenario == "couple"
            else "systemic pattern among the family members"
        )
        return [
            (
                f"Task: predict the relation pattern that organises the interaction in {prompts.SETTING[sample.scenario]} "
                f"at a target row: the {unit}, not one person's inner emotion."
            ),
            (
                "The target row's content is hidden. Each item gives its id, the speaker of the target row "
                "(target_speaker) and the rows before it (prior_context)."
            ),
        ]

    def rules(self, sample: Sample) -> list[str]:
        stable = "constructive_alignment" if sample.scenario == "couple" else "cooperative_family_alliance"
        return [
            (
                "Rules: judge the dominant relational organisation, not a single utterance. Use repair_softening only "
                "when blame or rigidity clearly loosens through vulnerability, apology, validation or re-engagement. "
                f"Use {stable} only for a sustained shared, cooperative stance, not a pause in conflict. Use "
                "mixed_transition only when several strong patterns are salient at once or the shift itself dominates; "
                "it is not a fallback for uncertainty."
            )
        ]

    def extra_fields(self, instance: Instance) -> GivenFields:
        return {"target_speaker": instance.sample.row(instance.row_index).speaker}

    def aggregate(self, records: list[PredictionRecord]) -> dict[str, float | int | None]:
        """Rank metrics plus top-1 accuracy and macro precision / recall / F1 over the scope's taxonomy
        (the union of both taxonomies when the scope pools couple and family)."""
        result = super().aggregate(records)
        gold, top1 = self._top1(records)
        macro = macro_scores(gold, top1, labels=macro_labels({r.scenario for r in records}))
        result["accuracy"] = result["recall_at_1"]
        result.update({key: (value if records else None) for key, value in macro.items()})
        return result

    def label_table(self, records: list[PredictionRecord]) -> dict[str, dict[str, float | int]]:
        """Per-label precision, recall, F1, support and predicted count of the top-1 prediction."""
        gold, top1 = self._top1(records)
        return per_label_scores(gold, top1, labels=macro_labels({r.scenario for r in records}))

    def confusion(self, records: list[PredictionRecord]) -> dict[str, dict[str, int]]:
        """Gold label x top-1 prediction counts, with a ``(failed)`` column."""
        gold, top1 = self._top1(records)
        return confusion_matrix(gold, top1, labels=macro_labels({r.scenario for r in records}))

    @staticmethod
    def _top1(records: list[PredictionRecord]) -> tuple[list[str], list[str | None]]:
        gold, rankings = gold_and_rankings(records)
        return gold, [r[0] if r else None for r in rankings]


@functools.cache
def _label_text(scenario: Scenario) -> str:
    """The scenario's taxonomy as the prompt shows it, the same in every prompt."""
    return label_block(relation_taxonomy(scenario).labels)


TASK = register(RelationPatternTask())
