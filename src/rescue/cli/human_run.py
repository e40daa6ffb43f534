"""``rescue review export DIR --as-run OUT``: people's answers as a run folder, through the one runner (issue #38).

The runner builds the instances from the project's own copy of the data, asks each person (and the pooled
answer) as it asks any model, parses and scores with the tasks' code, and writes results.json and
predictions.jsonl; ``human.json`` and ``human.md`` beside them hold the time and agreement summary."""

from __future__ import annotations

import json
from pathlib import Path

from rescue.atomic import write_atomic
from rescue.cli.app import console
from rescue.errors import ReviewError


def export_human_run(directory: Path, out: Path, *, bertscore: bool, judges: list[str], db: str | None,
                     judge_base_url: str | None = None) -> None:
    """Write the run folder ``out`` of the benchmark project ``directory`` (a new or empty folder)."""
    from rescue.engine.config import RunConfig
    from rescue.engine.runner import run
    from rescue.review.benchmark import load_benchmark
    from rescue.review.project import is_benchmark
    from rescue.review.benchmark_export import human_models, human_summary, summary_markdown
    from rescue.review.benchmark_store import all_answers
    from rescue.review.db import default_url, make_engine, session_factory

    if not is_benchmark(directory):
        raise ReviewError(f"--as-run: {directory} is not a benchmark project (make one with `rescue review init "
                          "--benchmark`)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReviewError(f"--as-run {out}: exists and is not an empty folder; name a new one")
    bench = load_benchmark(directory)
    engine = make_engine(db or default_url(bench.root))
    try:
        with session_factory(engine)() as session:
            answers = all_answers(session)
    finally:
        engine.dispose()
    if not answers:
        raise ReviewError(f"{directory}: nobody has answered anything yet; nothing to export")
    config = RunConfig(out=str(out), models=[], tasks=bench.tasks, data=str(bench.data_path), bertscore=bertscore,
                       judges=judges, judge_base_url=judge_base_url, quiet=True, mode=bench.mode,
                       video=bench.config.get("video"))
    outcome = run(config, models=human_models(bench, answers))
    summary = human_summary(bench, answers)
    write_atomic(out / "human.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    write_atomic(out / "human.md", summary_markdown(summary))
    people = sorted({a["user"] for a in answers})
    console.print(f"Wrote the run {out} ({'complete' if outcome.complete else 'incomplete'}): "
                  f"{', '.join('human/' + p for p in people)} and human/pooled on {', '.join(bench.tasks)}; "
                  f"time and agreement in {out / 'human.md'}", highlight=False)
