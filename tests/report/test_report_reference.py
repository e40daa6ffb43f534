"""The paper as a reference: published rows and the reproduction section in reports of the offline
baselines, what is not comparable and why, and `rescue run --suite paper --dry-run` offline."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue.cli import app
from rescue.files import sha256_file
from rescue.report.reference import AVERAGE, load_paper, paper_model
from rescue.report.runs import load_run
from rescue.suites import SuiteError, apply_suite, key_status, load_suite

KEYS = ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "MOONSHOT_API_KEY", "MINIMAX_API_KEY", "DEEPSEEK_API_KEY")


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def baselines(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("baselines") / "run"
    # Two baselines are enough for a comparison; the default four (with the trained one) cost twice the time.
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--tasks", "itp,rpp,stp,ssp", "--no-bertscore",
                                      "--quiet", "--model", "baseline/majority", "--model", "baseline/uniform"])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def referenced(baselines, tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("report")
    result = CliRunner().invoke(app, ["report", str(baselines), "--out", str(out), "--bootstrap", "100", "--quiet",
                                      "--no-figures", "--reference", "paper"])
    assert result.exit_code == 0, result.output
    return out, result.output


def test_the_paper_numbers_ship_with_their_source():
    paper = load_paper()
    assert len(paper["models"]) == 10 and "Table 5" in paper["source"] and "Table 11" in paper["source"]
    assert paper["table5"]["DeepSeek-V4-Pro"]["rpp.accuracy"] == 45.60
    assert paper["table11"]["GPT-4o"]["family"]["rpp.accuracy"] == 28.75
    assert paper["average"]["all"]["itp.f1"] == 82.62 and paper["average"]["couple"]["ssp.mrr"] == 43.45
    # The ten-model averages reproduce from Table 5 (docs/paper.md §5.1).
    mean = sum(paper["table5"][m]["stp.recall_at_1"] for m in paper["models"]) / 10
    assert round(mean, 2) == paper["average"]["all"]["stp.recall_at_1"]
    assert paper["judge_validation"]["exact_agreement"] == 0.795 and paper["judge_validation"]["mae"] == 0.235


@pytest.mark.slow
def test_reference_rows_are_published_and_never_tested(referenced):
    out, _ = referenced
    rows = _csv(out / "leaderboard.csv")
    gpt = {r["metric"]: r for r in rows if r["system"] == "paper: GPT-4o" and r["scope"] == "all"}
    assert float(gpt["ITP F1"]["value"]) == pytest.approx(0.8460) and gpt["ITP F1"]["ci_low"] == ""
    family = [r for r in rows if r["system"] == f"paper: {AVERAGE}" and r["scope"] == "family"]
    assert family and float(next(r for r in family if r["metric"] == "STP R@1")["value"]) == pytest.approx(0.5487)
    compared = {r["a"] for r in _csv(out / "comparisons.csv")} | {r["b"] for r in _csv(out / "comparisons.csv")}
    assert not any(name.startswith("paper:") for name in compared)
    markdown = (out / "leaderboard.md").read_text()
    assert "| paper: GPT-4o | all |" in markdown and "never in a significance test" in markdown


def test_ours_paper_difference_and_what_is_not_comparable(referenced):
    out, printed = referenced
    rows = _csv(out / "reference.csv")
    majority = {(r["scope"], r["metric"]): r for r in rows if r["system"] == "baseline/majority"}
    itp = majority[("all", "ITP F1")]
    assert itp["paper_model"] == AVERAGE and float(itp["paper"]) == pytest.approx(0.8262)
    assert float(itp["diff"]) == pytest.approx(float(itp["ours"]) - 0.8262)
    assert "of the paper's 3006 instances" in itp["caveat"]
    rpp = majority[("all", "RPP Acc")]
    assert rpp["comparable"] == "False" and rpp["diff"] == "" and "RPP evaluation set" in rpp["reason"]
    assert "against the paper's ten-model average" in printed and "not comparable [1]" in printed
    assert "RPP evaluation set" in printed


def test_reproduction_section_in_the_html(referenced):
    out, _ = referenced
    page = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="reproduction"' in page and "our scores against the paper" in page
    assert "not comparable" in page and ("inside" in page or "outside" in page)


def _relabelled(run: Path, dest: Path, model: str, **config: object) -> Path:
    """A copy of a real baseline run under another model name (how the report matches paper models)."""
    shutil.copytree(run, dest)
    results = json.loads((dest / "results.json").read_text())
    results["models"] = {model: results["models"]["baseline/majority"]}
    results["config"].update(config)
    lines = [json.loads(line) for line in (dest / "predictions.jsonl").read_text().splitlines()]
    kept = [dict(r, model=model) for r in lines if r["model"] == "baseline/majority"]
    (dest / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    results["predictions"]["sha256"] = sha256_file(dest / "predictions.jsonl")  # the pair stays one run's
    results["predictions"]["records"] = len(kept)
    (dest / "results.json").write_text(json.dumps(results))
    return dest


def test_a_paper_model_is_compared_with_itself(baselines, tmp_path):
    run = _relabelled(baselines, tmp_path / "gpt", "openai/gpt-4o")
    assert paper_model(load_run(run)[0]) == "GPT-4o"
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(run), "--out", str(out), "--bootstrap", "50", "--quiet",
                                      "--no-figures", "--reference", "paper"])
    assert result.exit_code == 0, result.output
    row = next(r for r in _csv(out / "reference.csv") if r["scope"] == "couple" and r["metric"] == "SSP R@1")
    assert row["paper_model"] == "GPT-4o" and float(row["paper"]) == pytest.approx(0.3628)


def test_judge_columns_compare_only_with_the_papers_judge(baselines):
    from rescue.report.columns import COLUMNS
    from rescue.report.reference import _reason

    system = load_run(baselines)[0]
    judge = next(c for c in COLUMNS if c.id == "vp.judge")
    assert "no judge ran" in _reason(system, judge, 855, "all")[0]
    system.config.judges = ["openai/gpt-4o"]
    assert "the paper's GPT-5.4" in _reason(system, judge, 855, "all")[0]
    system.config.judges, system.config.judge_scale = ["openai/gpt-5.4"], "likert"
    assert _reason(system, judge, 855, "all") == ("", "")
    bert = next(c for c in COLUMNS if c.id == "vp.bertscore_f1")
    assert "does not name its BERTScore backbone" in _reason(system, bert, 855, "all")[0]


def test_unknown_reference_is_refused(baselines, tmp_path):
    result = CliRunner().invoke(app, ["report", str(baselines), "--out", str(tmp_path), "--reference", "table5"])
    assert result.exit_code != 0 and "--reference 'table5'" in str(result.exception)


def test_the_paper_suite_names_the_papers_models_and_judge():
    suite = load_suite("paper")
    assert [m.paper for m in suite.models] == load_paper()["models"]
    # Every id says whether it was found in documentation, and where.
    assert all(m.source.startswith(("verified", "not found in the reference text")) for m in suite.models)
    assert suite.run["judges"] == ["openai/gpt-5.4"] and suite.run["temperature"] == 0.0
    for model in suite.models:  # every model the suite names is one the report recognises
        assert paper_model(type("S", (), {"model": model.spec})()) == model.paper  # type: ignore[arg-type]
    assert any(m.spec.startswith("minimax/") for m in suite.models)


def test_dry_run_offline_lists_models_missing_keys_and_requests(tmp_path, monkeypatch):
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)  # no ./.env here
    monkeypatch.setenv("MOONSHOT_API_KEY", "sk-test-not-sent")
    result = CliRunner().invoke(app, ["run", "--suite", "paper", "--dry-run"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = result.output
    assert "Suite paper" in text and "dashscope/qwen3-max" in text and "MiniMax M2.5" in text
    assert "Missing keys: DASHSCOPE_API_KEY, MINIMAX_API_KEY, OPENAI_API_KEY" in text
    assert "MOONSHOT_API_KEY" in text.split("Missing keys:")[0]  # listed as needed, set
    assert "nothing is sent" in text
    # The judge's requests and cost: one per ER/VP instance of each of the ten models, at GPT-5.4's price.
    judge_line = next(line for line in text.splitlines() if line.startswith("judge openai/gpt-5.4:"))
    assert "requests per model" in judge_line and "in all" in judge_line and "per model, $" in judge_line
    # Documented prices give a cost; the DashScope models have none and say so rather than show $0.
    assert "kimi/kimi-k2.5: at most $" in text and "dashscope/qwen-plus: no price in the table" in text
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_users_suite_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('[suite]\nname = "mine"\n[run]\ntasks = ["itp"]\ntemperature = 0.3\n'
                    '[[models]]\nspec = "baseline/majority"\n[[models]]\nspec = "openai/gpt-4o"\n'
                    'settings = { max_tokens = 50 }\n')
    suite = load_suite(str(path))
    from rescue.engine.runner import RunConfig

    config = apply_suite(RunConfig(out=str(tmp_path / "o")), suite, explicit={"temperature"})
    assert config.models == ["baseline/majority", "openai/gpt-4o"] and config.tasks == ["itp"]
    assert config.temperature == 0.0  # given on the command line: it wins
    assert config.model_settings == {"openai/gpt-4o": {"max_tokens": 50}}
    statuses = {s.spec: s for s in key_status(config.models, [])}
    assert statuses["baseline/majority"].present and statuses["openai/gpt-4o"].key_env == "OPENAI_API_KEY"


@pytest.mark.parametrize(("text", "message"), [
    ("[[models]]\nname = 'x'\n", "models[1].spec"),
    ("[run]\ncolour = 1\n[[models]]\nspec = 'openai/gpt-4o'\n", "unknown setting(s) colour"),
    ("[suite\n", "mine.toml"),
    ("[suite]\nname = 'x'\n", "field models"),
])
def test_bad_suite_files_name_the_field(tmp_path, text, message):
    from rescue.engine.runner import RunConfig

    path = tmp_path / "mine.toml"
    path.write_text(text)
    with pytest.raises(SuiteError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        apply_suite(RunConfig(out=str(tmp_path)), load_suite(str(path)))


def test_suite_and_model_together_are_refused(tmp_path):
    result = CliRunner().invoke(app, ["run", "--suite", "paper", "--model", "openai/gpt-4o", "--dry-run"])
    assert result.exit_code != 0 and "leave out --model" in str(result.exception)
    missing = CliRunner().invoke(app, ["run", "--suite", str(tmp_path / "nope.toml"), "--dry-run"])
    assert "no such file" in str(missing.exception)


def test_minimax_preset():
    from rescue.llm._providers import resolve_endpoint

    endpoint = resolve_endpoint("minimax/MiniMax-M2.5", need_key=False)
    assert endpoint.key_env == "MINIMAX_API_KEY" and endpoint.model_id == "MiniMax-M2.5"


def test_a_lenient_itp_column_names_where_it_differs_from_the_authors_reading(baselines):
    from rescue.report.columns import COLUMNS
    from rescue.report.reference import _reason

    system = load_run(baselines)[0]
    f1 = next(c for c in COLUMNS if c.id == "itp.f1")
    system.config.used.parse = "lenient"
    assert _reason(system, f1, 10, "all")[0] == ""
    assert "authors' ITP reading" not in _reason(system, f1, 10, "all")[1]  # nothing read differently
    records = system.task_records("itp")
    records[0].lenient = {"read_from_prose": "Yes, the therapist should speak now."}
    records[1].status, records[1].error = "parse_error", "expected yes or no, got 'yes/no'"
    reason, caveat = _reason(system, f1, 10, "all")
    assert reason == ""
    assert "1 answer(s) read as yes/no from prose" in caveat and "1 unreadable answer(s)" in caveat
    assert '"eyes"' in caveat and "fallback no" in caveat


def test_the_paper_json_counts_the_bertscore_cells_that_differ():
    assert "seven BERTScore cells" in load_paper()["source"]
