"""``rescue review export DIR --as-run OUT``: people's answers as a run folder, through the one runner (issue #38).

The runner builds the instances from the project's own copy of the data, asks each person (and the pooled
answer) as it asks any model, parses and scores with the tasks' code, and writes results.json and
predictions.jsonl; ``human.json`` and ``human.md`` beside them hold the time and agreement summary."""

from __future__ import annotations

import json
from pathlib import Path

from rescue.display import terminal_text
from rescue.atomic import write_atomic
from rescue.cli._app import console
from rescue.cli._startup import (
    engine_config,
    engine_runner,
    human_benchmark,
    human_export,
    human_store,
    review_db,
    review_project,
)
from rescue.errors import ReviewError


def export_human_run(directory: Path, out: Path, *, bertscore: bool, judges: list[str], db: str | None,
                     judge_base_url: str | None = None) -> None:
    """Write the run folder ``out`` of the benchmark project ``directory`` (a new or empty folder)."""
    if not review_project.is_benchmark(directory):
        raise ReviewError(f"--as-run: {directory} is not a benchmark project (make one with `rescue review init "
                          "--benchmark`)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReviewError(f"--as-run {out}: exists and is not an empty folder; name a new one")
    bench = human_benchmark.load_benchmark(directory)
    engine = review_db.make_engine(db or review_db.default_url(bench.root))
    try:
        with review_db.session_factory(engine)() as session:
            answers, late = human_store.counted_answers(session, bench)
            assigned, groups = human_store.assigned_keys(session), human_store.groups(session)
    finally:
        engine.dispose()
    if late:
        console.print(f"[yellow]note:[/] {late} answer(s) left out: given after the person was shown what the "
                      "instance hides (docs/human.md, no look-ahead)", highlight=False)
    if not answers:
        raise ReviewError(f"{directory}: nobody has answered anything yet; nothing to export")
    config = engine_config.RunConfig(out=str(out), models=[], tasks=bench.tasks, data=str(bench.data_path),
                                     bertscore=bertscore, judges=judges, judge_base_url=judge_base_url, quiet=True,
                                     mode=bench.mode, video=bench.config.get("video"))
    # The project's instances only (all of them, or its --sample), so that every system covers the same ones.
    only = {task: [i.instance_id for i in found] for task, found in bench.instances.items()}
    outcome = engine_runner.run(config, models=human_export.human_models(bench, answers, groups), only=only)
    summary = human_export.human_summary(bench, answers, assigned, groups, late)
    write_atomic(out / "human.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    write_atomic(out / "disputed.jsonl", "".join(json.dumps(item, ensure_ascii=False, sort_keys=True) + "\n"
                                                 for item in human_export.disputed(bench, answers, groups)))
    write_atomic(out / "human.md", human_export.summary_markdown(summary))
    people = sorted({a["user"] for a in answers})
    console.print(f"Wrote the run {terminal_text(str(out))} ({'complete' if outcome.complete else 'incomplete'}): "
                  f"{terminal_text(', '.join('human/' + p for p in people))} and human/pooled on {', '.join(bench.tasks)}; "
                  f"time and agreement in {terminal_text(str(out / 'human.md'))}", highlight=False)
