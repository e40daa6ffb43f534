"""``rescue tasks``: how many instances each task builds from the data, per scenario."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated, Any

import typer

from rescue.cli._app import (
    DataOption,
    SplitOption,
    SplitsFileOption,
    TaskOptionOption,
    app,
    console,
    err_console,
    load_data,
    run_option,
)
from rescue import display
from rescue.cli._startup import exports_chat, rich_table, task_registry
from rescue.data.choices import DEFAULT_RPP_GOLD
from rescue.engine.run_options import DEFAULT_SPLITS_FILE


class OutputFormat(str, Enum):
    """The output formats of ``rescue tasks``."""

    table = "table"
    json = "json"




@app.command("tasks")
def tasks_command(
    data: DataOption = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="table for people, json for scripts.")
    ] = OutputFormat.table,
    rpp_gold: Annotated[str, run_option("rpp_gold")] = DEFAULT_RPP_GOLD,
    task_option: TaskOptionOption = None,
    split: SplitOption = None,
    splits: SplitsFileOption = DEFAULT_SPLITS_FILE,
) -> None:
    """Count the instances and samples each task builds, per scenario (compare with the paper's Table 6)."""
    samples = load_data(data, split, splits)
    options = task_registry.parse_task_options(task_option or [])
    options.setdefault("rpp", {}).setdefault("rpp_gold", rpp_gold)
    counts = task_registry.task_counts(samples, options=options)
    shared = _shared_prompt_lines(samples, options)
    if output_format is OutputFormat.json:
        typer.echo(json.dumps(counts, indent=2))
        for line in shared:  # on stderr: the JSON on stdout keeps its shape
            err_console.print(line, highlight=False, soft_wrap=True)
        return
    table = rich_table.Table(title=f"Instances (samples covered) from {len(samples)} samples")
    table.add_column("task")
    for scenario in task_registry.SCENARIOS:
        table.add_column(scenario, justify="right")
    for scenario in task_registry.SCENARIOS:
        table.add_column(f"paper {scenario}", justify="right", style="dim")
    for name, per_scenario in counts.items():
        paper = task_registry.TASKS[name].declaration.paper_counts  # the paper's Table 6, on the full release
        table.add_row(
            name,
            *(f"{per_scenario[s]['instances']} ({per_scenario[s]['samples']})" for s in task_registry.SCENARIOS),
            *(f"{paper[s][0]} ({paper[s][1]})" if s in paper else "" for s in task_registry.SCENARIOS),
        )
    console.print(table)
    console.print("Paper columns: Table 6, counted on the full release of 191 samples.", style="dim")
    for line in shared:
        console.print(line, highlight=False, soft_wrap=True)


def _shared_prompt_lines(samples: list[Any], options: dict[str, dict[str, Any]]) -> list[str]:
    """Instances whose prompts are identical while their gold answers differ (docs/splits-and-exports.md)."""
    tasks = [task_registry.get_task(name) for name in task_registry.TASKS]
    shared = exports_chat.shared_prompts(exports_chat.chat_examples(samples, tasks, build_options=options))
    if not shared:
        return []
    lines = [f"{len(shared)} prompt(s) are identical across instances whose gold answers differ; no model, not even "
             "one answering with `rescue export`'s assistant turns, is right on all of them:"]
    for item in shared:
        golds = (g if isinstance(g, str) else json.dumps(g, ensure_ascii=False) for g in item.golds)
        shown = (f"{display.terminal_text(i)} (gold {display.terminal_text(g, max_length=60)})" for i, g in zip(item.instance_ids, golds))
        lines.append(f"  {item.task}: " + ", ".join(shown))
    return lines
