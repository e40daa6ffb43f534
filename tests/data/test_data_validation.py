"""`rescue validate` and the loader's fail-fast behaviour: one test per malformed-input case, exact message and exit code."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from data_helpers import couple_record, demo_records, run_cli, write_jsonl

from rescue.data.errors import DataError
from rescue.data.loading import load_samples
from rescue.data.validation import validate_path

SID = "demo_couple_riley_and_sam/001_session"


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """A mutation setting ``rows.<i>.<key>...`` (dotted, numbers index lists) to ``value``."""

    def mutate(record: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node: Any = record
        for part in parents:
            node = node[part]
        node[last] = value

    return mutate


def _delete(path: str) -> Callable[[dict], None]:
    def mutate(record: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node: Any = record
        for part in parents:
            node = node[part]
        del node[last]

    return mutate


# (case id, mutation, the exact issue line after "FILE:1: ")
ERROR_CASES = [
    ("missing field", _delete("rows.1.primary_speaker"), f"{SID} row 2: primary_speaker: missing"),
    ("missing rows", _delete("rows"), f"{SID}: rows: missing"),
    ("mistyped time", _set("rows.0.start_time", "0:00"), f"{SID} row 1: start_time: expected a number (got '0:00')"),
    ("mistyped target", _set("rows.3.target", "Sam"), f"{SID} row 4: target: expected a list (got 'Sam')"),
    (
        "mistyped intensity",
        _set("rows.0.internal_emotion.0.intensity", "7"),
        f"{SID} row 1: internal_emotion[0].intensity: expected an integer or a number (got '7')",
    ),
    ("bad scenario", _set("scenario", "dyad"), f"{SID}: scenario: input should be 'couple' or 'family' (got 'dyad')"),
    ("negative time", _set("rows.0.start_time", -1.5), f"{SID} row 1: start_time: negative time -1.5"),
    (
        "end before start",
        _set("rows.1.end_time", 5.0),
        f"{SID} row 2: end_time: end_time 5.0 is before start_time {couple_record()['rows'][1]['start_time']}",
    ),
    (
        "decreasing start",
        _set("rows.2.start_time", 1.0),
        (
            f"{SID} row 3: start_time: start_time 1.0 is earlier than the previous row's start_time "
            f"{couple_record()['rows'][1]['start_time']}"
        ),
    ),
    (
        "intensity above 10",
        _set("rows.0.internal_emotion.0.intensity", 11),
        f"{SID} row 1: internal_emotion[0].intensity: 11 is outside 0-10",
    ),
    (
        "intensity below 0",
        _set("rows.0.internal_emotion.0.intensity", -1),
        f"{SID} row 1: internal_emotion[0].intensity: -1 is outside 0-10",
    ),
    (
        "speaker not a participant",
        _set("rows.0.primary_speaker", "Robin"),
        f"{SID} row 1: primary_speaker: 'Robin' is not one of participants Riley, Sam, Therapist or Couple",
    ),
    (
        "target not a participant",
        _set("rows.2.target", ["Sam", "Family"]),
        f"{SID} row 3: target[1]: 'Family' is not one of participants Riley, Sam, Therapist or Couple",
    ),
    (
        "strategy target not a participant",
        _set("rows.2.support_strategy.0.target", ["Riley's mother"]),
        (
            f"{SID} row 3: support_strategy[0].target[0]: \"Riley's mother\" is not one of participants Riley, Sam, "
            "Therapist or Couple"
        ),
    ),
    (
        "viewpoint target not a participant",
        _set("rows.0.viewpoints_attitudes.0.target", "Boss"),
        f"{SID} row 1: viewpoints_attitudes[0].target: 'Boss' is not one of participants Riley, Sam, Therapist or Couple",
    ),
    (
        "family label in a couple sample",
        _set("rows.1.relation_pattern", "boundary_hierarchy_strain"),
        f"{SID} row 2: relation_pattern: 'boundary_hierarchy_strain' is not a couple relation pattern",
    ),
    (
        "unknown cycle state",
        _set("rows.2.relation_cycle_state", "stonewalling"),
        f"{SID} row 3: relation_cycle_state: 'stonewalling' is not a couple relation pattern",
    ),
    (
        "family strategy in a couple sample",
        _set("rows.2.support_strategy.0.strategy_type", "boundary"),
        f"{SID} row 3: support_strategy[0].strategy_type: 'boundary' is not a couple support strategy",
    ),
    (
        "unknown utterance type",
        _set("rows.0.utterance_type", "complaint"),
        f"{SID} row 1: utterance_type: 'complaint' is not an utterance type",
    ),
    (
        "evidence row past the end",
        _set("rows.1.relation_pattern_evidence_rows", [1, 25]),
        f"{SID} row 2: relation_pattern_evidence_rows[1]: row 25 is out of range 1-24",
    ),
    (
        "negative evidence row",
        _set("rows.2.relation_cycle_evidence_rows", [-2]),
        f"{SID} row 3: relation_cycle_evidence_rows[0]: row -2 is out of range 1-24",
    ),
    (
        "row numbers out of order",
        _set("rows.4.row_index", 7),
        f"{SID} row 5: row_index: expected 5 (rows are numbered from 1 in order), got 7",
    ),
    ("empty rows", _set("rows", []), f"{SID}: rows: a sample needs at least one row"),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_each_error_is_reported_exactly_and_exits_2(tmp_path, capsys, monkeypatch, mutate, expected):
    record = couple_record()
    mutate(record)
    data = write_jsonl(tmp_path / "bad.jsonl", [record])

    code, out, err = run_cli(["validate", "--data", str(data)], capsys, monkeypatch)

    assert code == 2
    assert err.splitlines() == [f"{data}:1: {expected}"]
    assert "1 sample(s) read, 0 valid, 1 error(s)" in out


def test_invalid_json_and_non_objects_are_located_by_line(tmp_path, capsys, monkeypatch):
    data = write_jsonl(tmp_path / "bad.jsonl", [couple_record(), '{"sample_id": ', "null", "[1, 2]"])

    code, _, err = run_cli(["validate", "--data", str(data)], capsys, monkeypatch)

    assert code == 2
    assert err.splitlines() == [
        f"{data}:2: <no sample_id>: invalid JSON: Expecting value at column 15",
        f"{data}:3: <no sample_id>: a sample must be a JSON object (got null)",
        f"{data}:4: <no sample_id>: a sample must be a JSON object (got [1, 2])",
    ]


def test_bytes_that_are_not_utf8_are_an_error(tmp_path):
    data = tmp_path / "latin1.jsonl"
    data.write_bytes(json.dumps(couple_record()).encode() + b"\n" + b'{"sample_id": "caf\xe9"}\n')
    (issue,) = validate_path(data).issues
    assert str(issue) == f"{data}:2: <no sample_id>: not UTF-8 text (byte 19 of the line)"


def test_duplicate_sample_ids_point_at_the_first(tmp_path, capsys, monkeypatch):
    data = write_jsonl(tmp_path / "dup.jsonl", [couple_record(), couple_record()])

    code, _, err = run_cli(["validate", "--data", str(data)], capsys, monkeypatch)

    assert code == 2
    assert err.splitlines() == [f"{data}:2: {SID}: sample_id: duplicate (first seen at {data}:1)"]


def test_every_error_is_listed_not_just_the_first(tmp_path):
    record = couple_record()
    record["rows"][0]["internal_emotion"][0]["intensity"] = 12
    record["rows"][5]["primary_speaker"] = "Robin"
    report = validate_path(write_jsonl(tmp_path / "two.jsonl", [record, {"sample_id": "x"}]))
    assert [(i.row, i.field) for i in report.errors] == [
        (1, "internal_emotion[0].intensity"),
        (6, "primary_speaker"),
        (None, "scenario"),
        (None, "rows"),
    ]


def test_missing_path_is_an_error(tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(["validate", "--data", str(tmp_path / "nope.jsonl")], capsys, monkeypatch)
    assert code == 2
    assert err.splitlines() == [f"{tmp_path / 'nope.jsonl'}: no such file or directory"]


# --- warnings ----------------------------------------------------------------------------------------------

MOJIBAKE_DASH = "â\u0080\u0094"  # "—" encoded as UTF-8, then read as Latin-1


def test_mojibake_is_a_warning_and_fix_writes_a_new_file(tmp_path, capsys, monkeypatch):
    record = couple_record()
    record["rows"][0]["dialogue_cleaned"] = f"Every night{MOJIBAKE_DASH}the same thing."
    data = write_jsonl(tmp_path / "moji.jsonl", [record])
    original = data.read_bytes()

    code, out, err = run_cli(["validate", "--data", str(data), "--fix"], capsys, monkeypatch)

    assert code == 0 and err == ""
    assert (
        f"{data}:1: {SID} row 1: dialogue_cleaned: mis-encoded text {'Every night' + MOJIBAKE_DASH + 'the same '!r}, "
        "probably 'Every night—the same ' (warning)"
    ) in out.splitlines()
    assert "validate --fix" not in out  # with --fix given, no hint to give it
    _, hinted, _ = run_cli(["validate", "--data", str(data)], capsys, monkeypatch)
    assert hinted.count("--fix") == 1 and f"1 mis-encoded text(s): `rescue validate --data {data} --fix`" in hinted
    assert "1 valid, 0 error(s), 1 warning(s)" in out
    fixed = tmp_path / "moji.fixed.jsonl"
    assert f"wrote {fixed} (1 record(s) repaired)" in out
    assert data.read_bytes() == original
    repaired = json.loads(fixed.read_text(encoding="utf-8"))
    assert repaired["rows"][0]["dialogue_cleaned"] == "Every night—the same thing."
    record["rows"][0]["dialogue_cleaned"] = "Every night—the same thing."
    assert repaired == record
    assert validate_path(fixed).issues == []


def test_fix_refuses_to_overwrite_its_input(tmp_path, capsys, monkeypatch):
    data = write_jsonl(tmp_path / "d.jsonl", [couple_record()])
    code, _, err = run_cli(["validate", "--data", str(data), "--fix", "--out", str(data)], capsys, monkeypatch)
    assert code == 2
    assert "--fix never overwrites its input" in err


def test_fix_leaves_correct_typography_alone(tmp_path):
    record = couple_record()
    record["rows"][0]["dialogue_cleaned"] = "It’s “fine” — café, naïve, ﬁne."
    data = write_jsonl(tmp_path / "ok.jsonl", [record])
    assert validate_path(data).issues == []
    code_dest = tmp_path / "out.jsonl"
    from rescue.data.encoding import fix_path

    assert fix_path(data, code_dest) == (code_dest, 0)
    assert code_dest.read_bytes() == data.read_bytes()


def test_evidence_row_zero_and_stray_cue_person_are_warnings(tmp_path):
    record = couple_record()
    record["rows"][1]["relation_pattern_evidence_rows"] = [0, 1, 2]
    record["rows"][0]["body_posture"][0]["person"] = "Waiter"
    report = validate_path(write_jsonl(tmp_path / "w.jsonl", [record]))
    assert report.errors == [] and len(report.samples) == 1
    assert [str(w).split(": ", 1)[1] for w in report.warnings] == [
        (
            f"{SID} row 1: body_posture[0].person: 'Waiter' is not one of participants Riley, Sam, Therapist or "
            "Couple (warning)"
        ),
        f"{SID} row 2: relation_pattern_evidence_rows[0]: row 0 does not exist (rows are numbered from 1) (warning)",
    ]


def test_family_label_in_a_couple_sample_warns_about_the_scenario(tmp_path):
    record = couple_record()
    record["participants"].append("Family")  # keeps the name checks quiet; the scenario rule still sees it
    record["rows"][2]["target"] = ["Family"]
    report = validate_path(write_jsonl(tmp_path / "s.jsonl", [record]))
    assert [w.field for w in report.warnings] == ["scenario"]


# --- other commands fail fast with the same messages ---------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["stats"], ["stats", "--format", "json"], ["tasks"], ["run", "--quiet", "--out", "RUN"], ["report", "RUN", "--out", "R"]],
)
def test_other_commands_fail_fast_with_the_same_messages(tmp_path, capsys, monkeypatch, command):
    record = couple_record()
    record["rows"][0]["internal_emotion"][0]["intensity"] = 11
    data = write_jsonl(tmp_path / "bad.jsonl", [demo_records()[1], record])
    if command[0] == "report":  # a good run, reported against bad data
        run_cli(["run", "--quiet", "--no-bertscore", "--tasks", "itp", "--out", str(tmp_path / "RUN")], capsys, monkeypatch)
    command = [str(tmp_path / part) if part in ("RUN", "R") else part for part in command]

    code, out, err = run_cli([*command, "--data", str(data)], capsys, monkeypatch)

    assert code == 2 and out == ""
    if command[0] == "run":
        assert not (tmp_path / "RUN").exists()  # nothing is written for bad data
    assert f"{data}:2: {SID} row 1: internal_emotion[0].intensity: 11 is outside 0-10" in err
    assert "Run `rescue validate --data PATH` for the full list." in err


def test_load_samples_raises_with_every_error(tmp_path):
    record = couple_record()
    record["rows"][0]["start_time"] = -1
    with pytest.raises(DataError) as info:
        load_samples(write_jsonl(tmp_path / "bad.jsonl", [record, "oops"]))
    assert [str(i) for i in info.value.issues] == [
        f"{tmp_path / 'bad.jsonl'}:1: {SID} row 1: start_time: negative time -1.0",
        f"{tmp_path / 'bad.jsonl'}:2: <no sample_id>: invalid JSON: Expecting value at column 1",
    ]


# --- real and demo data --------------------------------------------------------------------------------------


def test_demo_data_is_clean(capsys, monkeypatch):
    code, out, err = run_cli(["validate"], capsys, monkeypatch)
    assert code == 0 and err == ""
    assert out.strip() == "the demo dataset: 4 sample(s) read, 4 valid, 0 error(s), 0 warning(s)"


def test_real_samples_have_warnings_but_no_errors(real_data_path, capsys, monkeypatch):
    code, _, err = run_cli(["validate", "--data", str(real_data_path)], capsys, monkeypatch)
    assert code == 0 and err == ""
    report = validate_path(real_data_path)
    assert len(report.samples) == 35 and report.errors == []
    mojibake = {(w.sample_id, w.row) for w in report.warnings if "mis-encoded" in w.message}
    assert len(mojibake) == 20  # the 20 affected rows named in the data README
    row_zero = [w for w in report.warnings if "row 0 does not exist" in w.message]
    assert len(row_zero) == 5
    assert len(report.warnings) == len(row_zero) + sum(1 for w in report.warnings if "mis-encoded" in w.message)


def test_fixing_the_real_samples_removes_every_mojibake_warning(real_data_path, tmp_path):
    from rescue.data.encoding import fix_path

    dest, changed = fix_path(real_data_path, tmp_path / "fixed.jsonl")
    assert changed == 6  # samples (lines) containing mis-encoded text
    report = validate_path(dest)
    assert report.errors == [] and len(report.samples) == 35
    assert not [w for w in report.warnings if "mis-encoded" in w.message]
    before = [json.loads(line) for line in real_data_path.read_text(encoding="utf-8").splitlines()]
    after = [json.loads(line) for line in dest.read_text(encoding="utf-8").splitlines()]
    assert [r["sample_id"] for r in before] == [r["sample_id"] for r in after]


def test_a_directory_of_jsonl_files_loads_every_file(tmp_path):
    records = demo_records()
    write_jsonl(tmp_path / "a.jsonl", records[:2])
    (tmp_path / "more").mkdir()
    write_jsonl(tmp_path / "more" / "b.jsonl", records[2:])
    samples = load_samples(tmp_path)
    assert [s.sample_id for s in samples] == [r["sample_id"] for r in records]
    assert samples[2].origin_file == str(tmp_path / "more" / "b.jsonl")


def test_a_directory_of_per_sample_json_files_uses_the_authors_layout(tmp_path):
    for record in demo_records():
        stripped = {"rows": record["rows"]}  # the authors' per-sample files hold only rows
        group, name = record["sample_id"].split("/")
        (tmp_path / group).mkdir()
        (tmp_path / group / f"{name}.json").write_text(json.dumps(stripped), encoding="utf-8")
    (tmp_path / "manifest.json").write_text("{}", encoding="utf-8")  # the empty manifest the authors excluded
    family_dir = tmp_path / "family_therapy" / "007"
    family_dir.mkdir(parents=True)
    family = demo_records()[3]
    (family_dir / "merged.json").write_text(json.dumps({"rows": family["rows"]}), encoding="utf-8")

    samples = {s.sample_id: s for s in load_samples(tmp_path)}

    assert set(samples) == {r["sample_id"] for r in demo_records()} | {"family_therapy/007/merged"}
    assert samples["demo_couple_riley_and_sam/001_session"].scenario == "couple"
    assert samples["demo_couple_riley_and_sam/001_session"].participants == ["Riley", "Sam"]
    assert samples["demo_family_okafor/001_session"].scenario == "family"  # the group label Family is used
    assert samples["demo_family_okafor/001_session"].participants == ["Ngozi", "Emeka", "Ada"]
    assert samples["family_therapy/007/merged"].scenario == "family"


def test_a_broken_per_sample_json_file_is_located(tmp_path):
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "s.json").write_text('{\n  "rows": [\n    {"row_index": 1,,}\n  ]\n}\n', encoding="utf-8")
    (issue,) = validate_path(tmp_path).issues
    assert str(issue) == f"{tmp_path / 'g' / 's.json'}:3: <no sample_id>: invalid JSON: Expecting property name enclosed in double quotes at column 21"


def test_a_folder_without_sample_files_is_an_error(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here", encoding="utf-8")
    (issue,) = validate_path(tmp_path).issues
    assert str(issue) == f"{tmp_path}: no .jsonl or .json sample files found"


def test_fix_mirrors_a_folder_of_per_sample_files(tmp_path):
    from rescue.data.encoding import fix_path

    source = tmp_path / "raw"
    (source / "riley_and_sam").mkdir(parents=True)
    record = couple_record()
    record["rows"][2]["dialogue_cleaned"] = f"Can we slow down{MOJIBAKE_DASH}for a second?"
    (source / "riley_and_sam" / "001.json").write_text(json.dumps({"rows": record["rows"]}), encoding="utf-8")

    (warning,) = validate_path(source).warnings
    assert (warning.sample_id, warning.row, warning.field) == ("riley_and_sam/001", 3, "dialogue_cleaned")

    dest, changed = fix_path(source)
    assert (dest, changed) == (tmp_path / "raw.fixed", 1)
    fixed = json.loads((dest / "riley_and_sam" / "001.json").read_text(encoding="utf-8"))
    assert fixed["rows"][2]["dialogue_cleaned"] == "Can we slow down—for a second?"
    assert validate_path(dest).issues == []


def test_fix_needs_a_data_path(capsys, monkeypatch):
    code, _, err = run_cli(["validate", "--fix"], capsys, monkeypatch)
    assert code == 2
    assert "--fix needs --data PATH" in err
