"""Hostile model ids in the report (issue #22.7): text from data or model names is literal everywhere, figures
included (no mathtext), file names are short, stable and safe (a slug plus a hash), and files.csv says which
file belongs to which system. Runs against the real scripted server, the report with real matplotlib figures.
"""

from __future__ import annotations

import csv
import re
import warnings

import pytest
from _cli import invoke_main
from _engine_support import itp_instances, oracle_answers, oracle_script
from extras import needs_extra

from rescue.testing.openai_server import serve

needs_extra("plot")

# The case first, then ids the fix was not written against.
HOSTILE = [
    "$\\textbf{x}$",
    "$x^{2}$ and $",
    "_starts_with_underscore",
    "\\frac{1}{0}",
    "50% <b>bold</b> & {braces}",
    "../../etc/passwd",
    "m" * 150 + "$\\alpha$",
    "模型/日本語-モデル",
    "\ue000private-use/" + "模型" * 40,  # a character no font has, in an id longer than any label shows
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    instances = itp_instances(1)
    runs = []
    with serve(oracle_script(oracle_answers("itp", instances))) as server:
        for n, name in enumerate(HOSTILE):
            out = root / f"run{n}"
            result = invoke_main(["run", "--out", str(out), "--model", name, "--base-url", server.base_url,
                                  "--tasks", "itp", "--limit-samples", "1", "--no-bertscore", "--quiet"],
                                 env={"OPENAI_API_KEY": "test"})
            assert result.exit_code == 0, (name, result.output)
            runs.append(str(out))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = invoke_main(["report", *runs, "--out", str(root / "R"), "--bootstrap", "20", "--figures",
                              "--figure-formats", "png,svg"])  # SVG keeps the ids as text: what these tests read
    return root / "R", result, [str(w.message) for w in caught]


@pytest.mark.slow
def test_the_report_with_hostile_model_ids_is_made_with_its_figures(report):
    folder, result, caught = report
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "ParseFatalException" not in result.output
    assert any((folder / "figures").glob("*.svg"))
    # No glyph missing from the fonts (CJK ids use an installed fallback font or are escaped), and no layout
    # collapsed by a long id.
    assert caught == []


@pytest.mark.slow
def test_model_ids_are_literal_text_in_the_figures(report):
    folder, _, _ = report
    svg = "".join(p.read_text(encoding="utf-8") for p in (folder / "figures").glob("*.svg"))
    for name in ("$\\textbf{x}$", "_starts_with_underscore"):
        shown = name.replace("&", "&amp;").replace("<", "&lt;")
        assert shown in svg or name in svg, name


@pytest.mark.slow
def test_file_names_are_short_safe_and_say_whose_they_are(report):
    folder, _, _ = report
    names = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    for name in names:
        base = name.rsplit("/", 1)[-1]
        assert len(base) <= 80 and re.fullmatch(r"[A-Za-z0-9._-]+", base), name
    with (folder / "files.csv").open(encoding="utf-8") as handle:
        owners = {row["file"]: row["system"] for row in csv.DictReader(handle)}
    assert set(HOSTILE) <= set(owners.values())
    for file in owners:
        assert (folder / file).is_file(), file
    # Stable: the hash part comes from the id alone.
    from rescue.report.build import _slug

    assert _slug(HOSTILE[0]) == _slug(HOSTILE[0]) and _slug(HOSTILE[0]) != _slug(HOSTILE[0] + " ")
