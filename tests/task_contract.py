"""The contract every registered task keeps, as one check (not a test module): the registry tests run it on
every task, and the new-task test on a task written in a temporary folder. Paper counts are optional."""

from __future__ import annotations

from typing import get_args

from rescue.data.models import Sample
from rescue.data.taxonomy import label_rules
from rescue.tasks import scoped_aggregates
from rescue.tasks.base import Instance, RenderOptions, Task, gold_value, make_record
from rescue.tasks.batching import plan_batches
from rescue.tasks.prompts import PromptParts, resolve_context_size
from rescue.tasks.spec import AnswerKind


def check_declaration(name: str, task: Task) -> None:
    """Every fact a task declares is there and consistent."""
    declared = task.declaration
    assert isinstance(task, Task)
    assert declared.name == task.name == name and declared.title == task.title and task.title.strip()
    assert declared.default_context_size >= -1 and declared.default_batch_size >= 0 and declared.max_tokens > 0
    assert declared.options.model_config.get("extra") == "forbid", name
    assert declared.metrics and any(m.headline for m in declared.metrics), name
    assert declared.outcome in ("right_wrong", "graded") and declared.answer in get_args(AnswerKind)
    if declared.outcome == "right_wrong":
        assert any(m.right_wrong for m in declared.metrics), name
    if declared.answer in ("label", "ranking"):
        assert declared.answer_key, f"{name}: a closed-set task names its answer key"
    assert not declared.paper_counts or set(declared.paper_counts) == {"couple", "family"}, name


def _batches(task: Task, instances: list[Instance]) -> list[list[Instance]]:
    k = resolve_context_size(None, task.default_context_size)
    return plan_batches(task, instances, task.default_batch_size, k).batches


def check_task(name: str, task: Task, samples: list[Sample]) -> None:
    """Build, render, parse and score ``task`` on ``samples`` the way ``rescue run`` does."""
    check_declaration(name, task)
    instances = task.build(samples)
    assert instances, f"{name}: no instance on these samples"
    assert [i.instance_id for i in task.build(samples)] == [i.instance_id for i in instances]  # deterministic
    assert len({i.instance_id for i in instances}) == len(instances)
    for instance in instances:
        assert instance.task == name and instance.instance_id.startswith(f"{instance.sample_id}#")
    batches = _batches(task, instances)
    assert sorted(i.instance_id for b in batches for i in b) == sorted(i.instance_id for i in instances)
    perfect, failed = [], []
    for batch in batches:
        messages = task.render(batch, RenderOptions())
        assert [m["role"] for m in messages] == ["user"] and isinstance(messages[0]["content"], str)
        assert task.render(batch, RenderOptions()) == messages  # the same bytes every time
        check_parts(name, task, batch, task.parts(batch, RenderOptions()), messages[0]["content"])
        answer = task.format_answer(batch, {i.instance_id: gold_value(task, i) for i in batch})
        parsed = task.parse(answer, batch)
        assert [parsed[i.instance_id].status for i in batch] == ["ok"] * len(batch), answer
        perfect += [make_record(task, "m", i, parsed[i.instance_id]) for i in batch]
        unreadable = task.parse("no answer here", batch)
        assert {p.status for p in unreadable.values()} == {"parse_error"}
        failed += [make_record(task, "m", i, unreadable[i.instance_id]) for i in batch]
    right_wrong = [m.key for m in task.declaration.metrics if m.right_wrong]
    best, worst = task.aggregate(perfect), task.aggregate(failed)
    assert best["instances"] == worst["instances"] == worst["failures"] == len(instances) and best["failures"] == 0
    for key in right_wrong:  # a perfect answer is right, a failure is wrong
        assert (best[key], worst[key]) == (1.0, 0.0), key
    for key, floor in task.declaration.score_floors.items():  # a failure scores the floor
        if key in worst:
            assert worst[key] == floor, key
    scopes = scoped_aggregates(task, perfect)
    assert scopes["all"] == best and set(scopes["samples"]) == {i.sample_id for i in instances}
    assert task.aggregate([])["instances"] == 0


def check_parts(name: str, task: Task, batch: list[Instance], parts: PromptParts, prompt: str) -> None:
    """The parts of a request are what its prompt is made of and say what each piece is (what a person's page
    shows): the prompt is ``parts.message()``; one item per instance, in order, with only earlier rows as context
    and its own row exactly where the task declares it shows one; each label of the closed set with the
    definition and rules the prompt states; every given value in the prompt."""
    assert parts.message() == [{"role": "user", "content": prompt}], name
    assert parts.instructions_text and parts.instructions_text in prompt, name
    assert len(parts.items) == len(batch), name
    for i, instance in enumerate(batch):
        assert parts.item(i)[parts.id_key] == instance.instance_id.split("#", 1)[1], name
        assert all(row["row_index"] < instance.row_index for row in parts.context(i)), name
        current = parts.current(i)
        assert (current is not None) == task.declaration.shows_row, f"{name}: its own row vs shows_row"
        assert current is None or current["row_index"] == instance.row_index, name
        for key, value in parts.given(i).items():
            assert f'"{key}":' in prompt and str(value) in prompt, (name, key)
    if batch[0].labels:  # a closed set: every label with its definition, as the prompt states it
        assert [label.name for label in parts.labels] == batch[0].labels, name
        for label in parts.labels:
            assert label.definition and f"- {label.name}: {label.definition}" in parts.instructions_text, label
            assert all(f"\n  {rule}" in parts.instructions_text for rule in label_rules(label)), label
