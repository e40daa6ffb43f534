"""baseline/supervised (issue 27 item 2): trained out of fold by session group, answered through parse and scoring."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rescue.data.groups import infer_groups
from rescue.baselines import BASELINE_NAMES, BaselineError, make_baseline
from rescue.baselines._supervised import encode, out_of_fold_rankings
from rescue.tasks import get_task
from rescue.tasks.base import RenderOptions
from _cli import invoke_main


@pytest.mark.slow
@pytest.mark.parametrize("task_name", ["itp", "rpp", "stp", "ssp"])
def test_every_instance_is_answered_by_a_model_that_never_saw_its_group(demo_samples, task_name):
    task = get_task(task_name)
    instances = task.build(demo_samples)
    rankings, scheme = out_of_fold_rankings(task, instances, RenderOptions())
    groups = infer_groups(demo_samples)
    assert scheme.groups == len({groups.group_of(s.sample_id) for s in demo_samples}) == scheme.folds
    folds_of_group: dict[str, set[int]] = {}
    for instance in instances:
        folds_of_group.setdefault(groups.group_of(instance.sample_id), set()).add(scheme.fold_of[instance.instance_id])
    assert all(len(folds) == 1 for folds in folds_of_group.values())  # a group is answered in one fold only
    for instance in instances:  # a full ranking of the instance's own closed set
        assert sorted(rankings[instance.instance_id]) == sorted(instance.labels)


def test_a_label_only_one_group_holds_is_never_ranked_first_for_that_group(demo_samples):
    """Out of fold for real: relabel one group's SSP gold to a label no other group uses; a model that had seen
    the group would learn it, a model trained on the others cannot rank it first."""
    task = get_task("ssp")
    instances = task.build(demo_samples)
    groups = infer_groups(demo_samples)
    target = groups.group_of(instances[0].sample_id)
    private, other = instances[0].labels[0], instances[0].labels[1]
    for instance in instances:
        if groups.group_of(instance.sample_id) == target:
            instance.gold = private
        elif instance.gold == private:
            instance.gold = other
    rankings, _ = out_of_fold_rankings(task, instances, RenderOptions())
    mine = [i for i in instances if groups.group_of(i.sample_id) == target]
    assert mine and all(rankings[i.instance_id][0] != private for i in mine)


def test_names_are_learnt_as_roles_not_as_names(demo_samples):
    task = get_task("stp")
    instance = task.build(demo_samples)[5]
    encoded = encode(instance, task.render([instance], RenderOptions()))
    people = [n for n in instance.labels if n in instance.sample.participants]
    assert {encoded.label(n) for n in people} <= {"person1", "person2", "person3", "person4", "personsilent"}
    assert instance.sample.group_label == encoded.label(instance.sample.group_label)
    assert not any(name in encoded.document.split() for name in people if encoded.label(name) != name
                   and name not in " ".join(instance.sample.row(r).dialogue_cleaned for r in range(instance.row_index)))


def test_one_group_is_not_enough(demo_samples):
    task = get_task("itp")
    one = [s for s in demo_samples if s.scenario == "family"]
    with pytest.raises(BaselineError, match="at least two groups"):
        make_baseline("baseline/supervised").prepare(task, task.build(one))


@pytest.mark.slow
def test_a_run_scores_it_through_the_normal_path_and_records_its_folds(tmp_path):
    assert "baseline/supervised" in BASELINE_NAMES
    result = invoke_main(["run", "--model", "baseline/supervised", "--tasks", "itp,rpp,stp,ssp,er", "--no-bertscore",
                          "--quiet", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    model = results["models"]["baseline/supervised"]
    assert set(model) >= {"itp", "rpp", "stp", "ssp"} and "er" not in model  # closed-answer tasks only
    assert all(model[t]["all"]["failures"] == 0 and model[t]["all"]["instances"] > 0 for t in ("itp", "rpp", "stp", "ssp"))
    described = results["config"]["used"]["baselines"]["baseline/supervised"]
    assert described["itp"]["folds"] == 4 and "TF-IDF" in described["itp"]["features"]
    assert "grouping" in described["rpp"] and described["rpp"]["mode"] == "dialogue"
    records = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert {r["status"] for r in records} == {"ok"}


def _columns_reference(task, instances):
    """The fit as it was before issue 34: a TfidfVectorizer and a LogisticRegression on the n-gram columns per fold."""
    from collections import Counter

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    groups = infer_groups({i.sample_id: i.sample for i in instances}.values())
    encoded = [encode(i, task.render([i], RenderOptions())) for i in instances]
    labels = [e.label(i.gold if isinstance(i.gold, str) else i.gold[0]) for i, e in zip(instances, encoded)]
    rankings = {}
    folds = GroupKFold(n_splits=min(5, len({groups.group_of(i.sample_id) for i in instances})))
    for train, test in folds.split(instances, groups=[groups.group_of(i.sample_id) for i in instances]):
        counts = Counter(labels[n] for n in train)
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2)
        model = LogisticRegression(C=1.0, max_iter=2000).fit(
            vectorizer.fit_transform([encoded[n].document for n in train]), [labels[n] for n in train])
        probabilities = model.predict_proba(vectorizer.transform([encoded[n].document for n in test]))
        for row, n in enumerate(test):
            score = dict(zip(model.classes_, probabilities[row]))
            order = {label: k for k, label in enumerate(instances[n].labels)}
            rankings[instances[n].instance_id] = sorted(instances[n].labels, key=lambda label: (
                -score.get(encoded[n].label(label), -1.0), -counts[encoded[n].label(label)], order[label]))
    return rankings


@pytest.mark.slow
@pytest.mark.parametrize("task_name", ["itp", "rpp", "stp", "ssp"])
def test_the_answers_are_those_of_the_fit_on_the_columns(demo_samples, task_name):
    """Fitted in the span of each fold's training rows, with features counted once per run, the answers (the top 3
    a run sends) are the ones the vectorizer and a fit on the n-gram columns give."""
    task = get_task(task_name)
    instances = task.build(demo_samples)
    rankings, _ = out_of_fold_rankings(task, instances, RenderOptions())
    reference = _columns_reference(task, instances)
    assert {k: v[:3] for k, v in rankings.items()} == {k: v[:3] for k, v in reference.items()}


def test_prepare_reports_each_fold_as_it_fits(demo_samples):
    task = get_task("ssp")
    heard: list[tuple[int, int]] = []
    make_baseline("baseline/supervised").prepare(task, task.build(demo_samples), progress=lambda d, n: heard.append((d, n)))
    folds = heard[0][1]
    assert folds >= 2 and heard == [(step, folds) for fold in range(folds) for step in (fold, fold + 1)]


@pytest.mark.slow
def test_a_run_of_it_imports_no_matplotlib(tmp_path):
    """Its features, folds and fit are scikit-learn's (issue 47 item 3); matplotlib is paid only by the report
    (issue 34 item 5)."""
    code = ("import json, sys\n"
            "from rescue.cli import main\n"
            "try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\n"
            "print(json.dumps({'code': code, 'loaded': [m for m in ('sklearn', 'matplotlib') if m in sys.modules]}))\n")
    done = subprocess.run([sys.executable, "-c", code, "run", "--model", "baseline/supervised", "--tasks", "itp,stp",
                           "--no-bertscore", "--quiet", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"code": 0, "loaded": ["sklearn"]}, done.stderr
