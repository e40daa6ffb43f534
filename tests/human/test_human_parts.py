"""The human reference's page is made from the parts of the instance's prompt (issue #47 item 4): its instructions,
item and labels are the task's PromptParts, the answer format left out (tests/tasks/test_prompt_parts.py holds that
the message is made of the same parts)."""

from __future__ import annotations

from pathlib import Path

from rescue.data.reading import demo_path
from rescue.human.benchmark import init_benchmark, load_benchmark, page
from rescue.tasks import TASKS, get_task
from rescue.tasks.base import RenderOptions


def test_the_page_is_made_of_the_parts(tmp_path: Path):
    init_benchmark(tmp_path / "b", demo_path(), list(TASKS), 1, sample=2)
    bench = load_benchmark(tmp_path / "b")
    for name in TASKS:
        task, instance = get_task(name), bench.instance(name, 1)
        parts = task.parts([instance], RenderOptions())
        shown = page(bench, name, 1)
        assert shown["instructions"] == parts.separator.join(parts.instructions)
        assert shown["statement"] == parts.instructions[0]
        assert all(section not in shown["instructions"] for section in parts.answer_format)  # no schema for people
        item = parts.item()
        assert shown["context"] == item.get("prior_context", [])
        assert [entry["label"] for entry in shown["labels"]] == instance.labels
        for entry, label in zip(shown["labels"], parts.labels, strict=False):
            assert entry["definition"].startswith(label.definition)
