"""``rescue tasks``: how many instances each task builds from the data, per scenario."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated

import typer
from rich.table import Table

from rescue.cli.app import DataOption, app, console
from rescue.data.loading import load_samples
from rescue.tasks import SCENARIOS, task_counts
from rescue.tasks.rpp import DEFAULT_RPP_GOLD

# The paper's Table 6 on the full release (191 samples): (instances, samples) per scenario.
PAPER_TABLE_6: dict[str, dict[str, tuple[int, int]]] = {
    "itp": {"couple": (2722, 168), "family": (284, 16)},
    "rpp": {"couple": (1608, 172), "family": (525, 17)},
    "stp": {"couple": (1290, 172), "family": (347, 17)},
    "ssp": {"couple": (1290, 172), "family": (347, 17)},
    "er": {"couple": (844, 174), "family": (82, 17)},
    "vp": {"couple": (775, 170), "family": (80, 17)},
}


class OutputFormat(str, Enum):
    table = "table"
    json = "json"


class RppGoldChoice(str, Enum):
    auto = "auto"
    relation_pattern = "relation_pattern"
    relation_cycle_state = "relation_cycle_state"


DEFAULT_RPP_GOLD_CHOICE = RppGoldChoice(DEFAULT_RPP_GOLD)


@app.command("tasks")
def tasks_command(
    data: DataOption = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="table for people, json for scripts.")
    ] = OutputFormat.table,
    rpp_gold: Annotated[
        RppGoldChoice,
        typer.Option(
            "--rpp-gold",
            help="Row field holding RPP gold: auto (relation_pattern where a sample has it, else "
            "relation_cycle_state), relation_pattern, or relation_cycle_state.",
        ),
    ] = DEFAULT_RPP_GOLD_CHOICE,
) -> None:
    """Count the instances and samples each task builds, per scenario (compare with the paper's Table 6)."""
    samples = load_samples(data)
    counts = task_counts(samples, rpp_gold=rpp_gold.value)
    if output_format is OutputFormat.json:
        typer.echo(json.dumps(counts, indent=2))
        return
    table = Table(title=f"Instances (samples covered) from {len(samples)} samples")
    table.add_column("task")
    for scenario in SCENARIOS:
        table.add_column(scenario, justify="right")
    for scenario in SCENARIOS:
        table.add_column(f"paper {scenario}", justify="right", style="dim")
    for name, per_scenario in counts.items():
        paper = PAPER_TABLE_6.get(name, {})
        table.add_row(
            name,
            *(f"{per_scenario[s]['instances']} ({per_scenario[s]['samples']})" for s in SCENARIOS),
            *(f"{paper[s][0]} ({paper[s][1]})" if s in paper else "" for s in SCENARIOS),
        )
    console.print(table)
    console.print("Paper columns: Table 6, counted on the full release of 191 samples.", style="dim")
