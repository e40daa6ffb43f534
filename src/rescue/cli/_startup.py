"""The ``rescue`` command's start-up tricks, in one place: what keeps ``rescue --help`` and ``rescue run --help``
near 0.1 CPU-s (benchmarks/bench_cli_help.py; targets 0.25 s and 0.15 s) while the commands themselves import
pandas, torch, FastAPI, the tasks and the runner. Each trick and why:

1. **Command stubs** (:func:`_only`). Typer reads the signature of every command it builds, hundreds of
   annotations; the click group is built with every command but the one that runs reduced to its name and
   docstring, which halves `rescue run`'s start, and `rescue --help`, which runs none, lists the commands from
   their docstrings alone. Built once per command name in a process (:func:`command`), so a notebook or a test
   suite calling ``main()`` again reuses it.
2. **Plain help** (:func:`command`). The top level prints click's plain help: typer's rich help imports
   rich.markdown and markdown-it, a third of `rescue --help`'s time. A command's ``--help`` keeps its option
   panels, drawn as plain text by ``rescue.cli._panels`` rather than by rich.
3. **Typer and click internals** (:func:`_no_flag_types`). A flag shows no ``<bool>`` type (typer shows a flag's
   metavar in place of its type), and the help flag's value is taken as a plain bool: typer's conversion would
   build pydantic type adapters first (pydantic and its plugin scan, 0.1 s of `rescue run --help`) for a flag
   that only prints help. These touch typer's private ``typer._click`` and a click parameter's
   ``process_value``; a typer upgrade that changes them fails tests/cli/test_cli_help.py.
4. **Deferred modules.** The command modules name what a command needs (the runner, the tasks, the review
   tool, rich's tables) through the names below, each the module it says, imported on first use: a command
   pays for what it runs, never for its neighbours', and `--help` for none of it. Mypy reads the real modules
   (the ``TYPE_CHECKING`` imports); at run time each name is a :class:`_Deferred` that imports its module when
   an attribute is first read. A module that every command's start imports anyway (``rescue.errors``,
   ``rich.markup``, ``rescue.data.text``, typer) is imported at the top of the module that uses it instead.
5. **Looking, not importing** (:func:`loaded`). The SIGTERM handler and the exit path ask for the child-process
   registry and the runner only if a command imported them; importing them there would cost `rescue --help`
   0.1 s and prove nothing.

tests/cli/test_cli_help.py holds the help pages and the modules `--help` must not import; tests/cli/test_startup.py
holds the deferred names: each is the module mypy reads, and none is imported by importing the CLI.
"""

from __future__ import annotations

import copy
import functools
import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

import typer.main
from typer._click import Context

from rescue.cli._panels import use_panels


class _Deferred:
    """A module imported when one of its attributes is first read (trick 4)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<deferred module {self._name!r}>"


if TYPE_CHECKING:
    import tomllib as tomllib

    import rich.progress as rich_progress
    import rich.table as rich_table
    import sqlalchemy as sqlalchemy
    import uvicorn as uvicorn

    import rescue.builder.inputs as builder_inputs
    import rescue.data.encoding as data_encoding
    import rescue.data.loading as data_loading
    import rescue.data.splits as data_splits
    import rescue.data.stats as data_stats
    import rescue.data.validation as data_validation
    import rescue.display as display
    import rescue.engine.config as engine_config
    import rescue.engine.dryrun as engine_dryrun
    import rescue.engine.runner as engine_runner
    import rescue.exports.chat as exports_chat
    import rescue.exports.hf as exports_hf
    import rescue.files as files
    import rescue.proc as proc
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
    import rescue.suites as suites
    import rescue.tasks as task_registry
    import rescue.tasks.base as tasks_base
    import rescue.tasks.render as tasks_render
else:
    builder_inputs = _Deferred("rescue.builder.inputs")
    data_encoding = _Deferred("rescue.data.encoding")
    data_loading = _Deferred("rescue.data.loading")
    data_splits = _Deferred("rescue.data.splits")
    data_stats = _Deferred("rescue.data.stats")
    data_validation = _Deferred("rescue.data.validation")
    display = _Deferred("rescue.display")
    engine_config = _Deferred("rescue.engine.config")
    engine_dryrun = _Deferred("rescue.engine.dryrun")
    engine_runner = _Deferred("rescue.engine.runner")
    exports_chat = _Deferred("rescue.exports.chat")
    exports_hf = _Deferred("rescue.exports.hf")
    files = _Deferred("rescue.files")
    proc = _Deferred("rescue.proc")
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
    rich_progress = _Deferred("rich.progress")
    rich_table = _Deferred("rich.table")
    runs_failures = _Deferred("rescue.runs.failures")
    scoring_judge_agreement = _Deferred("rescue.scoring.judge_agreement")
    sqlalchemy = _Deferred("sqlalchemy")
    suites = _Deferred("rescue.suites")
    task_registry = _Deferred("rescue.tasks")
    tasks_base = _Deferred("rescue.tasks.base")
    tasks_render = _Deferred("rescue.tasks.render")
    tomllib = _Deferred("tomllib")
    uvicorn = _Deferred("uvicorn")

__all__ = [
    "builder_inputs", "data_encoding", "data_loading", "data_splits", "data_stats",
    "data_validation", "display", "engine_config", "engine_dryrun", "engine_runner", "exports_chat",
    "exports_hf", "files", "proc", "report_build", "report_failures", "report_reference", "report_runs",
    "report_summary", "human_app", "human_benchmark", "human_export", "human_store", "review_crud",
    "review_db", "review_export", "review_models", "review_project", "review_server", "rich_progress",
    "rich_table", "runs_failures", "scoring_judge_agreement", "sqlalchemy", "suites", "task_registry",
    "tasks_base", "tasks_render", "tomllib", "uvicorn",
    "command", "loaded",
]


def loaded(name: str) -> types.ModuleType | None:
    """The module ``name`` if something has imported it, else None (trick 5)."""
    return sys.modules.get(name)


def command(app: typer.Typer) -> Any:
    """The click command behind ``app`` for this process's command line, tidied for its help pages: the top level
    prints click's plain help (typer's rich help imports rich.markdown and markdown-it, a third of `rescue --help`'s
    time), the commands keep rich help with their option panels, and flags show no ``<bool>`` type."""
    words = [a for a in sys.argv[1:] if not a.startswith("-")]
    return _command_for(app, words[0] if words else None, "--help" in sys.argv[1:])


@functools.lru_cache(maxsize=16)
def _command_for(app: typer.Typer, wanted: str | None, helping: bool = False) -> Any:
    # Built once per command name in a process: a notebook or a test suite calling main() again reuses it.
    group = typer.main.get_command(_only(app, wanted))
    group.rich_markup_mode = None  # type: ignore[attr-defined]
    _no_flag_types(group)
    if helping:  # a command's help: its option panels drawn as plain text (rescue.cli._panels), not by rich
        for sub in _commands(group):
            use_panels(sub)
    return group


def _commands(group: Any) -> list[Any]:
    """Every command below ``group``, nested groups' included."""
    found = []
    for sub in getattr(group, "commands", {}).values():
        found.append(sub)
        found.extend(_commands(sub))
    return found


def _only(typer_app: Any, wanted: str | None) -> Any:
    """``typer_app`` with every command but ``wanted`` reduced to its name and help. Typer reads the signature of
    every command it builds (hundreds of annotations): building only the one that runs halves `rescue run`'s
    start, and `rescue --help`, which runs none, lists the commands from their docstrings alone."""
    view = copy.copy(typer_app)
    view.registered_commands = []
    for info in typer_app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        if name != wanted:
            info = copy.copy(info)
            info.callback = _stub(info.callback)
        view.registered_commands.append(info)
    view.registered_groups = []
    for info in typer_app.registered_groups:
        if info.name != wanted:
            info = copy.copy(info)
            info.typer_instance = _only(info.typer_instance, None)
        view.registered_groups.append(info)
    return view


def _stub(callback: Any) -> Any:
    def stub() -> None:
        raise AssertionError("a command's stub never runs")

    stub.__doc__ = callback.__doc__
    stub.__name__ = callback.__name__
    return stub


def _no_flag_types(cmd: Any) -> None:
    options = list(cmd.params)
    help_option = cmd.get_help_option(Context(cmd))
    if help_option is not None:
        options.append(help_option)
        # A help flag's value needs no conversion; typer's would build pydantic type adapters first (pydantic
        # and its plugin scan: 0.1 s of `rescue run --help`) for the group's flag, given or not.
        help_option.process_value = types.MethodType(_help_flag_value, help_option)
    for param in options:
        if getattr(param, "is_flag", False):
            param.metavar = ""  # typer shows a flag's metavar in place of its type
    for sub in getattr(cmd, "commands", {}).values():
        _no_flag_types(sub)


def _help_flag_value(self: Any, ctx: Any, value: Any) -> Any:
    return self.callback(ctx, self, bool(value)) if self.callback is not None else bool(value)
