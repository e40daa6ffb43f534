"""STP, support target prediction: rank who the therapist's next supportive move will mainly address,
from the rows before that therapist turn (protocol §5)."""

from __future__ import annotations

import functools
from typing import ClassVar

from rescue.data.models import GROUP_LABELS, Sample, Scenario
from rescue.data.taxonomy import Label, label_block
from rescue.tasks import prompts
from rescue.tasks.base import Instance
from rescue.tasks.labels import group_synonyms, support_rows, target_candidates
from rescue.tasks.ranking import RANKING_ALIASES, RANKING_METRICS, RankingTask
from rescue.tasks.registry import register
from rescue.tasks.spec import Declaration, NoOptions, validate_options

ROLES = ("individual", "group")


def target_role(label: str) -> str:
    """A support target as a role: the group label (Couple, Family) or one person."""
    return "group" if label in GROUP_LABELS.values() else "individual"


def _label_defs(scenario: Scenario, names: tuple[str, ...]) -> list[Label]:
    whole = "both partners together" if scenario == "couple" else "the family as a whole or several members at once"
    return [
        Label(name, f"the move is mainly directed at {name}.")
        if name != GROUP_LABELS[scenario]
        else Label(name, f"the move addresses {whole}, a pattern they share or a shared task.")
        for name in names
    ]


# The candidates are a sample's people, so a sample's prompts share one label block.
@functools.lru_cache(maxsize=1024)
def _label_text(scenario: Scenario, names: tuple[str, ...]) -> str:
    return label_block(_label_defs(scenario, names))


class SupportTargetTask(RankingTask):
    """STP: whom the therapist's next move addresses, as a top-3 ranking."""

    declaration: ClassVar[Declaration] = Declaration(
        name="stp", title="Support target prediction", order=3,
        default_context_size=3, default_batch_size=3, max_tokens=1800,
        answer_key="target_top3", answer_aliases=RANKING_ALIASES,
        options=NoOptions, metrics=RANKING_METRICS, answer="ranking", label_order=lambda scenario: list(ROLES),
        shown_label=target_role, paper_counts={"couple": (1290, 172), "family": (347, 17)},
    )

    def build(self, samples: list[Sample], **options: object) -> list[Instance]:
        validate_options(self.name, NoOptions, options)
        instances = []
        for sample in samples:
            candidates = target_candidates(sample)
            for row, target, source in support_rows(sample):
                instances.append(
                    Instance.at_row(self.name, sample, row.row_index, target, labels=candidates,
                                    extra={"gold_source": source})
                )
        return instances

    def label_defs(self, instance: Instance) -> list[Label]:
        return _label_defs(instance.sample.scenario, tuple(instance.labels))

    def label_text(self, instance: Instance) -> str:
        return _label_text(instance.sample.scenario, tuple(instance.labels))

    def instance_synonyms(self, instance: Instance) -> dict[str, str]:
        return group_synonyms(instance.sample.scenario)

    def instructions(self, sample: Sample) -> list[str]:
        return [
            (
                f"Task: in {prompts.SETTING[sample.scenario]}, predict whom the therapist's NEXT supportive move "
                "(the target row, a therapist turn whose content is hidden) will mainly be directed at."
            ),
            (
                "Each item gives its id and the rows before the therapist turn (prior_context); do not assume "
                "anything about the upcoming utterance."
            ),
        ]

    def rules(self, sample: Sample) -> list[str]:
        return [
            (
                f"Rules: choose {sample.group_label} when the move addresses the whole group, a shared pattern or a "
                "shared task; prefer an individual when the move mainly invites, protects, challenges, reassures or "
                "redirects one person. Consider the relational flow, who is emotionally activated, pursuit and "
                "withdrawal, who holds the floor and the therapist's ongoing focus; if the move would restore balance "
                "or protect someone, rank that person high."
            )
        ]


TASK = register(SupportTargetTask())
