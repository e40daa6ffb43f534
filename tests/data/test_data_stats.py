"""`rescue stats`: the paper's Table 3 definitions, checked on the real family samples and on the demo data."""

from __future__ import annotations

import json

import pytest
from data_helpers import run_cli

from rescue.data.models import THERAPIST
from rescue.data.stats import compute, table3_cells
from rescue.data.taxonomy import relation_taxonomy, strategy_taxonomy


def test_real_family_samples_reproduce_the_paper_exactly(real_samples):
    """All 17 family samples of the release are present, so the paper's family column must come out exactly."""
    cells = {row[0]: row[1:] for row in table3_cells(compute(real_samples))}
    # Paper Table 3, family: 17 / 239.9 / 1,204 / 14.11 / 70.82 / 4.06 / 47.1%
    assert cells["family"] == ["17", "239.9", "1,204", "14.11", "70.82", "4.06", "47.1%"]
    # Only 18 of the 174 couple samples are here; their speaker count already matches the paper's 3.00.
    assert cells["couple"][0] == "18" and cells["couple"][5] == "3.00"


def test_json_has_exactly_the_three_scopes_and_seven_keys(capsys, monkeypatch, real_data_path):
    code, out, _ = run_cli(["stats", "--data", str(real_data_path), "--format", "json"], capsys, monkeypatch)
    assert code == 0
    stats = json.loads(out)
    assert list(stats) == ["couple", "family", "all", "distributions", "groups"]
    keys = ["samples", "total_minutes", "total_turns", "avg_minutes", "avg_turns", "avg_speakers", "therapist_share"]
    for scope in ("couple", "family", "all"):
        assert list(stats[scope]) == keys
    assert stats["family"]["samples"] == 17 and stats["family"]["total_turns"] == 1204
    assert stats["family"]["therapist_share"] == pytest.approx(567 / 1204, abs=1e-4)
    assert stats["all"]["samples"] == 35 and stats["all"]["total_turns"] == 1756


def test_demo_statistics_follow_the_definitions(demo_samples):
    stats = compute(demo_samples).table3
    couples = [s for s in demo_samples if s.scenario == "couple"]
    assert stats["couple"]["samples"] == 3 and stats["family"]["samples"] == 1 and stats["all"]["samples"] == 4
    assert stats["couple"]["total_turns"] == sum(len(s.rows) for s in couples)
    assert stats["couple"]["total_minutes"] == pytest.approx(sum(s.rows[-1].end_time for s in couples) / 60)
    assert stats["couple"]["avg_speakers"] == 3.0  # two partners and the therapist
    assert stats["family"]["avg_speakers"] == 4.0  # three family members and the therapist
    therapist_rows = sum(1 for s in demo_samples for r in s.rows if r.speaker == THERAPIST)
    assert stats["all"]["therapist_share"] == pytest.approx(therapist_rows / stats["all"]["total_turns"])


def test_distributions_count_every_label_in_taxonomy_order(demo_samples):
    dists = compute(demo_samples).distributions
    for scenario in ("couple", "family"):
        assert list(dists[scenario]["support_strategy"]) == strategy_taxonomy(scenario).names
        assert all(dists[scenario]["support_strategy"].values())  # the demo uses every strategy
        assert list(dists[scenario]["relation_cycle_state"]) == relation_taxonomy(scenario).names
    couple_moves = sum(1 for s in demo_samples if s.scenario == "couple" for r in s.rows if r.support_strategy)
    assert sum(dists["couple"]["support_strategy"].values()) == couple_moves
    assert sum(dists["couple"]["support_target"].values()) == couple_moves
    assert set(dists["family"]["support_target"]) == {"individual", "group"}
    assert list(dists["couple"]["emotion_intensity"]) == [str(i) for i in range(11)]
    client_rows = sum(1 for s in demo_samples for r in s.rows if not r.is_therapist)
    assert sum(dists["couple"]["utterance_type"].values()) + sum(dists["family"]["utterance_type"].values()) == client_rows


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("table", "Dataset statistics (paper Table 3)"),
        ("markdown", "| family | 1 | 4.7 | 35 | 4.67 | 35.00 | 4.00 | 25.7% |"),
        ("latex", r"family & 1 & 4.7 & 35 & 4.67 & 35.00 & 4.00 & 25.7\% \\"),
    ],
)
def test_text_formats(capsys, monkeypatch, fmt, expected):
    code, out, err = run_cli(["stats", "--format", fmt], capsys, monkeypatch)
    assert code == 0 and err == ""
    assert expected in out
