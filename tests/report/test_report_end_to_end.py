"""`rescue run` (offline baselines, demo data) then `rescue report` on two runs, and the HTML in a real browser."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from extras import needs_extra

from rescue.cli import app
from rescue.runs.folder import read_results
from rescue.report.html import decode_payload
from rescue.report.summary import terminal_leaderboard
from rescue.report.outcomes import is_correct
from rescue.tasks.base import PredictionRecord

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
# The closed tasks only: ER/VP need BERTScore or a judge for a leaderboard column (see the slow test).
FAST = ("--tasks", "itp,rpp,stp,ssp", "--no-bertscore")


def _run(out: Path, model: str, *extra: str) -> Path:
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--model", model, "--quiet", *extra])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    return (_run(root / "majority", "baseline/majority", *FAST),
            _run(root / "uniform", "baseline/uniform", *FAST))


@pytest.fixture(scope="module")
def report_dir(runs, tmp_path_factory) -> Path:
    # Without figures: drawing them is most of a report's time; the slow test below draws every one.
    out = tmp_path_factory.mktemp("report")
    result = CliRunner().invoke(app, ["report", str(runs[0]), str(runs[1]), "--out", str(out), "--bootstrap", "300",
                                      "--no-figures"])
    assert result.exit_code == 0, result.output
    return out


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _records(run: Path, task: str) -> list[PredictionRecord]:
    lines = (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in (PredictionRecord.model_validate_json(line) for line in lines) if r.task == task]


def test_report_writes_every_artifact(report_dir):
    for name in ("leaderboard.md", "leaderboard.tex", "leaderboard.csv", "comparisons.md", "comparisons.csv", "report.html",
                 "analyses/rpp_accuracy_by_position.csv", "analyses/rpp_gold_by_position.csv", "analyses/gold_distributions.csv",
                 "analyses/rpp_transitions_gold_couple.csv", "analyses/rpp_per_label_accuracy.csv", "analyses/ssp_preference.csv"):
        assert (report_dir / name).is_file(), name
    # A file named after a system carries a short slug and a hash of its id; files.csv says whose it is.
    named = dict(line.split(",", 1) for line in (report_dir / "files.csv").read_text().splitlines()[1:])
    confusion = [f for f, system in named.items() if system == "baseline/majority" and "_rpp_couple" in f]
    assert confusion and confusion[0].startswith("analyses/confusion_baseline_majority-") and \
        (report_dir / confusion[0]).is_file()


@pytest.mark.slow
def test_a_full_report_draws_every_figure_and_inlines_them(runs, tmp_path):
    needs_extra("plot")
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(runs[0]), str(runs[1]), "--out", str(out), "--bootstrap", "50",
                                      "--figure-formats", "svg,pdf"])
    assert result.exit_code == 0, result.output
    for name in ("rpp_position", "scores", "rpp_transitions_gold_couple", "rpp_gold_position_couple",
                 "ssp_preference_couple"):
        for fmt in ("png", "svg", "pdf"):
            assert (out / "figures" / f"{name}.{fmt}").is_file(), (name, fmt)
    assert (out / "figures/rpp_position.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "data:image/png;base64," in (out / "report.html").read_text(encoding="utf-8")


def test_leaderboard_values_are_the_runs_own_numbers_with_intervals(runs, report_dir):
    results = json.loads((runs[0] / "results.json").read_text())["models"]["baseline/majority"]
    rows = {(r["system"], r["scope"], r["metric"]): r for r in _read_csv(report_dir / "leaderboard.csv")}
    for metric, task, key in (("ITP F1", "itp", "f1"), ("RPP Acc", "rpp", "accuracy"), ("SSP MRR", "ssp", "mrr")):
        for scope in ("all", "couple"):
            row = rows[("baseline/majority", scope, metric)]
            assert float(row["value"]) == pytest.approx(results[task][scope][key])
            assert int(row["instances"]) == results[task][scope]["instances"]
    rpp = rows[("baseline/uniform", "all", "RPP Acc")]
    assert float(rpp["ci_low"]) <= float(rpp["value"]) <= float(rpp["ci_high"])
    markdown = (report_dir / "leaderboard.md").read_text()
    assert "| baseline/majority | all |" in markdown and "bootstrap CI resampling session groups" in markdown


def test_paired_comparison_and_mcnemar_on_shared_instances(runs, report_dir):
    rows = [r for r in _read_csv(report_dir / "comparisons.csv") if r["metric"] == "RPP Acc" and r["scope"] == "all"]
    assert len(rows) == 1
    row = rows[0]
    assert (row["a"], row["b"]) == ("baseline/majority", "baseline/uniform")
    a, b = _records(runs[0], "rpp"), _records(runs[1], "rpp")
    correct_b = {r.instance_id: is_correct(r) for r in b}
    only_a = sum(1 for r in a if is_correct(r) and not correct_b[r.instance_id])
    only_b = sum(1 for r in a if correct_b[r.instance_id] and not is_correct(r))
    assert (int(row["mcnemar_only_a"]), int(row["mcnemar_only_b"])) == (only_a, only_b)
    assert int(row["instances"]) == len(a)
    diff = float(row["diff"])
    assert diff == pytest.approx(float(row["value_a"]) - float(row["value_b"]))
    assert 0.0 < float(row["p_bootstrap"]) <= 1.0 and 0.0 < float(row["p_mcnemar"]) <= 1.0


def test_html_is_self_contained(report_dir):
    page = (report_dir / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert 'id="report-data"' in page
    payload = page.split('id="report-data" data-encoding="gzip+base64">', 1)[1].split("</script>", 1)[0]
    data = decode_payload(payload)
    assert {i["system"] for i in data["instances"]} == {"baseline/majority", "baseline/uniform"}
    assert data["transcripts"]  # the demo conversations, for the drill-down


def test_terminal_leaderboard_of_a_real_run(runs):
    results = json.loads((runs[0] / "results.json").read_text())
    table = terminal_leaderboard(read_results(runs[0] / "results.json"))
    headers = [c.header for c in table.columns]
    assert "ITP\nF1" in headers and "RPP\nAcc" in headers and "SSP\nR@1" in headers
    f1 = next(iter(table.columns[headers.index("ITP\nF1")].cells))
    assert f1 == f"{results['models']['baseline/majority']['itp']['all']['f1'] * 100:.2f}"


@pytest.mark.slow
@pytest.mark.browser
def test_html_report_in_headless_chromium(report_dir, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not installed (the project's test setup installs Debian's chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto((report_dir / "report.html").as_uri())
            total = page.locator("#count").inner_text()
            page.select_option("#f-task", "rpp")
            page.select_option("#f-system", "baseline/uniform")
            page.select_option("#f-outcome", "wrong")
            filtered = page.locator("#count").inner_text()
            assert filtered != total and filtered.endswith(total.split(" of ")[1])
            shown = page.locator("#instances tbody tr.item")
            assert shown.count() > 0
            for k in range(shown.count()):
                cells = shown.nth(k).locator("td")
                assert cells.nth(1).inner_text() == "rpp" and cells.nth(6).inner_text() == "wrong"
            shown.first.click()
            detail = page.locator("#instances tr.detail")
            assert detail.count() == 1
            assert "Raw answer" in detail.inner_text() and detail.locator(".turn.target").count() == 1
            detail.scroll_into_view_if_needed()
            screenshot = tmp_path / "report.png"
            page.screenshot(path=str(screenshot), full_page=False)
        finally:
            browser.close()
    assert errors == []
    assert screenshot.stat().st_size > 10_000
    if os.environ.get("RESCUE_SCREENSHOT_DIR"):
        target = Path(os.environ["RESCUE_SCREENSHOT_DIR"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(screenshot, target / "report.png")


@pytest.mark.slow
def test_report_with_bertscore_for_er_and_vp(tmp_path):
    run = _run(tmp_path / "run", "baseline/nearest", "--tasks", "er,vp")
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(run), "--out", str(out), "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    results = json.loads((run / "results.json").read_text())["models"]["baseline/nearest"]
    rows = {(r["scope"], r["metric"]): r for r in _read_csv(out / "leaderboard.csv")}
    for task in ("er", "vp"):
        row = rows[("all", f"{task.upper()} BERTScore")]
        assert float(row["value"]) == pytest.approx(results[task]["all"]["bertscore_f1"])
        assert row["ci_low"] and row["ci_high"]


def test_report_without_bootstrap_and_on_a_missing_run(runs, tmp_path):
    from rescue.report.runs import ReportError

    out = tmp_path / "plain"
    result = CliRunner().invoke(app, ["report", str(runs[0]), "--out", str(out), "--bootstrap", "0", "--no-html",
                                      "--no-figures"])
    assert result.exit_code == 0, result.output
    rows = _read_csv(out / "leaderboard.csv")
    assert rows and all(r["ci_low"] == "" for r in rows)
    assert not (out / "report.html").exists() and not (out / "comparisons.csv").exists()  # one system: no pairs
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "nope"), "--out", str(out)])
    assert isinstance(missing.exception, ReportError)
    assert "nope/results.json: missing" in str(missing.exception)
