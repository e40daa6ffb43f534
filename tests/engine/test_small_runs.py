"""Small runs say what they cannot do (issue #28 item 2): --limit-samples takes a stratified choice across
scenarios and session groups by default; where no interval can be computed the report says so where the
interval would stand, with the fix; a model whose every request failed shows "—" with its failure count."""

from __future__ import annotations


import pytest
from typer.testing import CliRunner

from rescue.cli import app
from rescue.data.groups import infer_groups
from rescue.data.loading import choose_samples
from rescue.engine.config import RunConfig

FAST = ("--tasks", "itp", "--no-bertscore", "--quiet")


def _cli(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), env=env)


def test_limit_samples_is_stratified_across_scenarios_and_groups_by_default(real_samples):
    assert RunConfig(out="x").sample_choice == "stratified"
    groups = infer_groups(real_samples)
    chosen = choose_samples(real_samples, 4, RunConfig(out="x").sample_choice)
    per_scenario: dict[str, set[str]] = {}
    for sample in chosen:
        per_scenario.setdefault(sample.scenario, set()).add(groups.group_of(sample.sample_id))
    assert set(per_scenario) == {"couple", "family"}
    assert all(len(names) >= 2 for names in per_scenario.values()), per_scenario  # enough for an interval
    first = choose_samples(real_samples, 4, "first")
    assert len({groups.group_of(s.sample_id) for s in first}) == 1  # what the old default took: one couple


def test_a_report_without_intervals_says_so_where_they_would_stand(tmp_path):
    run = tmp_path / "run"
    assert _cli("run", "--out", str(run), "--model", "baseline/majority", "--limit-samples", "1", *FAST).exit_code == 0
    report = tmp_path / "report"
    result = _cli("report", str(run), "--out", str(report), "--bootstrap", "100", "--no-figures")
    assert result.exit_code == 0, result.output
    markdown = (report / "leaderboard.md").read_text(encoding="utf-8")
    assert "66.67 [no CI]" in markdown
    assert "fewer than 2 of them" in markdown and "--cluster sample" in markdown and "--limit-samples" in markdown
    html = (report / "report.html").read_text(encoding="utf-8")
    assert "[no CI]" in html


def test_a_model_whose_every_request_failed_shows_a_dash_and_its_failures(tmp_path):
    good = tmp_path / "good"
    assert _cli("run", "--out", str(good), "--model", "baseline/majority", "--limit-samples", "2", *FAST).exit_code == 0
    dead = tmp_path / "dead"
    ran = _cli("run", "--out", str(dead), "--model", "test-model", "--base-url", "http://127.0.0.1:9/v1",
               "--max-retries", "0", "--limit-samples", "2", *FAST, env={"OPENAI_API_KEY": "test"})
    assert ran.exit_code == 3, ran.output  # incomplete: every request failed
    report = tmp_path / "report"
    result = _cli("report", str(good), str(dead), "--out", str(report), "--bootstrap", "50", "--no-figures")
    assert result.exit_code == 0, result.output
    markdown = (report / "leaderboard.md").read_text(encoding="utf-8")
    dead_rows = [line for line in markdown.splitlines() if line.startswith("| test-model")]
    assert dead_rows and all("— (all " in line and "failed)" in line for line in dead_rows), dead_rows
    assert not any(" 0.00" in line for line in dead_rows)
    html = (report / "report.html").read_text(encoding="utf-8")
    assert "all " in html and " failed" in html


@pytest.mark.parametrize("resamples", [999, 1000])
def test_p_values_at_the_resampling_floor_say_less_than(resamples):
    from rescue.report.columns import COLUMNS
    from rescue.report.comparisons import Comparison, p_bootstrap_text

    floor = 2.0 / (resamples + 1)
    at_floor = Comparison("a", "b", "itp", "all", "ITP F1", COLUMNS[0], 10, 0.5, 0.4, 0.1, 0.0, 0.2, floor,
                          resamples=resamples)
    assert p_bootstrap_text(at_floor) == f"< {floor:.3f}"
    above = Comparison("a", "b", "itp", "all", "ITP F1", COLUMNS[0], 10, 0.5, 0.4, 0.1, 0.0, 0.2, 3 * floor,
                       resamples=resamples)
    assert p_bootstrap_text(above) == f"{3 * floor:.3f}"


def test_markdown_cells_keep_comparison_signs_readable():
    from rescue.display import markdown_text

    assert markdown_text("p < 0.05; a <= b; x > y") == "p < 0.05; a <= b; x > y"
    assert "<script" not in markdown_text("<script>alert(1)</script>")
    assert markdown_text("&lt;") == "&amp;lt;"  # an entity written as text stays text
    assert markdown_text("a|b") == "a\\|b"


