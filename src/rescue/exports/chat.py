"""Fine-tuning examples: each task instance as a chat whose user turn is exactly the prompt ``rescue run`` sends
for it (one instance per request, the run's default ``--batch-size 1``) and whose assistant turn is the gold
answer in the task's own answer schema (``task.format_answer``). A model trained on them answers in the form
``rescue run`` parses, so it is evaluated without any change.

Ranking tasks (RPP, STP, SSP) have one gold label: their assistant turn ranks it alone (the schema's list
with one label), which the parser accepts and which scores Recall@1 = MRR = 1.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from rescue.data.shapes import ChatMessage
from rescue.atomic import check_target, write_atomic
from rescue.errors import ExportError

from rescue.data.models import Sample
from rescue.tasks.base import Instance, RenderOptions, Task, gold_value
from rescue.tasks.render import RowCache


class ChatMetadata(TypedDict):
    """Where a chat example comes from (the ``metadata`` of its JSONL line)."""

    task: str
    instance_id: str
    sample_id: str
    scenario: str
    row_index: int


class ChatLine(TypedDict):
    """One line of a chat export: the prompt's messages and the gold answer as the last (assistant) one."""

    messages: list[ChatMessage]  # as the task renders them (rescue.tasks.base.Task.render), then the answer
    metadata: ChatMetadata


@dataclass
class ChatExample:
    """One instance as a chat: ``messages`` ends with the gold answer; ``metadata`` says where it comes from."""

    task: str
    instance: Instance
    messages: list[ChatMessage]

    @property
    def answer(self) -> str:
        """The gold answer: the content of the last (assistant) message."""
        return str(self.messages[-1]["content"])

    def as_json(self) -> ChatLine:
        """The example as one JSONL line: the messages and the instance's metadata."""
        instance = self.instance
        return {"messages": self.messages,
                "metadata": {"task": self.task, "instance_id": instance.instance_id, "sample_id": instance.sample_id,
                             "scenario": instance.scenario, "row_index": instance.row_index}}


def chat_examples(samples: list[Sample], tasks: Iterable[Task], options: RenderOptions | None = None,
                  build_options: dict[str, dict[str, Any]] | None = None) -> Iterator[ChatExample]:
    """Every instance of every task, in task then instance order, as a :class:`ChatExample`."""
    options = options or RenderOptions(rows=RowCache())
    for task in tasks:
        for instance in task.build(samples, **(build_options or {}).get(task.name, {})):
            messages = list(task.render([instance], options))
            answer = task.format_answer([instance], {instance.instance_id: gold_value(task, instance)})
            yield ChatExample(task.name, instance, [*messages, {"role": "assistant", "content": answer}])


@dataclass(frozen=True)
class SharedPrompt:
    """Instances of one task whose prompts are byte-identical but whose gold answers differ: no model, not even
    one answering with the export's assistant turns, can be right on all of them."""

    task: str
    instance_ids: tuple[str, ...]
    golds: tuple[Any, ...]  # each instance's gold, in the order of ``instance_ids``


def shared_prompts(examples: Iterable[ChatExample]) -> list[SharedPrompt]:
    """The prompts (per task) that two or more instances share while their gold answers differ, in example order.
    A clip's first row has no prior context, so two clips that open with the same line render the same prompt."""
    by_prompt: dict[tuple[str, str], list[ChatExample]] = {}
    for example in examples:
        prompt = json.dumps(example.messages[:-1], ensure_ascii=False, sort_keys=True)
        by_prompt.setdefault((example.task, prompt), []).append(example)
    return [SharedPrompt(task, tuple(e.instance.instance_id for e in group), tuple(e.instance.gold for e in group))
            for (task, _), group in by_prompt.items() if len({e.answer for e in group}) > 1]


def chat_jsonl(examples: Iterable[ChatExample]) -> str:
    """The examples as JSON lines (``{"messages": [...], "metadata": {...}}``), the format OpenAI's, Together's
    and most trainers' fine-tuning endpoints take."""
    return "".join(json.dumps(e.as_json(), ensure_ascii=False) + "\n" for e in examples)


def check_chat_out(out: Path) -> None:
    """``--out`` of a chat export must name a file: absent or regular (:func:`rescue.atomic.check_target`)."""
    out = Path(out)
    if out.is_dir() and not out.is_symlink():
        raise ExportError(f"--out {out}: a folder; --format chat writes one .jsonl file (e.g. --out {out / 'train.jsonl'})")
    check_target(out)


def write_chat(out: Path, examples: Iterable[ChatExample]) -> int:
    """Write the examples to the .jsonl file ``out`` (its folder is created, as ``rescue run`` and ``report`` create
    theirs), whole or not at all; returns how many were written."""
    out = Path(out)
    check_chat_out(out)
    listed = list(examples)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, chat_jsonl(listed))
    return len(listed)
