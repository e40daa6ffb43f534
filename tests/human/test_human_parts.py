"""The human reference's page is made from the parts of the instance's prompt (issue #47 item 4): its instructions,
item and labels are the task's PromptParts, the answer format left out (tests/tasks/test_prompt_parts.py holds that
the message is made of the same parts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from rescue.data.models import Sample
from rescue.data.reading import demo_path
from rescue.data.taxonomy import Label, label_block
from rescue.human.benchmark import init_benchmark, load_benchmark, page
from rescue.tasks import TASKS, get_task, prompts, register, unregister
from rescue.tasks.base import Instance, LenientNotes, PredictionRecord, RenderOptions
from rescue.tasks.closed import ClosedTask
from rescue.tasks.parsing import local_id, normalize_label
from rescue.tasks.render import EncodedRows
from rescue.tasks.spec import Declaration, Metric, NoOptions


def test_the_page_is_made_of_the_parts(tmp_path: Path):
    init_benchmark(tmp_path / "b", demo_path(), list(TASKS), 1, sample=2)
    bench = load_benchmark(tmp_path / "b")
    for name in TASKS:
        task, instance = get_task(name), bench.instance(name, 1)
        parts = task.parts([instance], RenderOptions())
        shown = page(bench, name, 1)
        assert shown["instructions"] == parts.instructions_text
        # The first paragraph: ER's and VP's instructions are one (a line each), so their statement is all of it,
        # what is predicted and whose turn it is, as before the page was made from parts.
        assert shown["statement"] == parts.instructions_text.split("\n\n", 1)[0]
        assert ("CURRENT speaker" in shown["statement"]) == (name in ("er", "vp")), shown["statement"]
        assert shown["current"] == parts.current() and shown["given"] == parts.given()
        assert (shown["current"] is not None) == task.declaration.shows_row
        assert all(section not in shown["instructions"] for section in parts.answer_format)  # no schema for people
        item = parts.item()
        assert shown["context"] == item.get("prior_context", [])
        assert [entry["label"] for entry in shown["labels"]] == instance.labels
        for entry, label in zip(shown["labels"], parts.labels, strict=False):
            assert entry["definition"].startswith(label.definition)


LABELS = ["yes", "no"]
DEFINITIONS = [Label("yes", "the turn asks a question."), Label("no", "the turn asks nothing.")]
# Words of the prompt's own layout inside its instructions: a page cut from the text at "Answer with one JSON
# object" (the answer schema) lost everything after them, the label block and its definitions included.
TRICKY = ("Answer with one JSON object per turn in your head first, then check it. The items follow "
          "after\n\nItems:\nbelow, one per turn.")


class MarkerWords(ClosedTask):
    """A question-spotting task whose instructions quote the prompt's layout words and whose label block is
    written in another layout than "- label: ..." bullets."""

    declaration: ClassVar[Declaration] = Declaration(
        name="markerwords", title="Marker words", default_context_size=2, default_batch_size=1, max_tokens=200,
        answer_key="is_question", metrics=(Metric("accuracy", "Acc", headline=True, right_wrong=True),),
        outcome="right_wrong", answer="label", options=NoOptions, label_order=lambda scenario: list(LABELS),
        shows_row=True, hidden="none",
    )
    row_key = "turn"

    def build(self, samples: list[Sample], **options: Any) -> list[Instance]:
        return [Instance.at_row(self.name, sample, row.row_index, "no", labels=LABELS)
                for sample in samples for row in sample.rows[2:4] if not row.is_therapist]

    def item(self, instance: Instance, rows: EncodedRows, k: int) -> dict[str, Any]:
        return {"id": local_id(instance), "speaker_named": instance.sample.row(instance.row_index).speaker,
                "turn": rows.row(instance.row_index), "prior_context": rows.context(instance.row_index, k)}

    def sections(self, sample: Sample, batch: list[Instance], k: int, mode: str) -> list[str]:
        return ["Task: does the turn ask a question?", TRICKY,
                "Labels:\n" + label_block(DEFINITIONS).replace("- yes:", "* yes =").replace("- no:", "* no ="),
                prompts.mode_line(mode)]

    def labels(self, instance: Instance) -> list[Label]:
        return DEFINITIONS

    def schema(self) -> str:
        return prompts.schema_block([{"id": "<item id>", "is_question": "yes or no"}])

    def read(self, value: Any, instance: Instance, notes: LenientNotes | None) -> str:
        return normalize_label(value, LABELS, {})

    def instance_scores(self, record: PredictionRecord) -> dict[str, float | None]:
        return {"correct": float(record.ok and record.prediction == record.gold)}

    def aggregate(self, records: list[PredictionRecord]) -> dict[str, float | int | None]:
        return {"instances": len(records), "failures": sum(not r.ok for r in records)}


@pytest.fixture
def marker_task():
    task = register(MarkerWords())
    try:
        yield task
    finally:
        unregister("markerwords")


def test_a_page_shows_every_part_whatever_words_its_prompt_holds(marker_task, tmp_path: Path):
    init_benchmark(tmp_path / "b", demo_path(), ["markerwords", "itp"], 1)
    bench = load_benchmark(tmp_path / "b")
    instance = bench.instance("markerwords", 1)
    prompt = marker_task.render([instance], RenderOptions())[0]["content"]
    assert prompt.count("Answer with one JSON object") == 2 and prompt.count("\n\nItems:\n") == 2  # the words, twice
    shown = page(bench, "markerwords", 1)
    assert TRICKY in shown["instructions"] and "* yes = the turn asks a question." in shown["instructions"]
    assert "in this schema" not in shown["instructions"]  # the answer schema is no instruction to a person
    assert shown["labels"] == [{"label": d.name, "definition": d.definition} for d in DEFINITIONS]
    row = instance.sample.row(instance.row_index)
    assert shown["current"] is not None and shown["current"]["row_index"] == instance.row_index
    assert shown["given"] == {"speaker_named": row.speaker}
    earlier = [r.row_index for r in instance.sample.rows if r.row_index < instance.row_index][-2:]
    assert [r["row_index"] for r in shown["context"]] == earlier
    itp = page(bench, "itp", 1)  # a paper task's page beside it: its instructions the prompt's, its labels defined
    assert itp["instructions"] in get_task("itp").render([bench.instance("itp", 1)], RenderOptions())[0]["content"]
    assert all(label["definition"] for label in itp["labels"]) and itp["current"] is not None
