"""What keeps ``rescue --help`` and ``rescue run --help`` under their targets (benchmarks/README.md, measured
by benchmarks/bench_cli_help.py) while the commands themselves import pandas, torch, FastAPI, the tasks and the
runner: they load less. Nothing of typer's or click's is patched; each part uses typer's public API
(docs/architecture.md, "The CLI's start-up"):

1. **Deferred modules.** The command modules name what a command needs (the runner, the tasks, the review
   tool, rich's tables) through the names below, each the module it says, imported on first use: a command
   pays for what it runs, never for its neighbours', and `--help` for none of it. Mypy reads the real modules
   (the ``TYPE_CHECKING`` imports); at run time each name is a :class:`_Deferred` that imports its module when
   an attribute is first read. A module that every command's start imports anyway (``rescue.errors``,
   ``rich.markup``, ``rescue.data.text``, typer) is imported at the top of the module that uses it instead.
2. **Looking, not importing** (:func:`loaded`). The SIGTERM handler and the exit path ask for the child-process
   registry and the runner only if a command imported them; importing them there would make `rescue --help` load
   them to find nothing to end.

The help pages themselves (plain text, option panels) are ``rescue.cli._app.RescueTyper`` and
``rescue.cli._panels.PanelCommand``. tests/cli/test_cli_help.py holds the help pages and the modules `--help`
must not import; tests/cli/test_startup.py holds the deferred names (each is the module mypy reads, and none is
imported by importing the CLI) and that the CLI reaches no third-party private module.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any


class _Deferred:
    """A module imported when one of its attributes is first read (part 1)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<deferred module {self._name!r}>"


if TYPE_CHECKING:
    import tomllib as tomllib

    import rich.markup as rich_markup
    import rich.measure as rich_measure
    import rich.progress as rich_progress
    import rich.table as rich_table
    import sqlalchemy as sqlalchemy
    import uvicorn as uvicorn

    import rescue.builder.inputs as builder_inputs
    import rescue.data.encoding as data_encoding
    import rescue.data.loading as data_loading
    import rescue.data.reading as data_reading
    import rescue.data.splits as data_splits
    import rescue.data.stats as data_stats
    import rescue.data.validation as data_validation
    import rescue.engine.config as engine_config
    import rescue.engine.dryrun as engine_dryrun
    import rescue.engine.runner as engine_runner
    import rescue.exports.chat as exports_chat
    import rescue.exports.hf as exports_hf
    import rescue.files as files
    import rescue.proc as proc
    import rescue.leaderboard.entries as leaderboard_entries
    import rescue.leaderboard.rank as leaderboard_rank
    import rescue.leaderboard.site as leaderboard_site
    import rescue.report.build as report_build
    import rescue.report.failures as report_failures
    import rescue.report.reference as report_reference
    import rescue.report.runs as report_runs
    import rescue.report.summary as report_summary
    import rescue.review.app as review_server
    import rescue.human.app as human_app
    import rescue.human.benchmark as human_benchmark
    import rescue.human.export as human_export
    import rescue.human.store as human_store
    import rescue.review.crud as review_crud
    import rescue.review.db as review_db
    import rescue.review.export as review_export
    import rescue.review.models as review_models
    import rescue.review.project as review_project
    import rescue.runs.failures as runs_failures
    import rescue.scoring.judge_agreement as scoring_judge_agreement
    import rescue.submissions.bundle as submissions_bundle
    import rescue.submissions.submit as submissions_submit
    import rescue.submissions.verify as submissions_verify
    import rescue.suites as suites
    import rescue.tasks as task_registry
    import rescue.tasks.base as tasks_base
    import rescue.tasks.render as tasks_render
else:
    builder_inputs = _Deferred("rescue.builder.inputs")
    data_encoding = _Deferred("rescue.data.encoding")
    data_loading = _Deferred("rescue.data.loading")
    data_reading = _Deferred("rescue.data.reading")
    data_splits = _Deferred("rescue.data.splits")
    data_stats = _Deferred("rescue.data.stats")
    data_validation = _Deferred("rescue.data.validation")
    engine_config = _Deferred("rescue.engine.config")
    engine_dryrun = _Deferred("rescue.engine.dryrun")
    engine_runner = _Deferred("rescue.engine.runner")
    exports_chat = _Deferred("rescue.exports.chat")
    exports_hf = _Deferred("rescue.exports.hf")
    files = _Deferred("rescue.files")
    proc = _Deferred("rescue.proc")
    leaderboard_entries = _Deferred("rescue.leaderboard.entries")
    leaderboard_rank = _Deferred("rescue.leaderboard.rank")
    leaderboard_site = _Deferred("rescue.leaderboard.site")
    report_build = _Deferred("rescue.report.build")
    report_failures = _Deferred("rescue.report.failures")
    report_reference = _Deferred("rescue.report.reference")
    report_runs = _Deferred("rescue.report.runs")
    report_summary = _Deferred("rescue.report.summary")
    human_app = _Deferred("rescue.human.app")
    human_benchmark = _Deferred("rescue.human.benchmark")
    human_export = _Deferred("rescue.human.export")
    human_store = _Deferred("rescue.human.store")
    review_crud = _Deferred("rescue.review.crud")
    review_db = _Deferred("rescue.review.db")
    review_export = _Deferred("rescue.review.export")
    review_models = _Deferred("rescue.review.models")
    review_project = _Deferred("rescue.review.project")
    review_server = _Deferred("rescue.review.app")
    rich_markup = _Deferred("rich.markup")
    rich_measure = _Deferred("rich.measure")
    rich_progress = _Deferred("rich.progress")
    rich_table = _Deferred("rich.table")
    runs_failures = _Deferred("rescue.runs.failures")
    scoring_judge_agreement = _Deferred("rescue.scoring.judge_agreement")
    sqlalchemy = _Deferred("sqlalchemy")
    submissions_bundle = _Deferred("rescue.submissions.bundle")
    submissions_submit = _Deferred("rescue.submissions.submit")
    submissions_verify = _Deferred("rescue.submissions.verify")
    suites = _Deferred("rescue.suites")
    task_registry = _Deferred("rescue.tasks")
    tasks_base = _Deferred("rescue.tasks.base")
    tasks_render = _Deferred("rescue.tasks.render")
    tomllib = _Deferred("tomllib")
    uvicorn = _Deferred("uvicorn")

__all__ = [
    "builder_inputs", "data_encoding", "data_loading", "data_reading", "data_splits", "data_stats",
    "data_validation", "engine_config", "engine_dryrun", "engine_runner", "exports_chat",
    "exports_hf", "files", "leaderboard_entries", "leaderboard_rank", "leaderboard_site", "proc", "report_build", "report_failures", "report_reference", "report_runs",
    "report_summary", "human_app", "human_benchmark", "human_export", "human_store", "review_crud",
    "review_db", "review_export", "review_models", "review_project", "review_server", "rich_markup",
    "rich_measure", "rich_progress",
    "rich_table", "runs_failures", "scoring_judge_agreement", "sqlalchemy", "submissions_bundle", "submissions_submit",
    "submissions_verify", "suites", "task_registry",
    "tasks_base", "tasks_render", "tomllib", "uvicorn",
    "loaded",
]


def loaded(name: str) -> types.ModuleType | None:
    """The module ``name`` if something has imported it, else None (part 2)."""
    return sys.modules.get(name)
