"""A task's prompt as data (issue #47 item 4): every task exposes the parts of what it renders (instructions, answer
format, items with their context rows, current row and given values, labels with definitions); its message is made
from exactly those parts (the prompt pins, tests/pins, hold the bytes), and the human reference's page is made from
the same parts, not by cutting the message's text apart."""

from __future__ import annotations

import pytest

from rescue.data.taxonomy import label_block
from rescue.tasks import TASKS, get_task
from rescue.tasks.base import RenderOptions
from rescue.tasks.prompts import PromptParts, ShowsParts


@pytest.mark.parametrize("name", list(TASKS))
@pytest.mark.parametrize("mode", ["dialogue", "audiovisual"])
def test_the_message_is_made_of_the_parts_every_task_exposes(name, mode, demo_samples):
    task = get_task(name)
    assert isinstance(task, ShowsParts)
    instances = task.build(demo_samples)
    by_sample: dict[str, list] = {}
    for instance in instances:
        by_sample.setdefault(instance.sample_id, []).append(instance)
    for batch in [found[:3] for found in by_sample.values()] + [[instances[0]]]:
        parts = task.parts(batch, RenderOptions(mode=mode))
        assert isinstance(parts, PromptParts) and parts.instructions and parts.answer_format
        assert task.render(batch, RenderOptions(mode=mode)) == parts.message()
        assert len(parts.items) == len(batch)
        for i, instance in enumerate(batch):
            item = parts.item(i)
            assert isinstance(item, dict) and instance.instance_id.split("#", 1)[1] in item.values()
            assert all(row["row_index"] < instance.row_index + 1 for row in item.get("prior_context", []))
        message = parts.message()[0]["content"]
        assert all(section in message for section in (*parts.instructions, *parts.answer_format))
        if task.declaration.answer in ("label", "ranking"):
            # The labels as data are the closed set, and the label block the prompt shows is made of them.
            assert [label.name for label in parts.labels] == batch[0].labels
            assert label_block(parts.labels) in message
        else:
            assert parts.labels == ()
