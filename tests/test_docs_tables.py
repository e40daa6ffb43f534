"""Docs tables that mirror a registry are held to the code (issue #36 item 3): a provider preset, a thinking style,
a row rule, a report file or a `rescue run` option added, renamed or changed in the code fails here until the
page says so too. The exit code table of docs/runs.md is held by tests/test_errors.py. Files are read, nothing
is built."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# Spec prefixes of the models table that are no provider preset: the offline baselines and the packaged models.
NOT_PRESETS = {"baseline", "local"}


def _section(page: str, heading: str) -> str:
    """The text of ``page`` under ``heading`` (a line starting with ##), up to the next heading of that level."""
    text = (DOCS / page).read_text(encoding="utf-8")
    level = heading.split(" ", 1)[0]
    return text.split(f"\n{heading}\n", 1)[1].split(f"\n{level} ", 1)[0]


def _rows(text: str, header: str) -> list[list[str]]:
    """The cells of every row of the Markdown table whose header row starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.strip().startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def _prefixes(cell: str) -> list[str]:
    """The spec prefixes a cell names: `openai/MODEL`, `dashscope-intl/`, `openrouter/VENDOR/MODEL`."""
    return re.findall(r"`([a-z][a-z0-9-]*)/", cell)


def test_the_models_table_lists_every_preset_with_its_key_and_endpoint():
    from rescue.llm._providers import PRESETS

    rows = _rows(_section("engine.md", "## Models and credentials"), "| spec |")
    found: dict[str, list[str]] = {}
    for row in rows:
        for name in _prefixes(row[0]):
            assert name not in found, f"docs/engine.md names the preset {name}/ twice"
            found[name] = row
    assert set(found) - NOT_PRESETS == set(PRESETS), "docs/engine.md's models table and PRESETS differ"
    for name, preset in PRESETS.items():
        spec, endpoint, key = found[name]
        assert (f"`{preset.key_env}`" in key) if preset.key_env else key == "none", (name, key)
        urls = re.findall(r"https?://[^\s`|]+", endpoint)
        assert not urls or urls == [preset.base_url], (name, urls, preset.base_url)


def test_the_guide_lists_every_preset():
    from rescue.llm._providers import PRESETS

    text = (DOCS / "guide.md").read_text(encoding="utf-8")
    listed = text.split("`--model` takes a provider preset (", 1)[1].split(")", 1)[0]
    assert set(_prefixes(listed)) == set(PRESETS), "docs/guide.md's preset list and PRESETS differ"


def _first_key(extra: dict[str, object] | None) -> str | None:
    return next(iter(extra), None) if extra else None


def test_the_thinking_table_says_what_each_preset_sends():
    """One row per thinking style; each preset in the row of its style; the row names the body key the style
    sends for off and for a level, or says refused where the style cannot say it."""
    from rescue.llm._providers import PRESETS, THINKING_STYLES

    rows = _rows(_section("engine.md", "## Thinking models and streaming"), "| preset |")
    seen: dict[str, str] = {}
    for cells in rows:
        names = [n for n in re.findall(r"`([a-z][a-z0-9-]*)`", cells[0]) if n in PRESETS]
        assert names, f"a thinking row names no preset: {cells[0]}"
        styles = {PRESETS[n].thinking for n in names}
        assert len(styles) == 1, f"presets of different thinking styles share a row: {cells[0]}"
        (style,) = styles
        for name in names:
            assert name not in seen, f"{name} is in two rows of the thinking table"
            seen[name] = style
        if not style:
            assert "refused" in cells[1] and "refused" in cells[2], cells
            continue
        spoken = THINKING_STYLES[style]
        assert f"`{_first_key(spoken['off'])}" in cells[1], (style, cells[1])
        level = _first_key(spoken["low"])
        assert ("refused" in cells[2]) if level is None else f"`{level}" in cells[2], (style, cells[2])
    assert set(seen) == set(PRESETS), f"presets missing from the thinking table: {sorted(set(PRESETS) - set(seen))}"


def test_the_rulebook_table_is_the_rulebook():
    from rescue.data.rules import RULES

    rows = _rows(_section("data.md", "### The rulebook and `--strict`"), "| id |")
    documented = {}
    for cells in rows:
        found = re.fullmatch(r"`([a-z-]+)`( \*)?", cells[0])
        assert found, cells[0]
        documented[found[1]] = (cells[1], bool(found[2]))
    assert documented == {rule.id: (rule.severity, rule.lenient) for rule in RULES}


def _report_writes() -> set[str]:
    """Every file name the report writes (``report.write(NAME, ...)`` in rescue.report): a folder's files by
    their folder (``analyses/``, ``figures/``)."""
    names: set[str] = set()
    for path in (ROOT / "src" / "rescue" / "report").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "write"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "report" and node.args):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value.rsplit("/", 1)[0] + "/" if "/" in first.value else first.value)
            elif isinstance(first, ast.JoinedStr) and isinstance(first.values[0], ast.Constant):
                names.add(str(first.values[0].value).rsplit("/", 1)[0] + "/")
    return names


def _documented_report_files() -> set[str]:
    names: set[str] = set()
    for cells in _rows(_section("report.md", "## What is written"), "| File |"):
        stem = ""
        named = cells[0].split(" (", 1)[0]  # what follows in brackets is a remark: "(and `.svg` ...)"
        for name in re.findall(r"`([^`]+)`", named):
            if "/" in name:
                names.add(name.rsplit("/", 1)[0] + "/")
            elif name.startswith("."):  # `leaderboard.md`, `.tex`, `.csv`
                names.add(stem + name)
            else:
                stem = name.rsplit(".", 1)[0]
                names.add(name)
    return names


def test_the_report_files_table_lists_every_file_the_report_writes():
    written = _report_writes()
    assert {"leaderboard.md", "report.html", "analyses/", "figures/"} <= written  # the scan finds the writes
    assert _documented_report_files() == written, "docs/report.md's file table and the files rescue report writes differ"


RUN_OPTIONS_HEADING = "## Every option of `rescue run`"


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("<", "&lt;")  # a pipe ends a cell, <group> reads as a tag


def _default_text(value: object) -> str:
    if value is None or value == [] or value == {}:
        return "—"
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"`{value}`"


def run_options_table() -> str:
    """The table of every ``rescue run`` option, made from its one declaration (rescue.engine.run_options)."""
    from rescue.engine.run_options import declared_options

    lines = ["| option | panel | default | what it does |", "|---|---|---|---|"]
    for declared in declared_options():
        flags = ", ".join(f"`{flag}`" for flag in declared.opt.flags)
        lines.append(f"| {flags} | {declared.opt.panel} | {_default_text(declared.cli_default())} | "
                     f"{_cell(declared.opt.help)} |")
    return "\n".join(lines)


def _documented_run_options() -> str:
    section = _section("engine.md", RUN_OPTIONS_HEADING)
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


def test_the_run_options_table_is_made_from_the_declaration():
    """docs/engine.md's table of `rescue run` options is exactly what RunOptions declares (flags, panel, default,
    help); `python tests/test_docs_tables.py --write` writes it again after an option changed."""
    assert _documented_run_options() == run_options_table(), (
        "docs/engine.md's run options differ from rescue.engine.run_options: run "
        "`python tests/test_docs_tables.py --write`")


def _write() -> None:
    page = DOCS / "engine.md"
    text = page.read_text(encoding="utf-8")
    old = _documented_run_options()
    assert old, f"docs/engine.md has no table under {RUN_OPTIONS_HEADING!r}"
    page.write_text(text.replace(old, run_options_table(), 1), encoding="utf-8")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--write"]:
        _write()


def test_the_inspect_parameters_table_lists_every_parameter_with_its_default():
    import dataclasses

    from rescue.inspect_tasks.plan import BenchOptions

    fields = {f.name: f.default for f in dataclasses.fields(BenchOptions) if f.name != "task"}
    documented: dict[str, str] = {}
    for cells in _rows(_section("inspect.md", "## Tasks and their parameters"), "| parameter |"):
        for name in re.findall(r"`([a-z_]+)`", cells[0]):
            documented[name] = cells[1]
    assert set(documented) == set(fields), "docs/inspect.md's parameters and BenchOptions differ"
    for name, default in fields.items():
        if isinstance(default, str):
            assert f"`{default}`" in documented[name], (name, default, documented[name])
