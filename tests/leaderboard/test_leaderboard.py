"""The public leaderboard (issue #45): `rescue leaderboard add` refuses what must not enter a site, `build` writes a
static site from verified bundles with tie groups and unranked references, `rank` places a local run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _cli import invoke_main
from submission_support import members, model_run, rewrite, submit

from rescue.leaderboard.entries import CHANGELOG, RELEASE, read_changelog
from rescue.leaderboard.site import SCHEMA
from rescue.report.columns import COLUMNS
from rescue.runs.results import RESULTS


def test_the_site_has_every_page_and_download_and_asks_nothing_of_anywhere_else(site: Path) -> None:
    for name in ("index.html", "changelog.html", "leaderboard.json", "leaderboard.csv", "cost_score.svg",
                 "static/site.css", "static/site.js"):
        assert (site / name).is_file(), name
    for entry in ("model-a", "model-b", "baselines", "people"):
        folder = site / "entries" / entry
        for name in ("index.html", f"{entry}.rescue.zip", "answers.jsonl", "predictions.jsonl", "results.json",
                     "verdict.json", "verdict.md", "manifest.json"):
            assert (folder / name).is_file(), (entry, name)
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "http://" not in text and "https://" not in text, page  # no CDN, no font, no request elsewhere
    assert "http" not in (site / "static" / "site.css").read_text() + (site / "static" / "site.js").read_text()


def test_people_and_published_rows_are_marked_and_never_ranked(site: Path) -> None:
    board = json.loads((site / "leaderboard.json").read_text())
    assert board["schema"] == SCHEMA and board["release"]["data_sha256"]
    kinds = {row["kind"] for row in board["rows"]}
    assert kinds == {"model", "baseline", "human", "published"}
    people = {row["system"] for row in board["rows"] if row["kind"] == "human"}
    assert {"human/ann", "human/bob", "human/pooled", "human/all/average"} <= people  # persons, panel, average
    for row in board["rows"]:
        ranks = [cell["rank"] for cell in row["cells"].values()]
        if row["kind"] in ("human", "published"):
            assert not row["ranked"] and ranks == [None] * len(ranks), row["system"]
        else:
            assert row["ranked"]
    pooled = [r for r in board["rows"] if r["scope"] == "all" and r["ranked"]]
    column = "itp.f1"
    ranked = sorted((r for r in pooled if r["cells"].get(column, {}).get("value") is not None),
                    key=lambda r: -r["cells"][column]["value"])
    assert ranked[0]["cells"][column]["rank"] == 1
    ranks = [r["cells"][column]["rank"] for r in ranked]
    assert ranks == sorted(ranks)  # a tie group never ranks a worse value above a better one
    for position, row in enumerate(ranked, 1):
        assert row["cells"][column]["rank"] <= position  # a rank is the group's first position
    assert {r["system"] for r in pooled} >= {"scripted-model", "other-model", "baseline/majority"}


def test_the_csv_and_json_carry_every_value_with_its_interval(site: Path) -> None:
    board = json.loads((site / "leaderboard.json").read_text())
    lines = (site / "leaderboard.csv").read_text().splitlines()
    assert lines[0].split(",")[:6] == ["system", "entry", "kind", "scope", "level", "column"]
    cells = sum(len(r["cells"]) for r in board["rows"])
    assert len(lines) - 1 == cells
    columns = {c["id"] for c in board["columns"]}
    assert columns <= {c.id for c in COLUMNS}


def test_the_changelog_says_what_was_added_when(entries: Path, site: Path) -> None:
    events = read_changelog(entries)
    assert [e.entry for e in events] == ["model-a", "model-b", "baselines", "people"]
    assert {e.event for e in events} == {"added"} and all(e.level == "checked" for e in events)
    page = (site / "changelog.html").read_text()
    assert all(f"entries/{e.entry}/index.html" in page for e in events)


# --- adding: what a site refuses ---------------------------------------------------------------------------------


def _copy_entries(entries: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "entries"
    shutil.copytree(entries, folder)
    return folder


def _add(bundle: Path, folder: Path, data: Path):  # type: ignore[no-untyped-def]
    return invoke_main(["leaderboard", "add", str(bundle), "--to", str(folder), "--data", str(data)])


def test_a_bundle_that_does_not_verify_is_refused(entries: Path, bundles: dict[str, Path], board_data: Path,
                                                  tmp_path: Path) -> None:
    folder = _copy_entries(entries, tmp_path)
    before = sorted(p.name for p in folder.iterdir())
    value = json.loads(members(bundles["model-a"])[RESULTS])
    value["models"]["scripted-model"]["itp"]["all"]["f1"] = 0.99
    forged = rewrite(bundles["model-a"], tmp_path / "forged.rescue.zip",
                     {RESULTS: (json.dumps(value) + "\n").encode()}, rehash=True)
    refused = _add(forged, folder, board_data)
    assert refused.exit_code == 2 and "does not verify" in refused.output and "itp all: f1" in refused.output
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written


def test_a_duplicate_is_refused(entries: Path, bundles: dict[str, Path], board_data: Path, tmp_path: Path) -> None:
    folder = _copy_entries(entries, tmp_path)
    again = tmp_path / "model-a-again.rescue.zip"
    shutil.copyfile(bundles["model-a"], again)
    refused = _add(again, folder, board_data)
    assert refused.exit_code == 2 and "scripted-model" in refused.output, refused.output
    same_name = _add(bundles["model-a"], folder, board_data)
    assert same_name.exit_code == 2 and "already in" in same_name.output


def test_another_release_or_rendering_is_another_site(entries: Path, board_data: Path, tmp_path: Path) -> None:
    folder = _copy_entries(entries, tmp_path)
    other_data = tmp_path / "one.jsonl"
    other_data.write_text(board_data.read_text().splitlines(keepends=True)[0])
    run = tmp_path / "other-release"
    made = invoke_main(["run", "--model", "baseline/majority", "--data", str(other_data), "--no-bertscore", "--out",
                        str(run), "-q"])
    assert made.exit_code == 0, made.output
    refused = _add(submit(run, tmp_path / "other-release.rescue.zip"), folder, other_data)
    assert refused.exit_code == 2 and "another release is another site" in refused.output

    rendered = tmp_path / "context"
    made = invoke_main(["run", "--model", "baseline/majority", "--data", str(board_data), "--context-size", "1",
                        "--no-bertscore", "--out", str(rendered), "-q"])
    assert made.exit_code == 0, made.output
    refused = _add(submit(rendered, tmp_path / "context.rescue.zip"), folder, board_data)
    assert refused.exit_code == 2 and "another rendering is another site" in refused.output
    assert json.loads((folder / RELEASE).read_text()) == json.loads((entries / RELEASE).read_text())
    assert (folder / CHANGELOG).read_text() == (entries / CHANGELOG).read_text()


def test_build_refuses_an_out_that_is_no_site_and_a_verdict_of_another_file(entries: Path, tmp_path: Path) -> None:
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep me")
    refused = invoke_main(["leaderboard", "build", str(entries), "--out", str(other)])
    assert refused.exit_code == 2 and "not a site" in refused.output
    assert (other / "mine.txt").read_text() == "keep me"
    folder = _copy_entries(entries, tmp_path)
    bundle = folder / "model-b.rescue.zip"
    bundle.write_bytes(bundle.read_bytes() + b"\0")
    refused = invoke_main(["leaderboard", "build", str(folder), "--out", str(tmp_path / "site")])
    assert refused.exit_code == 2 and "model-b" in refused.output
    assert not (tmp_path / "site").exists()


# --- rank: a local run placed on the site ----------------------------------------------------------------------


@pytest.mark.parametrize("against", ["site", "file"])
def test_rank_places_a_local_run_with_its_interval_and_tie_group(site: Path, board_data: Path, tmp_path: Path,
                                                                 against: str) -> None:
    run = model_run(tmp_path, board_data, model="local-model", served="local-v1", salt="c")
    target = site if against == "site" else site / "leaderboard.json"
    placed = invoke_main(["leaderboard", "rank", str(run), "--against", str(target)])
    assert placed.exit_code == 0, placed.output
    assert "local-model" in placed.output and "ITP F1" in placed.output and " of " in placed.output
    assert ("overlapping intervals" in placed.output) == (against == "file")


def test_rank_refuses_a_run_on_another_release(site: Path, board_data: Path, tmp_path: Path) -> None:
    other_data = tmp_path / "one.jsonl"
    other_data.write_text(board_data.read_text().splitlines(keepends=True)[0])
    run = tmp_path / "run"
    made = invoke_main(["run", "--model", "baseline/majority", "--data", str(other_data), "--no-bertscore", "--out",
                        str(run), "-q"])
    assert made.exit_code == 0
    refused = invoke_main(["leaderboard", "rank", str(run), "--against", str(site)])
    assert refused.exit_code == 2 and "other data" in refused.output


# --- what the folder and the site read from others ---------------------------------------------------------------


def test_markup_and_paths_in_names_are_escaped_in_every_page(board_data: Path, bundles: dict[str, Path],
                                                             tmp_path: Path) -> None:
    from rescue.runs.folder import read_run

    run = tmp_path / "run"
    made = invoke_main(["run", "--model", "baseline/majority", "--data", str(board_data), "--no-bertscore", "--out",
                        str(run), "-q"])
    assert made.exit_code == 0
    read_run(run)
    hostile = tmp_path / "we<ird>..%2f.rescue.zip"
    submit(run, hostile, "--submitter", "<script>alert(1)</script>", "--notes", "<img src=x onerror=alert(2)>")
    folder = tmp_path / "entries"
    added = invoke_main(["leaderboard", "add", str(hostile), "--to", str(folder), "--data", str(board_data)])
    assert added.exit_code == 0, added.output
    built = invoke_main(["leaderboard", "build", str(folder), "--out", str(tmp_path / "site")])
    assert built.exit_code == 0, built.output
    pages = list((tmp_path / "site").rglob("*.html"))
    assert [p.parent.name for p in pages if p.parent.parent.name == "entries"] == ["we_ird_.._2f"]
    for page in pages:
        text = page.read_text()
        assert "<script>alert" not in text and "<img src=x" not in text, page
    entry = (tmp_path / "site" / "entries" / "we_ird_.._2f" / "index.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in entry


@pytest.mark.parametrize("content,named", [
    ('{"schema": 99, "rows": []}', "schema"),
    ('["not", "a", "board"]', "not a leaderboard.json"),
    ('{"schema": 1, "rows": [' * 1 + "[" * 5000 + "]" * 5000 + "]}", "nested"),
    ('{"schema": 1, "rows": [], "x": NaN}', "x"),
    ("", "not JSON"),
])
def test_rank_refuses_a_leaderboard_json_it_cannot_trust(site: Path, bundles: dict[str, Path], tmp_path: Path,
                                                         content: str, named: str) -> None:
    board = tmp_path / "leaderboard.json"
    board.write_text(content)
    run = tmp_path / "run"
    with __import__("zipfile").ZipFile(bundles["baselines"]) as archive:
        run.mkdir()
        for name in ("results.json", "predictions.jsonl"):
            (run / name).write_bytes(archive.read(name))
    refused = invoke_main(["leaderboard", "rank", str(run), "--against", str(board)])
    assert refused.exit_code == 2, refused.output
    assert named in refused.output and "Traceback" not in refused.output


@pytest.mark.parametrize("name,content", [
    (RELEASE, '{"data_sha256": "abc", "prompts": {}, "created": "x"}'),
    (RELEASE, "[1, 2"),
    (CHANGELOG, '{"time": "t", "event": "added"}\n'),
    (CHANGELOG, "not json\n"),
])
def test_a_folder_file_edited_into_another_shape_is_refused(entries: Path, bundles: dict[str, Path], board_data: Path,
                                                            tmp_path: Path, name: str, content: str) -> None:
    folder = _copy_entries(entries, tmp_path)
    (folder / name).write_text(content)
    again = tmp_path / "extra.rescue.zip"
    shutil.copyfile(bundles["baselines"], again)
    refused = _add(again, folder, board_data)
    assert refused.exit_code == 2 and name in refused.output, refused.output
    assert not (folder / "extra.rescue.zip").exists()
