"""The report's defaults are written once (issue #36 item 2): rescue.report.options holds the resamples, the
interval level, alpha and the resampling unit; every function of the report and `rescue report` take them from
there, so a default changed there changes everywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import typer.main

from rescue.cli import app
from rescue.report.options import ReportOptions

REPORT = Path(__file__).resolve().parents[2] / "src" / "rescue" / "report"
DECLARED = {"n_resamples", "level", "alpha", "cluster"}


def test_no_report_function_writes_a_default_of_its_own():
    written = []
    for path in sorted(REPORT.glob("*.py")):
        if path.name == "options.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                positional = list(zip(args.args[len(args.args) - len(args.defaults):], args.defaults))
                keyword = [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
                written += [f"{path.name}:{node.lineno} {a.arg}={ast.unparse(d)}" for a, d in positional + keyword
                            if a.arg in DECLARED and isinstance(d, ast.Constant)]
    assert written == [], "defaults written again instead of taken from rescue.report.options:\n" + "\n".join(written)


def test_rescue_report_shows_the_library_defaults():
    command = typer.main.get_command(app).commands["report"]  # type: ignore[attr-defined]
    defaults = {p.name: p.default for p in command.params}
    options = ReportOptions()
    assert (defaults["bootstrap"], defaults["level"], defaults["alpha"], defaults["cluster"], defaults["seed"],
            defaults["context_rows"]) == (options.n_resamples, options.level, options.alpha, options.cluster,
                                          options.seed, options.context_rows)
    assert defaults["figure_formats"] == ",".join(options.figure_formats) and defaults["splits"] == options.splits
