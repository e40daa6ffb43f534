"""Bad input that used to get through or crash (#10.10-12): each class is a one-line FILE:LINE error, exit 2,
no traceback and nothing written, for `validate`, `run` and `report` alike; ids from outside never reach a
terminal, a file name or a Markdown/LaTeX table raw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli import invoke_main
from data_helpers import couple_record, run_cli, write_jsonl

from rescue.data.text import latex_text, visible_text
from rescue.display import markdown_table, terminal_text
from rescue.files import safe_filename

SID = "demo_couple_riley_and_sam/001_session"


def _nan_time(path: Path) -> Path:
    text = json.dumps(couple_record()).replace('"start_time": 0.0', '"start_time": NaN', 1)
    assert "NaN" in text
    path.write_text(text + "\n")
    return path


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _json_text(record: dict, old: str, new: str) -> str:
    text = json.dumps(couple_record() if record is None else record)
    assert old in text
    return text.replace(old, new, 1)


CASES = {
    # name: (how to make the data file, the message it must print)
    "empty file": (lambda p: _write(p, ""), "holds no samples (the file is empty or only whitespace)"),
    "whitespace only": (lambda p: _write(p, "  \n\t\n\n"), "holds no samples"),
    "NaN time": (_nan_time, f":1: {SID} row 1: start_time: NaN is not a JSON number"),
    "Infinity time": (lambda p: _write(p, _json_text(couple_record(), '"end_time": ', '"end_time": -Infinity, "x": ')
                                             + "\n"), "row 1: end_time: -Infinity is not a JSON number"),
    "deep nesting": (lambda p: _write(p, '{"sample_id": "a", "rows": ' + "[" * 100_000 + "]" * 100_000 + "}\n"),
                     ":1: <no sample_id>: invalid JSON: nested too deeply"),
    "5000-digit integer": (lambda p: _write(p, '{"sample_id": "a", "rows": [{"start_time": ' + "9" * 5000 + "}]}\n"),
                           ":1: <no sample_id>: invalid JSON: a number with thousands of digits"),
    "lone surrogate in an id": (lambda p: _write(p, _json_text(couple_record(), f'"{SID}"', '"abc\\udc80def"') + "\n"),
                                "abc\\udc80def: sample_id: lone UTF-16 surrogate \\udc80"),
    "lone surrogate in text": (lambda p: _write(p,
        _json_text(couple_record(), '"dialogue_cleaned": "', '"dialogue_cleaned": "\\ud800 ') + "\n"),
        f"{SID} row 1: dialogue_cleaned: lone UTF-16 surrogate \\ud800"),
}


def _intensity(value: float):
    def make(path: Path) -> Path:
        record = couple_record()
        record["rows"][0]["internal_emotion"][0]["intensity"] = value
        return write_jsonl(path, [record])
    return make


CASES["intensity 7.5 (the scale is integer)"] = (
    _intensity(7.5), f"{SID} row 1: internal_emotion[0].intensity: 7.5 is not a whole number")


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("command", ["validate", "run", "stats"])
def test_each_class_of_bad_data_is_one_clear_error(tmp_path, capsys, monkeypatch, name, command):
    make, message = CASES[name]
    data = make(tmp_path / "bad.jsonl")
    out_dir = tmp_path / "out"
    args = {"validate": ["validate"], "run": ["run", "--quiet", "--no-bertscore", "--out", str(out_dir)],
            "stats": ["stats", "--format", "json"]}[command]
    code, out, err = run_cli([*args, "--data", str(data)], capsys, monkeypatch)
    assert code == 2, (out, err)
    assert message in err and "Traceback" not in err
    assert not out_dir.exists()


def test_a_whole_intensity_written_as_a_float_is_accepted(tmp_path, capsys, monkeypatch):
    data = _intensity(7.0)(tmp_path / "ok.jsonl")
    code, out, err = run_cli(["validate", "--data", str(data)], capsys, monkeypatch)
    assert code == 0, err


@pytest.mark.parametrize("kind", ["self-referencing link", "dangling link", "folder named .jsonl"])
@pytest.mark.parametrize("where", ["given", "inside a data folder"])
def test_paths_that_are_not_data_files(tmp_path, capsys, monkeypatch, kind, where):
    folder = tmp_path / "data"
    folder.mkdir()
    if where == "inside a data folder":
        write_jsonl(folder / "good.jsonl", [couple_record()])
    target = folder / "x.jsonl"
    if kind == "self-referencing link":
        target.symlink_to(target.name)
        message = "a symbolic link that loops back on itself"
    elif kind == "dangling link":
        target.symlink_to("nowhere.jsonl")
        message = "a symbolic link that points to 'nowhere.jsonl', which does not exist"
    else:
        target.mkdir()
        message = "no .jsonl or .json sample files found" if where == "given" else ""
    data = target if where == "given" else folder
    code, out, err = run_cli(["run", "--quiet", "--no-bertscore", "--tasks", "itp", "--out", str(tmp_path / "out"),
                              "--data", str(data)], capsys, monkeypatch)
    if kind == "folder named .jsonl" and where == "inside a data folder":
        assert code == 0, err  # the folder is no data file: the good file next to it is read
        return
    assert code == 2 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_stats_json_is_json(tmp_path, capsys, monkeypatch):
    code, out, _ = run_cli(["stats", "--format", "json"], capsys, monkeypatch)
    assert code == 0
    json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in stats --format json"))


# --- ids from outside: terminal, file names, Markdown, LaTeX (#10.12) ----------------------------------------

NASTY = ["a\x1b[31mred\x1b[0m", "nul\x00byte", "line\nbreak", "[/bold]x", "org/model[beta]", "<script>alert(1)</script>",
         "x" * 300, "lone\udc80"]


@pytest.mark.parametrize("text", NASTY)
def test_display_helpers_never_pass_controls_markup_or_html(text):
    from rich.console import Console

    shown = visible_text(text)
    assert not any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in shown)
    console = Console(record=True, width=400, color_system=None)
    console.print(terminal_text(text))  # rich markup in an id must neither crash nor vanish
    printed = console.export_text()
    assert ("org/model[beta]" in printed) if text == "org/model[beta]" else True
    assert ("[/bold]x" in printed) if text == "[/bold]x" else True
    table = markdown_table(["model"], [[text]])
    assert len(table.strip().splitlines()) == 3 and "<script>" not in table
    assert "\n" not in latex_text(text) and "\x1b" not in latex_text(text)
    name = safe_filename(text)
    assert len(name) <= 80 and all(c.isalnum() or c in "._-" for c in name)


def test_long_ids_keep_distinct_bounded_file_names():
    a, b = "m" * 300 + "a", "m" * 300 + "b"
    assert safe_filename(a) != safe_filename(b) and len(safe_filename(a)) <= 80
    assert safe_filename("baseline/majority") == "baseline_majority"


def test_a_nasty_model_id_runs_reports_and_stays_escaped(tmp_path):
    """A run whose model id holds markup, a newline, an ESC and 300 characters, through `run` and `report`."""
    from _engine_support import itp_instances, oracle_answers, oracle_script

    from rescue.testing.openai_server import serve

    model = "org/model[beta]\x1b[2J<script>x</script>\n" + "y" * 300
    instances = itp_instances(1)
    out = tmp_path / "run"
    with serve(oracle_script(oracle_answers("itp", instances))) as server:
        # In-process (the real entry point, its error handling and exit codes): a child interpreter per command
        # cost seconds of imports and tested nothing more.
        done = invoke_main(["run", "--model", model, "--base-url", server.base_url, "--tasks", "itp", "--limit-samples",
                            "1", "--no-bertscore", "--out", str(out)], env={"OPENAI_API_KEY": "k", "COLUMNS": "100"})
    assert done.exit_code == 0, done.stderr
    assert "\x1b[2J" not in done.stdout + done.stderr and "Traceback" not in done.stderr
    assert "org/model[beta]" in done.stdout and "org/model[beta]" in done.stderr  # table and progress bar, literally
    report = invoke_main(["report", str(out), "--out", str(tmp_path / "rep"), "--bootstrap", "20", "--no-html",
                          "--no-figures", "--quiet"])
    assert report.exit_code == 0, report.stderr
    board = (tmp_path / "rep" / "leaderboard.md").read_text()
    assert "<script>" not in board and "\x1b" not in board
    rows = [line for line in board.splitlines() if line.startswith("|")]
    assert all(line.count("|") == rows[0].count("|") for line in rows)  # the newline did not break a row
    tex = (tmp_path / "rep" / "leaderboard.tex").read_text()
    assert "\x1b" not in tex and "[beta]" in tex
    assert all(len(p.name) < 120 for p in (tmp_path / "rep").rglob("*"))
