"""No batch shows one item's hidden content to another item (issue #11, "Leak-free batching").

An ITP item hides the row after its decision row (its speaker is the answer); an RPP, STP or SSP item
hides its own target row (text, targets and strategy give the gold away). The scan below reads every
prompt the runner would send on the real samples and looks, inside every *other* item of the batch,
for the hidden row as a rendered record or for its dialogue text. It does not reuse the batching code's
notion of which rows an item shows, so it checks that code rather than restating it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from rescue.tasks import TASKS
from rescue.tasks.base import Instance, RenderOptions, Task
from rescue.tasks.batching import group_batches, plan_batches
from rescue.tasks.prompts import resolve_context_size as context_size

HIDING = [name for name, task in TASKS.items() if task.declaration.hidden != "none"]


def _items(task: Task, batch: list[Instance], options: RenderOptions) -> list[dict[str, Any]]:
    text = task.render(batch, options)[-1]["content"]
    for marker in ("\n\nItems:\n", "\nCheckpoints: "):
        if marker in text:
            return json.loads(text.rsplit(marker, 1)[1])
    raise AssertionError("no item list in the prompt")


def _row_records(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        found = [value] if "row_index" in value and "dialogue_cleaned" in value else []
        return found + [r for v in value.values() for r in _row_records(v)]
    if isinstance(value, list):
        return [r for v in value for r in _row_records(v)]
    return []


def _hidden_row(task: Task, instance: Instance) -> int:
    return instance.row_index + 1 if task.declaration.hidden == "next_row" else instance.row_index


def _gold_text_shown(task: Task, batch: list[Instance], items: list[dict[str, Any]]) -> set[str]:
    """A task that hides no row (ER, VP): its gold lives in fields no row record renders. Where the gold is text
    (an emotion, viewpoints), no item's gold phrase may show up anywhere in the batch's items; a closed-set gold
    (a label, a ranking) is words every prompt of the task holds, so there is no phrase to look for."""
    if task.declaration.answer in ("label", "ranking"):
        return set()
    scorer = task.declaration.bertscore
    assert scorer is not None, f"{task.name}: a free-text answer declares the phrases BERTScore compares"
    text = json.dumps(items, ensure_ascii=False)
    found = set()
    for instance in batch:
        phrases = [p for p in scorer.texts(instance.gold) if len(p.split()) >= 4]
        if any(json.dumps(p, ensure_ascii=False)[1:-1] in text for p in phrases):
            found.add(instance.instance_id)
    return found


def leaking_instances(task: Task, batches: list[list[Instance]], options: RenderOptions) -> set[str]:
    """Instances whose hidden row (as a record, or its dialogue text) appears in another item of their batch."""
    leaking: set[str] = set()
    for batch in batches:
        if len(batch) < 2:
            continue
        items = _items(task, batch, options)
        assert len(items) == len(batch)
        if task.declaration.hidden == "none":
            leaking |= _gold_text_shown(task, batch, items)
            continue
        for n, instance in enumerate(batch):
            sample = instance.sample
            hidden = _hidden_row(task, instance)
            if hidden > len(sample.rows):
                continue
            text = sample.row(hidden).dialogue_cleaned.strip()
            for m, item in enumerate(items):
                if m == n:
                    continue
                shown = {r["row_index"] for r in _row_records(item)}
                # Long enough to be that row's own words, not a common "Yeah."; JSON-escaped as the prompt has it.
                words = json.dumps(text, ensure_ascii=False)[1:-1] if len(text.split()) >= 6 else None
                if hidden in shown or (words and words in json.dumps(item, ensure_ascii=False)):
                    leaking.add(instance.instance_id)
    return leaking


@pytest.mark.parametrize("name", list(TASKS))
@pytest.mark.parametrize("k", [None, -1, 0, 3])
def test_no_batch_of_any_task_shows_another_items_hidden_row(real_samples, name, k):
    task = TASKS[name]
    options = RenderOptions(context_size=k)
    instances = task.build(real_samples)
    for size in sorted({int(task.default_batch_size), 4}):
        plan = plan_batches(task, instances, size, context_size(k, int(task.default_context_size)))
        assert sorted(i.instance_id for b in plan.batches for i in b) == sorted(i.instance_id for i in instances)
        assert all(len({i.sample_id for i in b}) == 1 for b in plan.batches)
        assert not leaking_instances(task, plan.batches, options), (name, k, size)
        assert plan.grouped == len(group_batches(instances, size))
        assert len(plan.batches) >= plan.grouped and (plan.split > 0) == (len(plan.batches) > plan.grouped)


def test_the_authors_grouping_leaks_as_the_audit_counted(real_samples):
    """The audit's counts (issue #11) at the authors' batch sizes and context sizes, found by the scan."""
    expected = {"itp": (351, 552), "rpp": (440, 676), "stp": (184, 458), "ssp": (184, 458)}
    found = {}
    for name in HIDING:
        task = TASKS[name]
        instances = task.build(real_samples)
        batches = group_batches(instances, int(task.default_batch_size))
        found[name] = (len(leaking_instances(task, batches, RenderOptions())), len(instances))
    assert found == expected


def test_splits_are_counted_and_batches_of_one_are_untouched(real_samples):
    task = TASKS["rpp"]
    instances = task.build(real_samples)
    single = plan_batches(task, instances, 1, -1)
    assert single.split == 0 and single.batches == [[i] for i in instances]
    authors = plan_batches(task, instances, 3, -1)
    # With every earlier row in context, two RPP rows of one sample can never share a request.
    assert authors.batches == [[i] for i in instances] and authors.split == authors.grouped - sum(
        1 for b in group_batches(instances, 3) if len(b) == 1)
    assert authors.summary()["split_batches"] == authors.split


def test_results_record_the_batching_and_its_splits(tmp_path, real_data_path):
    from rescue.data.loading import load_samples
    from rescue.engine.runner import RunConfig, run

    out = tmp_path / "run"
    run(RunConfig(out=str(out), models=["baseline/majority"], tasks=["itp", "stp"], data=str(real_data_path),
                  batch_size="authors", limit_samples=4, sample_choice="first", bertscore=False, quiet=True))
    batching = json.loads((out / "results.json").read_text())["batching"]
    assert set(batching) == {"itp", "stp"}
    for name, block in batching.items():
        instances = TASKS[name].build(load_samples(real_data_path)[:4])
        plan = plan_batches(TASKS[name], instances, int(TASKS[name].default_batch_size),
                            int(TASKS[name].default_context_size))
        assert block == plan.summary() and block["split_batches"] > 0
