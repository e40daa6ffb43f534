"""SSP, support strategy prediction: rank the therapist's next support strategy, given whom it will
address, from the rows before that therapist turn (protocol §6)."""

from __future__ import annotations

import functools
from typing import ClassVar

from rescue.data.models import Sample, Scenario
from rescue.data.taxonomy import Label, label_block, strategy_taxonomy
from rescue.tasks import prompts
from rescue.tasks.base import Instance
from rescue.tasks.labels import STRATEGY_SYNONYMS, support_rows
from rescue.tasks.ranking import RANKING_ALIASES, RANKING_METRICS, GivenFields, RankingTask
from rescue.tasks.registry import register
from rescue.tasks.spec import Declaration, NoOptions, validate_options


class SupportStrategyTask(RankingTask):
    """SSP: which strategy the therapist uses next, as a top-3 ranking."""

    declaration: ClassVar[Declaration] = Declaration(
        name="ssp", title="Support strategy prediction", order=4,
        default_context_size=3, default_batch_size=3, max_tokens=2200,
        answer_key="strategy_top3", answer_aliases=RANKING_ALIASES, synonyms=STRATEGY_SYNONYMS,
        options=NoOptions, metrics=RANKING_METRICS, answer="ranking", analyses=("preference",),
        label_order=lambda scenario: list(strategy_taxonomy(scenario).names),  # type: ignore[arg-type]
        paper_counts={"couple": (1290, 172), "family": (347, 17)},
    )

    def build(self, samples: list[Sample], **options: object) -> list[Instance]:
        """STP's rows whose first strategy type is (exactly) a label of the scenario's taxonomy."""
        validate_options(self.name, NoOptions, options)
        instances = []
        for sample in samples:
            taxonomy = strategy_taxonomy(sample.scenario)
            for row, target, source in support_rows(sample):
                strategy = row.support_strategy[0].strategy_type.strip()
                if strategy in taxonomy:
                    instances.append(
                        Instance.at_row(self.name, sample, row.row_index, strategy, labels=taxonomy.names,
                                        extra={"support_target": target, "target_source": source})
                    )
        return instances

    def label_defs(self, instance: Instance) -> list[Label]:
        return list(strategy_taxonomy(instance.sample.scenario).labels)

    def label_text(self, instance: Instance) -> str:
        return _label_text(instance.sample.scenario)

    def extra_fields(self, instance: Instance) -> GivenFields:
        return {"support_target": instance.extra["support_target"]}

    def instructions(self, sample: Sample) -> list[str]:
        return [
            (
                f"Task: in {prompts.SETTING[sample.scenario]}, predict the support strategy of the therapist's NEXT "
                "move (the target row, a therapist turn whose content is hidden)."
            ),
            (
                "Each item gives its id, whom that move will address (support_target; use it to condition your "
                "answer) and the rows before the therapist turn (prior_context)."
            ),
        ]

    def rules(self, sample: Sample) -> list[str]:
        return [
            (
                "Rules: predict the MAIN function of the move, not every plausible one. Prefer the most specific "
                "justified label: track is the broadest and wins only when nothing more specific fits. Use the "
                "support target to break ties between overlapping labels."
            )
        ]


@functools.cache
def _label_text(scenario: Scenario) -> str:
    """The scenario's taxonomy as the prompt shows it, the same in every prompt."""
    return label_block(strategy_taxonomy(scenario).labels)


TASK = register(SupportStrategyTask())
