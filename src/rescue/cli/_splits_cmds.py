"""``rescue splits``: leak-free train/dev/test splits (or K folds) by session group."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rescue.atomic import check_target, write_atomic
from rescue.cli._app import DataOption, app, console
from rescue.cli._data_cmds import print_stats_tables
from rescue.cli._startup import data_loading, data_splits, data_stats, files
from rescue.engine.run_options import DEFAULT_SPLITS_FILE


@app.command("splits")
def splits_command(
    data: DataOption = None,
    out: Annotated[Path, typer.Option("--out", help="Where to write the plan (JSON).")] = DEFAULT_SPLITS_FILE,
    folds: Annotated[Optional[int], typer.Option("--folds", help="K folds instead of train/dev/test.")] = None,
    test: Annotated[float, typer.Option("--test", help="Share of each scenario's samples in the test split.")] = 0.2,
    dev: Annotated[float, typer.Option("--dev", help="Share of each scenario's samples in the dev split (0: none).")] = 0.1,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the group shuffle; the same seed, the same splits.")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", help="Print only the split sizes, not each split's tables.")] = False,
) -> None:
    """Split the data by session group (a couple, or a family across its clips), stratified by scenario: no group
    is in two splits. Prints each split's Table 3 figures and label distributions; use it with --split NAME."""
    check_target(out)  # before any work: a FIFO, a device, a folder or a link at --out is refused
    samples = data_loading.load_samples(data)
    plan = data_splits.make_splits(samples, test=test, dev=dev, folds=folds, seed=seed)
    plan.data = str(Path(data).resolve()) if data else None
    plan.data_sha256 = files.sha256_file(data) if data and Path(data).is_file() else None
    write_atomic(out, plan.model_dump_json(indent=2) + "\n")
    by_id = {s.sample_id: s for s in samples}
    for name, ids in plan.splits.items():
        console.print(f"[bold]{name}[/]: {len(ids)} sample(s), {len(plan.groups[name])} session group(s)",
                      highlight=False)
        if not quiet and ids:
            print_stats_tables(data_stats.compute([by_id[i] for i in ids]), title=f"{name}: Table 3")
    for name in plan.left_out:
        console.print(f"[bold]{name}[/]: no session group fell to it ({len(samples)} sample(s)); left out of the plan, "
                      "which never holds an empty split", highlight=False, soft_wrap=True)
    console.print(f"wrote {out} ({plan.scheme}, seed {seed}); grouping: {plan.grouping}", highlight=False,
                  soft_wrap=True)
