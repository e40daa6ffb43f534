"""``rescue judge-agreement``: how well a run's LLM judge agrees with human raters."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from rescue.atomic import write_atomic
from rescue.cli._app import JudgedTask, app, console
from rescue.cli._startup import report_runs, rich_table, scoring_judge_agreement
from rescue.data.text import json_safe
from rescue.display import terminal_json, terminal_text


class AgreementFormat(str, Enum):
    """The output formats of ``rescue judge-agreement``."""

    table = "table"
    json = "json"


_COLUMNS = (
    ("pairs", "pairs"), ("exact_matches", "exact"), ("exact_agreement", "exact %"), ("mae", "MAE"),
    ("spearman", "Spearman"), ("pearson", "Pearson"), ("cohen_kappa_quadratic", "κ (quadratic)"),
    ("krippendorff_alpha", "α"), ("not_graded", "not graded"),
)


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "—"
    if key == "exact_agreement":
        return f"{100 * value:.1f}"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


@app.command("judge-agreement")
def judge_agreement_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by `rescue run --out` (with a judge).")],
    ratings: Annotated[
        Path,
        typer.Option("--ratings", help="CSV of human ratings: instance_id,rater,score (optional columns model, task), "
                     "scores on the judge's 1-5 scale."),
    ],
    task: Annotated[JudgedTask | None, typer.Option("--task", help="Only this task (default: every judged task).")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Only this evaluated model of the run.")] = None,
    output_format: Annotated[AgreementFormat, typer.Option("--format", help="table for people, json for scripts.")] = AgreementFormat.table,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the JSON report to this file.")] = None,
    epsilon: Annotated[float, typer.Option(
        "--epsilon", min=0.0, max=1.0, help="The alternative annotator test's cost-benefit margin ε: how much "
        "less often the judge may align with the other raters than a human does and still replace one (the "
        "paper's guidance: 0.2 for crowd workers, 0.15 for skilled annotators, 0.1 for experts).")] = 0.2,
) -> None:
    """Compare human ratings with the judge scores of a run: exact agreement, MAE, Spearman, Pearson,
    quadratic-weighted Cohen's κ and Krippendorff's α, per task and judge."""
    records = report_runs.read_predictions(run_dir / "predictions.jsonl")
    agreement = scoring_judge_agreement
    report = agreement.judge_agreement(records, agreement.read_ratings(ratings), task=task.value if task else None,
                                       model=model, epsilon=epsilon)

    # Strict JSON (an undefined correlation is null, not NaN), written whole or not at all.
    text = json.dumps(json_safe(report), indent=2, ensure_ascii=False, allow_nan=False)
    if out is not None:
        write_atomic(out, text + "\n")
    if output_format is AgreementFormat.json:
        typer.echo(terminal_json(text))
        return
    for name, block in report["tasks"].items():
        table = rich_table.Table(
            title=terminal_text(f"{name.upper()}: human vs judge on {block['judge_score']} — {block['ratings']} "
                                f"ratings of {block['instances']} instances by {len(block['raters'])} rater(s)")
        )
        table.add_column("judge", no_wrap=True)
        for _, header in _COLUMNS:
            table.add_column(header, justify="right")
        for judge, stats in block["judges"].items():
            table.add_row(terminal_text(judge), *(_cell(key, stats.get(key)) for key, _ in _COLUMNS))
        console.print(table)
        if block["human_alpha"] is not None:
            console.print(f"Inter-rater α among the humans: {block['human_alpha']:.3f}")
        for judge, stats in block["judges"].items():
            _print_checks(judge, stats)
    for name, judges in report["stability"].items():
        for judge, block in judges.items():
            rate = "—" if block["flip_rate"] is None else f"{100 * block['flip_rate']:.1f}%"
            alpha = "undefined" if block["alpha"] is None else f"{block['alpha']:.3f}"
            console.print(f"{terminal_text(name.upper())} {terminal_text(judge)}: across {block['repeats']} repeats, {block['flips']} of "
                          f"{block['items']} item(s) flip ({rate}); α of the repeats on {block['score']} = {alpha}",
                          highlight=False, soft_wrap=True)
    for warning in report["warnings"]:
        console.print(f"warning: {terminal_text(warning)}", style="yellow", highlight=False, soft_wrap=True)
    if report["unmatched_ratings"]:
        console.print(
            f"{report['unmatched_ratings']} rating(s) match no instance of the run, e.g. "
            f"{terminal_text(', '.join(report['unmatched_examples']))}", style="yellow", highlight=False
        )


def _print_checks(judge: str, stats: dict[str, Any]) -> None:
    """The alternative annotator test's verdict and the length-bias check of one judge, in a line each."""
    judge = terminal_text(judge)
    alt = stats.get("alt_test")
    if alt is None:
        console.print(f"{judge}: alternative annotator test needs ratings by at least 2 raters (3 or more "
                      "advised)", highlight=False, soft_wrap=True)
    elif alt["winning_rate"] is None:
        console.print(f"{judge}: alternative annotator test: no rater shares enough items with another",
                      highlight=False, soft_wrap=True)
    else:
        verdict = "passes: it may replace a human rater" if alt["passed"] else "fails: keep the human raters"
        console.print(f"{judge}: alternative annotator test (ε={alt['epsilon']}) {verdict}; winning rate "
                      f"{alt['winning_rate']:.2f} over {alt['raters_tested']} rater(s), advantage probability "
                      f"{alt['advantage_probability']:.2f}", highlight=False, soft_wrap=True)
    bias = stats.get("length_bias") or {}
    if bias.get("rho") is not None:
        flag = " — the judge may reward length" if bias["warning"] else ""
        console.print(f"{judge}: score vs prediction length within gold-length strata: ρ = {bias['rho']:.2f} on "
                      f"{bias['records']} graded record(s){flag}", highlight=False, soft_wrap=True)
