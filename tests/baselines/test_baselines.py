"""Offline baselines: every answer goes through the task's own parse, and each definition holds."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from rescue.data.models import Row, Sample
from rescue.baselines import BASELINE_NAMES, BaselineError, make_baseline
from rescue.engine.types import ChatRequest, TaskModel, TaskRequest
from rescue.tasks import TASKS
from rescue.tasks.base import Instance, Prediction, RenderOptions, Task
from rescue.tasks.er import TASK as ER


def answer(model: TaskModel, task: Task, batch: list[Instance]) -> dict[str, Prediction]:
    request = ChatRequest(task.render(batch, RenderOptions()), task.max_tokens)
    reply = asyncio.run(model.solve(TaskRequest(request, task, batch)))
    assert reply.status == "ok"
    return task.parse(reply.text, batch)


def answer_all(model: TaskModel, task: Task, instances: list[Instance], batch_size: int = 3) -> dict[str, Prediction]:
    model.prepare(task, instances)
    groups: dict[str, list[Instance]] = {}
    for instance in instances:
        groups.setdefault(instance.sample_id, []).append(instance)
    predictions: dict[str, Prediction] = {}
    for group in groups.values():
        for start in range(0, len(group), batch_size):
            predictions.update(answer(model, task, group[start : start + batch_size]))
    return predictions


def test_names_and_errors():
    assert set(BASELINE_NAMES) == {"baseline/majority", "baseline/uniform", "baseline/persist", "baseline/nearest",
                                   "baseline/supervised"}
    with pytest.raises(BaselineError, match="unknown baseline"):
        make_baseline("baseline/oracle")
    persist = make_baseline("baseline/persist")
    assert persist.applies_to("rpp") and not persist.applies_to("itp")
    with pytest.raises(BaselineError, match="does not apply"):
        persist.prepare(TASKS["itp"], [])
    with pytest.raises(BaselineError, match="prepare"):
        asyncio.run(make_baseline("baseline/majority").solve(TaskRequest(ChatRequest([], 10), ER, [])))


# The supervised baseline trains a classifier per task and fold: slow.
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name == "baseline/supervised" else name
                                  for name in BASELINE_NAMES])
def test_every_applicable_pair_answers_through_parse(name, demo_samples):
    for task in TASKS.values():
        model = make_baseline(name, seed=3)
        assert isinstance(model, TaskModel)
        if not model.applies_to(task.name):
            continue
        instances = task.build(demo_samples)
        predictions = answer_all(model, task, instances)
        assert set(predictions) == {i.instance_id for i in instances}
        failed = [p for p in predictions.values() if p.status != "ok"]
        assert not failed, (name, task.name, failed[:1])


def test_majority_follows_gold_frequencies(demo_samples):
    for task_name in ("itp", "rpp", "ssp"):
        task = TASKS[task_name]
        instances = task.build(demo_samples)
        predictions = answer_all(make_baseline("baseline/majority"), task, instances)
        for instance in instances:
            counts = Counter(i.gold for i in instances if i.scenario == instance.scenario)
            value = predictions[instance.instance_id].value
            top = value if task_name == "itp" else value[0]
            assert counts[top] == max(counts[label] for label in instance.labels), (task_name, instance.instance_id)
            if task_name != "itp":
                frequencies = [counts[label] for label in value]
                assert frequencies == sorted(frequencies, reverse=True)


def test_majority_er_is_one_typical_phrase_and_the_median_intensity(demo_samples):
    instances = ER.build(demo_samples)
    predictions = answer_all(make_baseline("baseline/majority"), ER, instances)
    for scenario in {i.scenario for i in instances}:
        group = [i for i in instances if i.scenario == scenario]
        values = {
            (predictions[i.instance_id].value["emotion"], predictions[i.instance_id].value["intensity"]) for i in group
        }
        assert len(values) == 1
        [(phrase, intensity)] = values
        assert phrase in {i.gold["emotion"] for i in group}
        intensities = sorted(i.gold["intensity"] for i in group)
        assert intensity == intensities[(len(intensities) - 1) // 2]


def test_uniform_is_seeded_and_independent_of_batching(demo_samples):
    task = TASKS["ssp"]
    instances = task.build(demo_samples)
    one = answer_all(make_baseline("baseline/uniform", seed=7), task, instances, batch_size=1)
    many = answer_all(make_baseline("baseline/uniform", seed=7), task, list(reversed(instances)), batch_size=5)
    other = answer_all(make_baseline("baseline/uniform", seed=8), task, instances)
    assert {k: p.value for k, p in one.items()} == {k: p.value for k, p in many.items()}
    assert {k: p.value for k, p in one.items()} != {k: p.value for k, p in other.items()}
    for instance in instances:
        value = one[instance.instance_id].value
        assert len(value) == min(3, len(instance.labels)) and set(value) <= set(instance.labels)


def test_uniform_generative_phrases_come_from_other_samples(demo_samples):
    instances = ER.build(demo_samples)
    predictions = answer_all(make_baseline("baseline/uniform"), ER, instances)
    for instance in instances:
        own = {i.gold["emotion"] for i in instances if i.sample_id == instance.sample_id}
        assert predictions[instance.instance_id].value["emotion"] not in own
        assert 0 <= predictions[instance.instance_id].value["intensity"] <= 10


def test_persist_carries_the_last_gold_pattern_forward(demo_samples):
    task = TASKS["rpp"]
    instances = task.build(demo_samples)
    predictions = answer_all(make_baseline("baseline/persist"), task, instances)
    majority = answer_all(make_baseline("baseline/majority"), task, instances)
    carried = 0
    for instance in instances:
        earlier = [
            i
            for i in instances
            if i.sample_id == instance.sample_id and i.row_index < instance.row_index and i.gold in i.labels
        ]
        value = predictions[instance.instance_id].value
        if earlier:
            assert value[0] == max(earlier, key=lambda i: i.row_index).gold
            carried += 1
        else:
            assert value == majority[instance.instance_id].value
    assert carried > 0


def _sample(sample_id: str, rows: list[tuple[str, str, str, int]]) -> Sample:
    return Sample(
        sample_id=sample_id,
        scenario="couple",
        participants=["Ann", "Ben"],
        rows=[
            Row(
                row_index=n,
                start_time=float(n),
                end_time=n + 0.5,
                primary_speaker=speaker,
                target=["Ben"],
                dialogue_cleaned=text,
                internal_emotion=[{"person": speaker, "emotion_description": feeling, "intensity": level}],
                viewpoints_attitudes=[{"source": speaker, "target": "Ben", "viewpoint": f"view: {feeling}"}],
            )
            for n, (speaker, text, feeling, level) in enumerate(rows, start=1)
        ],
    )


def test_nearest_never_retrieves_from_the_same_sample():
    words = "you never listen to me when I talk about the money we spend every month"
    first = _sample(
        "a/one",
        [("Ann", "hello there how are you doing today my friend", "calm", 1)] * 3
        + [("Ann", words, "own gold: unheard", 8)],
    )
    second = _sample(
        "b/two",
        [
            ("Ann", "the weather was lovely at the beach this weekend", "content", 2),
            ("Ann", words + " again", "other gold: resentful", 6),
        ],
    )
    instances = [i for i in ER.build([first, second]) if i.sample_id == "a/one"]
    assert instances[-1].gold["emotion"] == "own gold: unheard"
    model = make_baseline("baseline/nearest")
    model.prepare(ER, ER.build([first, second]))
    value = answer(model, ER, [instances[-1]])[instances[-1].instance_id].value
    assert value == {"emotion": "other gold: resentful", "intensity": 6}
    with pytest.raises(BaselineError, match="at least two samples"):
        make_baseline("baseline/nearest").prepare(ER, ER.build([first]))


def test_nearest_vp_readdresses_retrieved_names(demo_samples):
    task = TASKS["vp"]
    instances = task.build(demo_samples)
    predictions = answer_all(make_baseline("baseline/nearest"), task, instances)
    for instance in instances:
        allowed = set(instance.extra["participants"]) | {instance.sample.group_label}
        for view in predictions[instance.instance_id].value:
            assert view["source"] == instance.extra["speaker"]
            assert view["target"] in allowed


@pytest.mark.slow
def test_baselines_on_real_data(real_samples):
    """The honest baselines answer every real instance; persist beats majority on RPP top-1."""
    rpp = TASKS["rpp"]
    instances = rpp.build(real_samples)
    hits = {}
    for name in ("baseline/majority", "baseline/persist"):
        predictions = answer_all(make_baseline(name), rpp, instances)
        hits[name] = sum(predictions[i.instance_id].value[0] == i.gold for i in instances)
    assert hits["baseline/persist"] > hits["baseline/majority"]
    for task in (TASKS["er"], TASKS["vp"]):
        predictions = answer_all(make_baseline("baseline/nearest"), task, task.build(real_samples))
        assert all(p.status == "ok" for p in predictions.values())


def test_a_run_on_one_sample_skips_the_baselines_that_need_two(tmp_path):
    # The README's recipe on a one-segment export: `rescue run --data verified.jsonl` (issue #20, item 7).
    import json

    from typer.testing import CliRunner

    from rescue.cli import app
    from rescue.data.reading import demo_path

    one = tmp_path / "verified.jsonl"
    one.write_text(demo_path().read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "--data", str(one), "--out", str(tmp_path / "run"), "--quiet",
                                      "--no-bertscore"])
    assert result.exit_code == 0, result.output
    assert "baseline/uniform skips ER: it draws ER phrases from other samples and the data hold one sample" in result.output
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert "itp" in json.dumps(results["models"]["baseline/uniform"]) and "er" not in results["models"]["baseline/uniform"]


def test_nearest_retrieves_in_one_pass_what_one_query_at_a_time_finds(demo_samples):
    """All queries at once, a sample's own turns masked by code (issue 34 item 4): the same turn as comparing one
    query with the pool and keeping the best of the other samples' turns (ties: the earliest)."""
    from sklearn.metrics.pairwise import linear_kernel

    from rescue.baselines._baselines import _retrieve

    model = make_baseline("baseline/nearest")
    instances = ER.build(demo_samples)
    model.prepare(ER, instances)
    pool = model._states["er"].extra["pool"]
    found = _retrieve(pool, instances)
    for instance, best in zip(instances, found):
        query = pool.vectorizer.transform([instance.sample.row(instance.row_index).dialogue_cleaned])
        similarity = linear_kernel(query, pool.matrix)[0]
        allowed = [n for n, sample_id in enumerate(pool.sample_ids) if sample_id != instance.sample_id]
        assert best == max(allowed, key=lambda n: (similarity[n], -n))
    assert _retrieve(pool, [i for i in instances if i.sample_id == pool.sample_ids[0]][:1]) != [-1]


def test_uniform_draws_what_choice_over_the_other_samples_phrases_draws(demo_samples):
    import random

    model = make_baseline("baseline/uniform", seed=3)
    instances = ER.build(demo_samples)
    model.prepare(ER, instances)
    state = model._states["er"]
    for instance in instances:
        pool = [p for sample_id, p in state.extra["phrases"][instance.scenario] if sample_id != instance.sample_id]
        pool = pool or [p for group in state.extra["phrases"].values() for sample_id, p in group
                        if sample_id != instance.sample_id]
        assert model._phrase(state, instance, random.Random(7)) == random.Random(7).choice(pool)


def test_the_most_central_phrase_is_found_without_the_all_pairs_matrix(demo_samples):
    """Issue 34: centrality as the cosine with the sum of all phrases picks what summing the all-pairs cosine
    matrix picked."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import linear_kernel

    from rescue.baselines._baselines import _typical_phrase

    phrases = [str(i.gold["emotion"]) for i in ER.build(demo_samples)]
    phrases = list(dict.fromkeys(phrases))  # all distinct: every phrase tied on frequency
    matrix = TfidfVectorizer().fit_transform(phrases)
    assert _typical_phrase(phrases) == phrases[int(linear_kernel(matrix, matrix).sum(axis=1).argmax())]
