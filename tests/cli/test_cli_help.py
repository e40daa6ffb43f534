"""A CLI that helps (issue #28 item 4): `rescue run --help` in option panels without `<bool>` types, every option
explained, choices listed; `rescue --help` imports none of the heavy modules (benchmarks/bench_cli_help.py times
it); an offline `rescue data fetch` leaves nothing behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from _cli import invoke_main

HEAVY = ("pydantic", "httpx", "asyncio", "ftfy", "rescue.tasks", "rescue.data.validation", "rich.markdown",
         "markdown_it", "numpy")


def _help(*args: str, columns: int = 100):
    return invoke_main([*args, "--help"], env={"COLUMNS": str(columns)})


def test_top_level_help_imports_nothing_heavy():
    code = ("import sys; sys.argv = ['rescue', '--help']\nfrom rescue.cli import main\ntry:\n    main()\n"
            "except SystemExit:\n    pass\nprint('MODULES', ' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert "Commands:" in done.stdout and "run " in done.stdout
    modules = set(done.stdout.split("MODULES", 1)[1].split())
    assert not [m for m in HEAVY if m in modules]
    assert not [m for m in modules if m == "rich" or m.startswith("rich.")]


def test_run_help_groups_its_options_into_panels():
    result = _help("run")
    assert result.exit_code == 0
    panels = re.findall(r"╭─ ([A-Za-z ]+?) ─", result.stdout)
    assert panels == ["Options", "Data", "Models", "Generation", "Judging and scoring", "Run control", "Output"]
    assert "<bool>" not in result.stdout


def test_every_run_option_is_explained_and_choices_are_listed():
    import typer.main

    from rescue.cli import app

    run = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    unexplained = [p.opts[0] for p in run.params if not getattr(p, "help", None)]
    assert unexplained == []
    words = " ".join(re.sub("[│╭╮╰╯─]", " ", _help("run", columns=250).stdout).split())
    assert "--temperature" in words and "Sampling temperature" in words
    assert "<auto|relation_pattern|relation_cycle_state>" in words


def test_the_cli_choices_are_the_registrys():
    from rescue.cli._app import JudgedTask
    from rescue.tasks import judged_tasks
    from rescue.tasks.rpp import RPP_GOLD_CHOICES

    words = " ".join(re.sub("[│╭╮╰╯─]", " ", _help("run", columns=250).stdout).split())
    assert f"<{'|'.join(RPP_GOLD_CHOICES)}>" in words  # the help lists the library's choices, in its order
    assert [c.value for c in JudgedTask] == list(judged_tasks())


def test_rpp_gold_refuses_an_unknown_field():
    result = invoke_main(["run", "--rpp-gold", "nope", "--dry-run"])
    assert result.exit_code == 2 and "nope" in result.output


def test_an_offline_fetch_leaves_no_folder_and_draws_no_empty_bar(tmp_path):
    dest = tmp_path / "data"
    result = invoke_main(["data", "fetch", "--url", "http://127.0.0.1:9/benchmark_191.jsonl", "--dest", str(dest)])
    assert result.exit_code == 2 and "no network" in result.stderr
    assert not dest.exists()
    assert "0/?" not in result.output and "downloading" not in result.output


def test_rescore_finds_relative_data_from_another_folder(tmp_path, monkeypatch):
    import json
    import shutil

    from rescue.data.reading import demo_path

    first = tmp_path / "project"
    first.mkdir()
    shutil.copy(demo_path(), first / "demo.jsonl")
    monkeypatch.chdir(first)
    ran = invoke_main(["run", "--out", "run", "--data", "demo.jsonl", "--tasks", "itp", "-q"])
    assert ran.exit_code == 0, ran.output
    stored = json.loads((first / "run" / "results.json").read_text(encoding="utf-8"))["data"]
    assert stored["path"] == str(first / "demo.jsonl") and stored["sha256"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    rescored = invoke_main(["rescore", str(first / "run"), "-q"])
    assert rescored.exit_code == 0, rescored.output


def _words(text: str) -> str:
    return " ".join(text.split())


def test_one_sourced_statement_on_the_papers_bertscore_backbone():
    from pathlib import Path

    from rescue.scoring.bertscore import PAPER_BACKBONE

    root = Path(__file__).resolve().parents[2]
    assert "d38edcc" in PAPER_BACKBONE and "distilbert-base-uncased" in PAPER_BACKBONE
    for doc in ("docs/guide.md", "docs/judging.md"):
        assert _words(PAPER_BACKBONE) in _words((root / doc).read_text(encoding="utf-8")), doc


def test_the_local_model_timing_is_for_the_readme_command():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = [line for line in (root / "docs/guide.md").read_text(encoding="utf-8").splitlines()
              if line.startswith("rescue run --model local/smollm2")]
    guide = (root / "docs/local-model.md").read_text(encoding="utf-8")
    timed = re.search(r"ITP on one demo sample with\s+`([^`]+)`", guide)
    assert readme and timed is not None
    assert all(option in readme[0] for option in timed.group(1).split(" --"))
    assert readme[0] in guide


def test_run_help_ends_with_a_minimal_call_and_the_local_server_flag(monkeypatch):
    """lm-eval and inspect show example lines; `rescue run --help` had none (issue 35). Each example is shown whole
    on one line of an 80-column terminal, and is a call rescue takes: the local server one needs no key."""
    from rescue.cli._run_cmds import RUN_EXAMPLES
    from rescue.llm._providers import resolve_endpoint

    result = _help("run", columns=80)
    assert result.exit_code == 0
    lines = [line.strip() for line in result.stdout.split("Examples:", 1)[1].splitlines()]
    commands = [command for _, command in RUN_EXAMPLES]
    assert all(command in lines for command in commands), lines
    assert any("--base-url http://127.0.0.1" in c for c in commands)  # the local-server flag
    assert any(c.split()[3].startswith("baseline/") for c in commands)  # a minimal call that needs nothing
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for command in commands:
        words = command.split()
        if "--base-url" in words:
            model, url = words[words.index("--model") + 1], words[words.index("--base-url") + 1]
            assert resolve_endpoint(model, base_url=url).api_key == "EMPTY"


def test_a_commands_help_draws_its_panels_without_building_what_it_does_not_show():
    """Issue 34 item 6: `rescue run --help` neither converts flags through pydantic adapters nor loads typer's rich
    help (rich.markdown, markdown-it): its panels are drawn as plain text."""
    code = ("import sys; sys.argv = ['rescue', 'run', '--help']\nfrom rescue.cli import main\ntry:\n    main()\n"
            "except SystemExit:\n    pass\nprint('MODULES', ' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "100"})
    assert "╭─ Data ─" in done.stdout and "--temperature" in done.stdout
    modules = set(done.stdout.split("MODULES", 1)[1].split())
    assert not [m for m in (*HEAVY, "typer.rich_utils", "typer._adapters") if m in modules]
    assert not [m for m in modules if m == "rich" or m.startswith("rich.")]  # nothing is printed with rich
    for line in done.stdout.split("MODULES", 1)[0].splitlines():
        if line.startswith(("│", "╭", "╰")):
            assert len(line) == 99, line  # every panel line as wide as the terminal, less one column


def test_a_group_lists_its_commands_and_the_top_level_help_flag_takes_no_conversion():
    """A group's help lists its commands (drawn as a command's panels, `rescue data --help` had lost them), and
    the top level's help flag, absent from `rescue run --help`, costs no value conversion (it is a bool)."""
    for group, commands in (("data", ["fetch"]), ("review", ["serve", "user", "export"]), ("review user", ["add", "list"])):
        result = _help(*group.split())
        assert result.exit_code == 0, result.output
        listed = result.stdout.split("Commands:", 1)[1].split()
        assert all(command in listed for command in commands), (group, result.stdout)
    top = _help()
    assert "--help" in top.stdout and "--version" in top.stdout
