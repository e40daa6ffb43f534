"""The paper's analyses: position bins, transitions, distributions, confusion, per-label accuracy, tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from rescue.runs.results import ModelResults, RunResults, StoredConfig
from rescue.report import analyses
from rescue.report.columns import COLUMNS
from rescue.report.leaderboard import (
    Cell,
    Leaderboard,
    LeaderRow,
    latex_escape,
    to_latex,
    to_markdown,
)
from rescue.report.outcomes import FAILED_LABEL, outcome
from rescue.report.runs import ReportError, System, load_run
from rescue.report.summary import terminal_leaderboard
from rescue.tasks.base import PredictionRecord


def rec(task: str, sample: str, row: int, gold, pred, *, scenario: str = "couple", model: str = "m",
        status: str = "ok") -> PredictionRecord:
    return PredictionRecord(model=model, task=task, instance_id=f"{sample}#row{row}", sample_id=sample, scenario=scenario,
                            row_index=row, gold=gold, prediction=pred if status == "ok" else None, status=status)


def system(label: str, records: list[PredictionRecord]) -> System:
    return System(label, label, "dialogue", Path("run"), StoredConfig(), ModelResults(), records)


@pytest.mark.parametrize(("row", "n_rows", "expected"), [(1, 11, 0), (2, 11, 1), (4, 11, 3), (11, 11, 9), (10, 11, 9),
                                                         (1, 1, 0), (50, 100, 4), (51, 100, 5)])
def test_position_bin_uses_normalised_row_position(row, n_rows, expected):
    assert analyses.position_bin(row, n_rows) == expected


def test_rpp_accuracy_by_position_counts_each_bin():
    records = [rec("rpp", "s", 1, "a", ["a"]), rec("rpp", "s", 11, "a", ["b"]), rec("rpp", "s", 10, "a", ["a"])]
    frame = analyses.accuracy_by_position([system("m", records)], {"s": 11}, "rpp")
    first = frame[frame["bin"] == 0].iloc[0]
    last = frame[frame["bin"] == 9].iloc[0]
    assert (first["instances"], first["accuracy"]) == (1, 1.0)
    assert (last["instances"], last["correct"], last["accuracy"]) == (2, 1, 0.5)
    assert last["se"] == pytest.approx(0.5 / 2**0.5)
    assert frame[frame["bin"] == 5].iloc[0]["instances"] == 0


def test_transition_matrix_is_row_normalised_without_self_transitions():
    matrix = analyses.transition_matrix([["a", "a", "b", "a", "c"], ["b", "c"]], ["a", "b", "c"])
    assert matrix.loc["a", "a"] == 0.0
    assert matrix.loc["a"].tolist() == pytest.approx([0.0, 0.5, 0.5])
    assert matrix.loc["b"].tolist() == pytest.approx([0.5, 0.0, 0.5])
    assert matrix.loc["c"].sum() == 0.0  # no outgoing transition


def test_rpp_transitions_follow_row_order_and_skip_failures():
    records = [rec("rpp", "s", 3, "repair_softening", ["attack_attack"]), rec("rpp", "s", 1, "pursue_withdraw", ["pursue_withdraw"]),
               rec("rpp", "s", 2, "attack_attack", None, status="parse_error")]
    matrices = analyses.transitions([system("m", records)], "rpp")
    gold = matrices[("gold", "couple")]
    assert gold.loc["pursue_withdraw", "attack_attack"] == 1.0 and gold.loc["attack_attack", "repair_softening"] == 1.0
    predicted = matrices[("m", "couple")]
    assert predicted.loc["pursue_withdraw", "attack_attack"] == 1.0  # the failed row 2 is skipped
    assert list(gold.index[:3]) == ["pursue_withdraw", "attack_attack", "withdraw_withdraw"]  # taxonomy order


def test_confusion_matrix_has_a_failure_column_and_stp_uses_roles():
    records = [rec("ssp", "s", 1, "track", ["track", "join"]), rec("ssp", "s", 2, "track", ["join"]),
               rec("ssp", "s", 3, "join", None, status="missing")]
    matrix = analyses.confusion_matrix(records, "ssp", "couple")
    assert matrix.loc["track", "track"] == 1 and matrix.loc["track", "join"] == 1 and matrix.loc["join", FAILED_LABEL] == 1
    assert int(matrix.to_numpy().sum()) == 3
    stp = [rec("stp", "s", 1, "Couple", ["Alex"]), rec("stp", "s", 2, "Alex", ["Alex"])]
    roles = analyses.confusion_matrix(stp, "stp", "couple")
    assert roles.loc["group", "individual"] == 1 and roles.loc["individual", "individual"] == 1


def test_per_label_accuracy_and_gold_distribution():
    records = [rec("rpp", "s", 1, "a", ["a"]), rec("rpp", "s", 2, "a", ["b"]), rec("rpp", "f", 1, "b", ["b"], scenario="family")]
    per_label = analyses.per_label_accuracy([system("m", records)], "rpp")
    row = per_label[(per_label["label"] == "a")].iloc[0]
    assert (row["instances"], row["correct"], row["accuracy"]) == (2, 1, 0.5)
    distribution = analyses.gold_distributions([system("m", records), system("n", records)])
    couple = distribution[(distribution["task"] == "rpp") & (distribution["scenario"] == "couple")]
    assert couple["count"].tolist() == [2]  # instances are counted once across systems
    assert couple["share"].tolist() == [1.0]


def test_outcomes():
    assert outcome(rec("itp", "s", 1, "yes", "yes")) == "correct"
    assert outcome(rec("rpp", "s", 1, "a", ["b", "a"])) == "wrong"
    assert outcome(rec("rpp", "s", 1, "a", None, status="refused")) == "failed"
    assert outcome(rec("er", "s", 1, {"emotion": "x", "intensity": 3}, {"emotion": "y", "intensity": 3})) == "open"


def test_strategy_preferences_per_system_and_scenario():
    records = [rec("ssp", "s", k, gold, [pred]) for k, (gold, pred) in
               enumerate([("track", "join"), ("evoke", "join"), ("join", "track"), ("reframe", "join")], start=1)]
    frame = analyses.preferences([system("m", records)], "ssp")
    strengths = frame.set_index("label")["strength"]
    assert strengths["join"] == strengths.max()
    assert frame["bias"].nunique() == 1 and frame["bias"].iloc[0] > 0


def _board() -> Leaderboard:
    columns = [c for c in COLUMNS if c.task in ("itp", "rpp")]
    row = LeaderRow("m_1", "all", {c.id: Cell(0.5, 0.4, 0.6) for c in columns}, {"itp": (10, 1), "rpp": (5, 0)})
    row.cells["rpp.accuracy"].significant = True
    return Leaderboard(columns, [row], "ref", 0.95, 0.05, 100)


def test_markdown_and_latex_tables_show_cis_and_markers():
    board = _board()
    markdown = to_markdown(board)
    assert "| m_1 | all | 50.00 [40.00, 60.00] |" in markdown and "50.00† [40.00, 60.00]" in markdown
    assert "ITP 10/1 RPP 5/0" in markdown
    latex = to_latex(board)
    assert r"m\_1 & all & 50.00 & 50.00 & 50.00 & 50.00$^\dagger$ \\" in latex
    assert r"\begin{tabular}" in latex and latex.count("[40.00, 60.00]") == 4
    assert latex_escape("a_b&c%") == r"a\_b\&c\%"


def test_terminal_leaderboard_reads_results_json():
    results = RunResults.model_validate({"config": {}, "models": {"baseline/majority": {
        "itp": {"all": {"f1": 0.6667, "precision": 0.5, "recall": 1.0, "instances": 58, "failures": 2}},
        "rpp": {"all": {"accuracy": 0.387, "instances": 31, "failures": 0}}}}})
    table = terminal_leaderboard(results)
    headers = [c.header for c in table.columns]
    assert headers == ["model", "ITP\nF1", "RPP\nAcc", "fail"]
    cells = [next(iter(c.cells)) for c in table.columns]
    assert cells == ["baseline/majority", "66.67", "38.70", "2/89"]


def test_bad_run_directories_are_reported_with_file_line_and_field(tmp_path):
    with pytest.raises(ReportError, match="results.json: missing"):
        load_run(tmp_path)
    (tmp_path / "results.json").write_text('{"config": {}, "models": {"m": {}}}')
    (tmp_path / "predictions.jsonl").write_text(
        '{"model":"m","task":"itp","instance_id":"s#after_row1","sample_id":"s","scenario":"couple","row_index":1,'
        '"gold":"no","status":"ok"}\n{"model":"m","task":"itp"}\n')
    with pytest.raises(ReportError, match=r"predictions.jsonl:2: field instance_id: Field required"):
        load_run(tmp_path)
