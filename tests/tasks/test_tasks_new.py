"""A seventh task is one new file: a task module written here, in a temporary folder, registers itself and
keeps the contract every task keeps, and `rescue run` evaluates it with no edit anywhere else. It comes in
through the decorator (imported in this process) and through an entry point of the ``rescue.tasks`` group
(a plugin distribution on the path of a fresh process)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest
from task_contract import check_task
from typer.testing import CliRunner

from rescue.cli import app
from rescue.tasks import TASK_NAMES, TASKS, get_task, unregister

# A task not in the paper with an existing answer shape (one label): is a client turn a question?
# It uses only the shared modules of rescue.tasks: no private name of another task.
TASK_MODULE = textwrap.dedent('''
    """QSP, question spotting: does the current client turn ask a question? (a task not in the paper)"""

    from __future__ import annotations

    from typing import Any, ClassVar

    from rescue.data.models import Sample
    from rescue.tasks import prompts
    from rescue.tasks.base import Instance, PredictionRecord, lenient_counts
    from rescue.tasks.closed import ClosedTask
    from rescue.tasks.parsing import local_id, normalize_label
    from rescue.tasks.registry import register
    from rescue.tasks.render import EncodedRows
    from rescue.tasks.spec import Declaration, Metric, NoOptions, validate_options

    LABELS = ["yes", "no"]


    @register
    class QuestionSpotting(ClosedTask):
        declaration: ClassVar[Declaration] = Declaration(
            name="qsp", title="Question spotting", default_context_size=2, default_batch_size=4, max_tokens=400,
            answer_key="is_question", answer_aliases=("answer",), synonyms={"question": "yes"},
            metrics=(Metric("accuracy", "Acc", headline=True, right_wrong=True),),
            outcome="right_wrong", answer="label", options=NoOptions, label_order=lambda scenario: list(LABELS),
            shows_row=True, hidden="none",
        )

        def build(self, samples: list[Sample], **options: Any) -> list[Instance]:
            validate_options(self.name, NoOptions, options)
            return [Instance.at_row(self.name, sample, row.row_index,
                                    "yes" if row.dialogue_cleaned.rstrip().endswith("?") else "no", labels=LABELS)
                    for sample in samples for row in sample.rows if not row.is_therapist]

        def item(self, instance: Instance, rows: EncodedRows, k: int) -> dict[str, Any]:
            return {"id": local_id(instance), "prior_context": rows.context(instance.row_index, k),
                    "turn": rows.row(instance.row_index)}

        def sections(self, sample: Sample, batch: list[Instance], k: int, mode: str) -> list[str]:
            return ["Task: for each item, does the turn ask a question? Answer yes or no.",
                    prompts.participants_line(sample), prompts.context_sentence(k, anchor="the turn"),
                    prompts.mode_line(mode),
                    prompts.schema_block([{"id": "<item id>", "is_question": "yes or no"}])]

        def read(self, value: Any, instance: Instance, notes: dict[str, Any] | None) -> str:
            return normalize_label(value, LABELS, self.declaration.synonyms)

        def instance_scores(self, record: PredictionRecord) -> dict[str, float | None]:
            return {"correct": 1.0 if record.ok and record.prediction == record.gold else 0.0}

        def aggregate(self, records: list[PredictionRecord]) -> dict[str, float | int | None]:
            right = sum(1 for r in records if r.ok and r.prediction == r.gold)
            return {"instances": len(records), "failures": sum(not r.ok for r in records),
                    "accuracy": right / len(records) if records else None, **lenient_counts(records)}
''')


@pytest.fixture
def new_task(tmp_path):
    """The new task, imported from its one file (the decorator registers it), and taken out again after."""
    path = tmp_path / "qsp_task.py"
    path.write_text(TASK_MODULE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("qsp_task", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        yield get_task("qsp")
    finally:
        unregister("qsp")


def test_a_new_task_registers_itself_and_keeps_the_contract(new_task, demo_samples):
    assert list(TASKS)[-1] == "qsp" and "qsp" in TASK_NAMES  # after the paper's six
    assert new_task.declaration.paper_counts == {}  # not in the paper: no counts to compare
    check_task("qsp", new_task, demo_samples)


def test_rescue_run_evaluates_a_new_task(new_task, tmp_path, demo_samples):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--tasks", "qsp,itp", "--model", "baseline/majority",
                                      "--no-bertscore", "-q"])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    scores = results["models"]["baseline/majority"]["qsp"]["all"]
    assert scores["instances"] == len(new_task.build(demo_samples)) and scores["failures"] == 0
    assert [k for k in results["models"]["baseline/majority"] if k in TASKS] == ["itp", "qsp"]  # registry order
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["task"] for r in records} == {"itp", "qsp"}


@pytest.mark.slow
def test_a_plugin_distribution_adds_a_task_through_its_entry_point(tmp_path):
    """A package outside rescue: its module plus the entry point its pyproject.toml would declare,
    ``[project.entry-points."rescue.tasks"] qsp = "qsp_task"``, installed as a dist-info folder."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "qsp_task.py").write_text(TASK_MODULE, encoding="utf-8")
    info = site / "qsp_task-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: qsp-task\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[rescue.tasks]\nqsp = qsp_task\n", encoding="utf-8")
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    done = subprocess.run([sys.executable, "-m", "rescue", "run", "--out", str(out), "--tasks", "qsp",
                           "--model", "baseline/uniform", "--no-bertscore", "-q"],
                          env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["models"]["baseline/uniform"]["qsp"]["all"]["instances"] > 0
    listed = subprocess.run([sys.executable, "-m", "rescue", "tasks", "--format", "json"], env=env,
                            capture_output=True, text=True, check=False)
    assert listed.returncode == 0, listed.stderr
    assert list(json.loads(listed.stdout)) == ["itp", "rpp", "stp", "ssp", "er", "vp", "qsp"]


def test_a_plugin_that_cannot_load_is_a_clear_error(tmp_path, monkeypatch):
    from importlib.metadata import EntryPoint

    from rescue.tasks.registry import TaskRegistryError, _load_entry_point

    point = EntryPoint(name="broken", value="zz_no_such_task_module", group="rescue.tasks")
    with pytest.raises(TaskRegistryError, match="task plugin 'broken' .*cannot be loaded: ModuleNotFoundError"):
        _load_entry_point(point)


def test_two_tasks_under_one_name_are_an_error():
    from rescue.tasks.registry import TaskRegistryError, register

    class Impostor:
        declaration = get_task("itp").declaration

    original = get_task("itp")
    again = type(original)()
    try:
        assert register(again) is again and get_task("itp") is again  # the same task again: replaced
        with pytest.raises(TaskRegistryError, match="two tasks named 'itp'"):
            register(type("Impostor", (type(original),), {})())
        with pytest.raises(TaskRegistryError, match="is not a task"):
            register(Impostor())
    finally:
        register(original)
    assert get_task("itp") is original and list(TASKS)[:6] == ["itp", "rpp", "stp", "ssp", "er", "vp"]
