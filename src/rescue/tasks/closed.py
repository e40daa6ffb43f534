"""What the four closed-set tasks (ITP, RPP, STP, SSP) share: one render skeleton, one parse through the
pipeline, one answer format. A subclass gives its prompt sections, the record of one item and how an
item's value is read; ITP answers one label, the ranking tasks (``rescue.tasks.ranking``) three."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from rescue.data.shapes import ChatMessage, JsonObject
from rescue.data.models import Sample
from rescue.data.taxonomy import Label
from rescue.tasks import prompts
from rescue.tasks.prompts import PromptParts
from rescue.tasks.base import DeclaredTask, Instance, LenientNotes, ParsePolicy, Prediction, RenderOptions
from rescue.tasks.parsing import Matching, first_present, local_id, parse_answer
from rescue.tasks.render import EncodedRows

# Closed-set answers may also come keyed by id: {"row1": [...], "row2": [...]}.
MATCHING = Matching(keyed=True)

class ClosedTask(DeclaredTask):
    """Base of a closed-set task: its declaration names the ``answer_key`` (and ``answer_aliases``)."""

    @property
    def answer_key(self) -> str:
        """What the answer schema asks for, e.g. "should_speak", "relation_top3"."""
        return self.declaration.answer_key

    def value_keys(self) -> tuple[str, ...]:
        """Where an answer item's value may be: ``answer_key``, then the declared aliases."""
        return (self.declaration.answer_key, *self.declaration.answer_aliases)

    # The item key holding the row of the instance itself, where the prompt shows it (ITP's "decision_row"): the
    # row a person's page shows as the current one. None where an item shows only the rows before it.
    row_key: ClassVar[str | None] = None

    # --- subclass hooks ---------------------------------------------------------------------------------

    def sections(self, sample: Sample, batch: list[Instance], k: int, mode: str) -> list[str]:
        """The prompt's instruction sections (before the answer schema, which :meth:`schema` gives)."""
        raise NotImplementedError

    def schema(self) -> str:
        """The answer schema section, after the instructions ("": a task whose :meth:`sections` end with it)."""
        return ""

    def labels(self, instance: Instance) -> list[Label]:
        """The instance's closed set with each label's definition, as the prompt states them."""
        return []

    def item(self, instance: Instance, rows: EncodedRows, k: int) -> Mapping[str, object]:
        """One item's record: its id and what the prompt shows of it (rescue's own tasks: ITP's :class:`rescue.tasks.itp.ItpItem`,
        the ranking tasks' :class:`rescue.tasks.ranking.RankingItem`; a task from elsewhere records its own keys and
        names them through :class:`PromptParts`)."""
        raise NotImplementedError

    def read(self, value: Any, instance: Instance, notes: LenientNotes | None) -> Any:
        """The prediction value an item's answer means; AnswerError when it means none."""
        raise NotImplementedError

    # --- the Task contract ----------------------------------------------------------------------------------

    def parts(self, batch: list[Instance], options: RenderOptions) -> PromptParts:
        """The parts of the prompt: the task's sections, its schema, one item per instance with its context rows,
        and the closed set with its definitions."""
        sample = prompts.batch_sample(batch)
        k = prompts.resolve_context_size(options.context_size, self.declaration.default_context_size)
        rows = EncodedRows(sample, options.mode, options.rows)
        items = tuple(self.item(instance, rows, k) for instance in batch)
        schema = self.schema()
        return PromptParts(tuple(self.sections(sample, batch, k, options.mode)), (schema,) if schema else (), items,
                           tuple(self.labels(batch[0])), current_key=self.row_key)

    def render(self, batch: list[Instance], options: RenderOptions) -> list[ChatMessage]:
        """The prompt: the message of :meth:`parts`."""
        return self.parts(batch, options).message()

    def parse(self, raw: str, batch: list[Instance], policy: ParsePolicy = "strict") -> dict[str, Prediction]:
        """Each instance's label or ranking read from the answer, under ``policy``."""
        keys = self.value_keys()

        def read(item: JsonObject, instance: Instance, notes: LenientNotes | None) -> Any:  # open: the model's answer
            return self.read(first_present(item, keys), instance, notes)

        return parse_answer(raw, batch, keys, read, policy, MATCHING)

    def format_answer(self, batch: list[Instance], values: dict[str, Any]) -> str:
        """An answer in the task's JSON format holding ``values``."""
        items = [{"id": local_id(i), self.answer_key: _plain(values[i.instance_id])} for i in batch
                 if i.instance_id in values]
        return json.dumps({"predictions": items}, ensure_ascii=False)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
