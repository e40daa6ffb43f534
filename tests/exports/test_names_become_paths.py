"""Names from files never become paths outside ``--out`` (issue 33 item 5): every hostile split name of a
``splits.json`` is refused when the plan is read, before ``rescue export --format hf`` writes anything, with an
error naming the file and the field; a sample in two splits, or an empty split, too. Real files, the real CLI."""

from __future__ import annotations

import json
import unicodedata

import pytest

import rescue
from rescue.errors import EXIT_ERROR
from rescue.data.names import RESERVED_NAMES
from _cli import invoke_main

HOSTILE_SPLIT_NAMES = {
    "parent": "../escaped",
    "deep parent": "a/../../escaped",
    "absolute": "{tmp}/escaped-absolute",  # made absolute inside the test's own folder
    "empty": "",
    "dot": ".",
    "dot dot": "..",
    "backslash": "..\\escaped",
    "NUL": "tr\x00ain",
    "newline": "train\nx",
    "escape sequence": "\x1b[31mtrain",
    "tab": "tra\tin",
    "very long": "t" * 300,
    "reserved device": sorted(RESERVED_NAMES)[0],
    "reserved with extension": "NUL.txt",
    "right-to-left override": "tr\u202eniart",
    "zero-width space": "tr\u200bain",
    "fullwidth solidus": "a\uff0f..\uff0fb",
    "fullwidth letters": "\uff54\uff52\uff41\uff49\uff4e",
    "decomposed accent": unicodedata.normalize("NFD", "d\u00e9v"),
    "hidden": ".train",
    "option-like": "-rf",
    "trailing dot": "train.",
    "trailing space": "train ",
    "lone surrogate": "tr\ud800ain",
}


def _files_under(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _plan(folder, splits):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "splits.json"
    plan = {"version": 1, "scheme": "holdout", "seed": 0, "grouping": "hand-made", "splits": splits}
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


def _export(plan, out):
    return invoke_main(["export", "--format", "hf", "--kind", "samples", "--all-splits", "--splits", str(plan),
                        "--out", str(out)])


@pytest.fixture(scope="module")
def demo_ids():
    return [s.sample_id for s in rescue.load()]


@pytest.mark.parametrize("variant", list(HOSTILE_SPLIT_NAMES))
def test_a_hostile_split_name_is_refused_and_nothing_is_written(tmp_path, demo_ids, variant):
    pytest.importorskip("datasets", reason="the 'hf' extra (datasets) is not installed")
    name = HOSTILE_SPLIT_NAMES[variant].replace("{tmp}", str(tmp_path))
    plan = _plan(tmp_path / "work", {"train": demo_ids[:2], name: demo_ids[2:]})
    before = _files_under(tmp_path)
    result = _export(plan, tmp_path / "work" / "out")
    assert result.exit_code == EXIT_ERROR, result.output
    assert f"{plan}: field splits:" in result.output and "cannot be a file or folder name" in result.output
    assert "Traceback" not in result.output
    assert _files_under(tmp_path) == before  # nothing inside --out, nothing beside or above it (the absolute name too)


def test_two_split_names_differing_only_in_case_are_refused(tmp_path, demo_ids):
    plan = _plan(tmp_path, {"train": demo_ids[:2], "Train": demo_ids[2:]})
    result = _export(plan, tmp_path / "out")
    assert result.exit_code == EXIT_ERROR and "differ only in case" in result.output, result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [
    ["export", "--format", "hf", "--kind", "samples", "--all-splits"],
    ["tasks", "--split", "train"],
    ["export", "--split", "train"],
])
@pytest.mark.parametrize("splits, problem", [
    (lambda ids: {"train": ids[:2], "test": ids[1:]}, "in splits 'train' and 'test'"),
    (lambda ids: {"train": [ids[0], *ids[:2]], "test": ids[2:]}, "twice in split 'train'"),
    (lambda ids: {"train": ids, "dev": []}, "field splits.dev: an empty split"),
])
def test_a_sample_in_two_splits_or_an_empty_split_is_refused_when_the_plan_is_read(tmp_path, demo_ids, command,
                                                                                     splits, problem):
    plan = _plan(tmp_path, splits(demo_ids))
    result = invoke_main([*command, "--splits", str(plan), "--out", str(tmp_path / "out")] if command[0] == "export"
                         else [*command, "--splits", str(plan)])
    assert result.exit_code == EXIT_ERROR, result.output
    assert str(plan) in result.output and problem in result.output
    assert not (tmp_path / "out").exists()


def test_rescue_splits_never_writes_an_empty_split(tmp_path):
    # Four demo samples, three groups of couples: a dev share of 10% gets no group.
    out = tmp_path / "splits.json"
    result = invoke_main(["splits", "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    plan = json.loads(out.read_text())
    assert all(plan["splits"].values()) and plan["left_out"] == ["dev"]
    assert "dev: no session group fell to it" in result.output
    assert invoke_main(["tasks", "--split", "train", "--splits", str(out)]).exit_code == 0


def test_plain_split_names_still_export(tmp_path, demo_ids):
    datasets = pytest.importorskip("datasets", reason="the 'hf' extra (datasets) is not installed")
    plan = _plan(tmp_path, {"train 2026": demo_ids[:2], "held-out.v1": demo_ids[2:]})
    result = _export(plan, tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert set(datasets.load_from_disk(str(tmp_path / "out"))) == {"train 2026", "held-out.v1"}
