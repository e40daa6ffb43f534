"""What the tasks hand to other layers holds exactly the keys of its type: every task's rendered messages are
``rescue.data.shapes.ChatMessage`` (text content), ER's gold and parsed values ``rescue.tasks.er.Emotion`` and
VP's ``rescue.tasks.vp.Viewpoint`` (issue #36 item 4); a rendered row is ``rescue.tasks.render.RenderedRow`` in
every mode, each task's prompt items are its item TypedDict and a ranking task's given fields ``GivenFields``
(issue #47 item 5). Keys are read from the types, never written here."""

from __future__ import annotations

from typing import get_type_hints

import pytest

from rescue.data.choices import MODES
from rescue.data.shapes import ChatMessage
from rescue.tasks import TASKS, get_task
from rescue.tasks.base import RenderOptions
from rescue.tasks.er import Emotion
from rescue.tasks.generative import CheckpointItem
from rescue.tasks.itp import InterventionTimingTask, ItpItem
from rescue.tasks.ranking import GivenFields, RankingItem, RankingTask
from rescue.tasks.render import (
    RenderedBackground,
    RenderedCue,
    RenderedInteraction,
    RenderedRow,
    RowCache,
    render_row,
)
from rescue.tasks.vp import Viewpoint


def _keys(kind: type) -> tuple[set[str], set[str]]:
    """The required keys and all keys of a TypedDict (read through get_type_hints: under postponed annotations
    Python 3.11 counts NotRequired as required in __required_keys__; a total=False class's keys it gets right)."""
    hints = get_type_hints(kind, include_extras=True)
    optional = {k for k, v in hints.items() if getattr(v, "__origin__", None) is not None
                and "NotRequired" in repr(v)} | set(kind.__optional_keys__)
    return set(hints) - optional, set(hints)


def _holds(value: dict, kind: type) -> None:
    required, everything = _keys(kind)
    assert required <= set(value) <= everything, (sorted(value), kind.__name__)


@pytest.mark.parametrize("name", list(TASKS))
def test_every_task_renders_chat_messages(name, demo_samples):
    task = get_task(name)
    instances = task.build(demo_samples)
    assert instances, name
    messages = task.render(instances[:1], RenderOptions(rows=RowCache()))
    assert messages
    for message in messages:
        _holds(message, ChatMessage)
        assert isinstance(message["role"], str) and isinstance(message["content"], str)


def test_er_gold_and_answer_are_emotions(demo_samples):
    er = get_task("er")
    instances = er.build(demo_samples)
    for instance in instances:
        _holds(instance.gold, Emotion)
    batch = instances[:2]
    answer = er.format_answer(batch, {i.instance_id: i.gold for i in batch})
    for prediction in er.parse(answer, batch).values():
        _holds(prediction.value, Emotion)


def test_vp_gold_and_answer_are_viewpoints(demo_samples):
    vp = get_task("vp")
    instances = vp.build(demo_samples)
    for instance in instances:
        for view in instance.gold:
            _holds(view, Viewpoint)
    batch = instances[:2]
    answer = vp.format_answer(batch, {i.instance_id: i.gold for i in batch})
    for prediction in vp.parse(answer, batch).values():
        for view in prediction.value:
            _holds(view, Viewpoint)


_CUES = {"background_dialogue": RenderedBackground, "body_posture": RenderedCue, "facial_expressions": RenderedCue,
         "self_directed_behavior": RenderedCue, "interaction_behavior": RenderedInteraction}


@pytest.mark.parametrize("mode", MODES)
def test_a_rendered_row_is_a_rendered_row_in_every_mode(mode, demo_samples):
    shown: set[str] = set()
    for sample in demo_samples:
        for row in sample.rows:
            for participants in (None, list(sample.participants)):
                record = render_row(row, mode, participants=participants)
                _holds(record, RenderedRow)
                for key, kind in _CUES.items():
                    for entry in record.get(key, []):
                        _holds(entry, kind)
                        shown.add(key)
    assert "background_dialogue" in shown  # the demo data reaches the nested shapes


@pytest.mark.parametrize("name", list(TASKS))
def test_every_task_s_items_are_its_item_shape(name, demo_samples):
    task = get_task(name)
    kind = (ItpItem if isinstance(task, InterventionTimingTask) else RankingItem if isinstance(task, RankingTask)
            else CheckpointItem)
    instances = task.build(demo_samples)
    batch = [i for i in instances if i.sample is instances[0].sample][:3]
    parts = task.parts(batch, RenderOptions(rows=RowCache()))
    assert len(parts.items) == len(batch)
    for index, item in enumerate(parts.items):
        _holds(dict(item), kind)
        for row in parts.context(index):
            _holds(row, RenderedRow)
        current = parts.current(index)
        assert (current is None) == (kind is RankingItem)
        if current is not None:
            _holds(current, RenderedRow)
    if isinstance(task, RankingTask):
        for instance in batch:
            _holds(task.extra_fields(instance), GivenFields)
