"""What the three top-3 tasks (RPP, STP, SSP) share on top of :class:`rescue.tasks.closed.ClosedTask`: one
record per instance, a ranked-label answer, rank metrics. Each task module supplies its instances, label
set, wording and answer key."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, TypedDict

from rescue.data.models import Sample
from rescue.data.taxonomy import Label, label_block
from rescue.metrics.ranking import gold_rank, hit_at_k, ranking_scores, reciprocal_rank
from rescue.tasks import prompts
from rescue.tasks.base import Instance, LenientNotes, PredictionRecord, lenient_counts
from rescue.tasks.closed import ClosedTask
from rescue.tasks.parsing import local_id, normalize_ranking
from rescue.tasks.render import EncodedRows, RawJSON
from rescue.tasks.spec import Metric

TOP_K = 3
# Other keys a ranking answer's value is read from (a ranking task's ``answer_aliases``).
RANKING_ALIASES = ("top3", "ranking", "labels", "prediction")
# What every ranking task reports; R@1 is its right/wrong accuracy.
RANKING_METRICS: tuple[Metric, ...] = (
    Metric("recall_at_1", "R@1", headline=True, right_wrong=True),
    Metric("mrr", "MRR"),
)


class GivenFields(TypedDict, total=False):
    """What a ranking item states of its instance besides its id and rows (``RankingTask.extra_fields``); each
    key is set by the task named."""

    target_speaker: str  # RPP: the speaker of the target row, whose content is hidden
    support_target: str  # SSP: whom the therapist's next move addresses


class RankingItem(GivenFields):
    """One item of a ranking prompt, shown in the order id, the given fields, prior_context."""

    id: str  # the instance's local id, which the answer echoes
    prior_context: RawJSON  # the rows before the target row, as the prompt encodes them


class RankingTask(ClosedTask):
    """Base of RPP, STP and SSP. Subclasses declare themselves (``declaration``) and implement ``build``,
    ``label_defs``, ``instructions`` and (optionally) ``rules``, ``extra_fields`` and ``instance_synonyms``."""

    # --- subclass hooks ---------------------------------------------------------------------------------

    def build(self, samples: list[Sample], **options: object) -> list[Instance]:
        """The task's instances (each ranking task implements it)."""
        raise NotImplementedError

    def label_defs(self, instance: Instance) -> list[Label]:
        """The closed set with definitions, as shown in the prompt (same for every instance of a sample)."""
        raise NotImplementedError

    def instructions(self, sample: Sample) -> list[str]:
        """The task-specific prompt sections that precede the label block."""
        raise NotImplementedError

    def label_text(self, instance: Instance) -> str:
        """The label block of the prompt (:func:`rescue.data.taxonomy.label_block` of ``label_defs``); a task whose set is
        a fixed taxonomy per scenario writes it once."""
        return label_block(self.label_defs(instance))

    def rules(self, sample: Sample) -> list[str]:
        """Task-specific rules after the label block."""
        return []

    def extra_fields(self, instance: Instance) -> GivenFields:
        """Fields of the item record besides id and prior_context (e.g. the known target in SSP)."""
        return {}

    def instance_synonyms(self, instance: Instance) -> Mapping[str, str]:
        """The synonyms parsing may map for ``instance`` (the declared ones; STP's depend on the scenario)."""
        return self.declaration.synonyms

    # --- the closed-task hooks ------------------------------------------------------------------------------

    def item(self, instance: Instance, rows: EncodedRows, k: int) -> RankingItem:
        return {"id": local_id(instance), **self.extra_fields(instance),
                "prior_context": rows.context(instance.row_index, k)}

    def sections(self, sample: Sample, batch: list[Instance], k: int, mode: str) -> list[str]:
        return [
            *self.instructions(sample),
            prompts.participants_line(sample),
            "Closed label set (use these labels exactly):\n" + self.label_text(batch[0]),
            prompts.context_sentence(k, anchor="the target row"),
            prompts.mode_line(mode),
            *self.rules(sample),
            (
                f"Rank the {TOP_K} most likely labels, most likely first, all distinct and from the closed set. "
                "Use only the evidence shown; rows after the target row are not available."
            ),
        ]

    def schema(self) -> str:
        return _schema(self.answer_key)

    def labels(self, instance: Instance) -> list[Label]:
        return self.label_defs(instance)

    def read(self, value: Any, instance: Instance, notes: LenientNotes | None) -> list[str]:
        dropped: list[str] | None = None if notes is None else []
        ranking = normalize_ranking(value, instance.labels, self.instance_synonyms(instance), k=TOP_K, dropped=dropped)
        if dropped and notes is not None:
            notes["dropped"] = dropped
        return ranking

    # --- scores ------------------------------------------------------------------------------------------

    def instance_scores(self, record: PredictionRecord) -> dict[str, float | None]:
        """Recall@1-3, the reciprocal rank and the gold's rank of one record."""
        ranking = record.prediction if record.ok else None
        scores: dict[str, float | None] = {
            f"recall_at_{k}": hit_at_k(record.gold, ranking, k) for k in range(1, TOP_K + 1)
        }
        scores["mrr"] = reciprocal_rank(record.gold, ranking)
        scores["rank"] = float(gold_rank(record.gold, ranking))
        return scores

    def aggregate(self, records: list[PredictionRecord]) -> dict[str, float | int | None]:
        """Recall@k, MRR, counts and what lenient parsing did, over ``records``."""
        gold, rankings = gold_and_rankings(records)
        result: dict[str, float | int | None] = {"instances": len(records), "failures": _failures(records)}
        scores = ranking_scores(gold, rankings, ks=range(1, TOP_K + 1))
        result.update({key: (value if records else None) for key, value in scores.items()})
        result.update(lenient_counts(records))
        return result


@functools.cache
def _schema(answer_key: str) -> str:
    return prompts.schema_block(
        [{"id": "<item id>", answer_key: ["<most likely>", "<second>", "<third>"], "reason": "<short reason>"}]
    )


def gold_and_rankings(records: list[PredictionRecord]) -> tuple[list[str], list[list[str] | None]]:
    """The gold labels and the rankings of ``records`` (None for a failure), in order."""
    return [r.gold for r in records], [r.prediction if r.ok else None for r in records]


def _failures(records: list[PredictionRecord]) -> int:
    return sum(not r.ok for r in records)
