"""ITP, intervention timing prediction: after a client turn, should the therapist take the next turn?
Instances are balanced yes/no within each sample by evenly spaced selection (protocol §2)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, ClassVar, TypedDict, TypeVar

from pydantic import Field

from rescue.data.evenly import pick_evenly
from rescue.data.models import Sample
from rescue.metrics.classification import binary_scores
from rescue.tasks import prompts
from rescue.tasks.base import (
    LenientNotes,
    Instance,
    ParsePolicy,
    Prediction,
    PredictionRecord,
    lenient_counts,
)
from rescue.tasks.closed import ClosedTask
from rescue.data.taxonomy import Label, label_block
from rescue.tasks.labels import ITP_LABELS, ITP_SYNONYMS
from rescue.tasks.parsing import (
    AnswerError,
    local_id,
    normalize_label,
    yes_no_from_prose,
)
from rescue.tasks.registry import register
from rescue.tasks.render import EncodedRows, RawJSON
from rescue.tasks.spec import Declaration, Metric, TaskOptions, validate_options

T = TypeVar("T")


def even_sample(items: Sequence[T], limit: int) -> list[T]:
    """``limit`` items spread evenly over ``items`` (the authors' rule, kept so counts match the paper): the
    shared :func:`rescue.data.evenly.pick_evenly`, whose single pick is the middle item here."""
    return pick_evenly(items, limit, single="middle")


def decision_rows(sample: Sample) -> tuple[list[int], list[int]]:
    """Positive and negative decision rows t (1-based row_index): the therapist enters at t+1 after a
    non-therapist row t, or neither t nor t+1 is the therapist."""
    rows = sample.rows
    positives: list[int] = []
    negatives: list[int] = []
    for current, following in itertools.pairwise(rows):
        if current.is_therapist:
            continue
        (positives if following.is_therapist else negatives).append(current.row_index)
    return positives, negatives


def _labels(clients: str) -> list[Label]:
    """yes and no with their definitions (``clients``: the partners, the family members)."""
    return [
        Label("yes", "an intervention now (a question, reflection, validation, containment, reframe or process "
                     "comment) is timely and clinically helpful."),
        Label("no", f"the therapist should keep listening and let {clients} continue."),
    ]


_SCHEMA = prompts.schema_block([{"id": "<item id>", "should_speak": "yes or no", "reason": "<short reason>"}])


class ItpOptions(TaskOptions):
    """ITP's build options."""

    itp_max_per_class: int = Field(0, ge=0, description="cap each class per sample before balancing (0: no cap)")


class ItpItem(TypedDict):
    """One item of an ITP prompt, shown in this key order."""

    id: str  # the instance's local id, which the answer echoes
    prior_context: RawJSON  # the rows before decision_row, as the prompt encodes them
    decision_row: RawJSON  # the row the therapist's turn would follow


class InterventionTimingTask(ClosedTask):
    """ITP: after a client turn, should the therapist take the next turn? Yes/no, balanced within each sample."""

    row_key = "decision_row"

    declaration: ClassVar[Declaration] = Declaration(
        name="itp",
        title="Intervention timing prediction",
        order=1,
        default_context_size=3,
        default_batch_size=4,
        max_tokens=1600,
        answer_key="should_speak",
        answer_aliases=("answer", "prediction", "label"),
        synonyms=ITP_SYNONYMS,
        shows_row=True,
        hidden="next_row",
        options=ItpOptions,
        metrics=(
            Metric("precision", "P"),
            Metric("recall", "R"),
            Metric("f1", "F1", headline=True),
            Metric("accuracy", "Acc", column=False, right_wrong=True),
        ),
        outcome="right_wrong",
        answer="label",
        positive="yes",
        label_order=lambda scenario: list(ITP_LABELS),
        paper_counts={"couple": (2722, 168), "family": (284, 16)},
    )

    def build(self, samples: list[Sample], **options: object) -> list[Instance]:
        """Per sample: n = min(#yes, #no) of each class by even sampling (after an optional cap per class),
        in row order; a sample without both classes yields nothing."""
        itp_max_per_class = validate_options(self.name, ItpOptions, options).itp_max_per_class
        instances = []
        for sample in samples:
            positives, negatives = decision_rows(sample)
            positives, negatives = even_sample(positives, itp_max_per_class), even_sample(negatives, itp_max_per_class)
            n = min(len(positives), len(negatives))
            if n == 0:
                continue
            chosen = [(t, "yes") for t in even_sample(positives, n)] + [(t, "no") for t in even_sample(negatives, n)]
            for t, gold in sorted(chosen):
                instances.append(
                    Instance.at_row(self.name, sample, t, gold, local_id=f"after_row{t}", labels=list(ITP_LABELS))
                )
        return instances

    def item(self, instance: Instance, rows: EncodedRows, k: int) -> ItpItem:
        return {
            "id": local_id(instance),
            "prior_context": rows.context(instance.row_index, k),
            "decision_row": rows.row(instance.row_index),
        }

    def sections(self, sample: Sample, batch: list[Instance], k: int, mode: str) -> list[str]:
        clients = prompts.CLIENTS[sample.scenario]
        member = "a partner" if sample.scenario == "couple" else "a family member"
        return [
            (
                f"Task: you judge therapist intervention timing in {prompts.SETTING[sample.scenario]}. For each item the "
                "conversation has just reached the end of decision_row. Decide whether the therapist should take the "
                "very next turn."
            ),
            prompts.participants_line(sample),
            "Labels:\n" + label_block(_labels(clients)),
            (
                f"Clinical standard: lean yes when the process has crystallised enough that an intervention would help "
                f"now; lean no when {member} is still unfolding a thought, vulnerable material is still emerging, or "
                "the exchange is still developing productively."
            ),
            prompts.context_sentence(k, anchor="decision_row") + " decision_row itself is always given.",
            prompts.mode_line(mode),
            "Judge only from what is shown; you cannot see the next turn.",
        ]

    def schema(self) -> str:
        return _SCHEMA

    def labels(self, instance: Instance) -> list[Label]:
        return _labels(prompts.CLIENTS[instance.sample.scenario])

    def read(self, value: Any, instance: Instance, notes: LenientNotes | None) -> str:
        return _read_yes_no(value, instance, notes)

    def parse(self, raw: str, batch: list[Instance], policy: ParsePolicy = "strict") -> dict[str, Prediction]:
        predictions = super().parse(raw, batch, policy)
        if policy == "lenient" and len(batch) == 1:
            # One item asked and no JSON at all, only prose ("Yes, the therapist should step in."): read it.
            only = predictions[batch[0].instance_id]
            found = yes_no_from_prose(raw or "") if only.status == "parse_error" and "no JSON" in only.error else None
            if found is not None:
                predictions[only.instance_id] = Prediction(only.instance_id, "ok", value=found, raw=raw,
                                                           lenient={"read_from_prose": (raw or "").strip()[:200]})
        return predictions

    def instance_scores(self, record: PredictionRecord) -> dict[str, float | None]:
        """1 when the record's answer is its gold, else 0."""
        return {"correct": 1.0 if record.ok and record.prediction == record.gold else 0.0}

    def lenient_differences(self, records: list[PredictionRecord]) -> list[str]:
        """What ``rescue report --reference paper`` says of a lenient ITP column (see the module function)."""
        return lenient_differences(records)

    def aggregate(self, records: list[PredictionRecord]) -> dict[str, float | int | None]:
        """Precision / recall / F1 of "yes" (the paper's numbers), the same for "no", accuracy and balanced
        accuracy, micro over the records given. Failures count as neither yes nor no: always wrong."""
        gold = [r.gold for r in records]
        pred = [r.prediction if r.ok else None for r in records]
        result: dict[str, float | int | None] = {"instances": len(records), "failures": sum(not r.ok for r in records)}
        scores = binary_scores(gold, pred, positive="yes", negative="no")
        result.update({key: (value if records else None) for key, value in scores.items()})
        result.update(lenient_counts(records))
        return result


def lenient_differences(records: list[PredictionRecord]) -> list[str]:
    """Where the lenient reading of these ITP answers may differ from the authors' scripts: answers read from
    prose, and answers left unreadable (docs/tasks.md, "Lenient is not exactly the authors' reading")."""
    prose = sum(1 for r in records if (r.lenient or {}).get("read_from_prose"))
    unread = sum(1 for r in records if r.status == "parse_error")
    parts = []
    if prose:
        parts.append(f"{prose} answer(s) read as yes/no from prose, which the authors' scripts read by substring "
                     "(yes before no) or, with no JSON in the answer, as the fallback no")
    if unread:
        parts.append(f"{unread} unreadable answer(s) scored as failures, which the authors' scripts read by "
                     "substring (\"yes/no\", \"eyes\", [\"yes\"] as yes) or as the fallback no")
    return ["lenient differs from the authors' ITP reading here: " + "; ".join(parts)] if parts else []


def _read_yes_no(value: Any, instance: Instance, notes: LenientNotes | None) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) and value in (0, 1):
        return "yes" if value == 1 else "no"
    if not isinstance(value, str):
        raise AnswerError(f"expected yes or no, got {value!r:.60}")
    try:
        return normalize_label(value, ITP_LABELS, InterventionTimingTask.declaration.synonyms)
    except AnswerError:
        found = yes_no_from_prose(value)
        if notes is None or found is None:
            raise
        notes["read_from_prose"] = value.strip()[:200]
        return found


TASK = register(InterventionTimingTask())
