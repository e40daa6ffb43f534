"""``rescue export``: task instances as fine-tuning chats, or samples/instances as a Hugging Face datasets folder."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from rescue.display import terminal_text
from rescue.cli._app import DataOption, SplitOption, SplitsFileOption, app, console, load_data
from rescue.cli._startup import data_splits, exports_chat, exports_hf, task_registry, tasks_base, tasks_render
from rescue.engine.run_options import DEFAULT_SPLITS_FILE


class ExportFormat(str, Enum):
    """The formats of ``rescue export``: chat (fine-tuning JSONL) or hf (a datasets folder)."""

    chat = "chat"
    hf = "hf"


class ExportKind(str, Enum):
    """What ``rescue export --format hf`` writes: task instances or whole samples."""

    instances = "instances"
    samples = "samples"


@app.command("export")
def export_command(
    out: Annotated[Path, typer.Option("--out", help="chat: the .jsonl to write; hf: the folder to write.")],
    data: DataOption = None,
    output_format: Annotated[ExportFormat, typer.Option(
        "--format", help="chat: JSON lines of {messages, metadata} for fine-tuning; hf: a Hugging Face datasets "
        "folder (load_from_disk) with a dataset card.")] = ExportFormat.chat,
    kind: Annotated[ExportKind, typer.Option(
        "--kind", help="hf only: one row per task instance, or per sample (the release record, readable by "
        "rescue.load).")] = ExportKind.instances,
    tasks: Annotated[Optional[str], typer.Option("--tasks", help="Comma-separated tasks to export (default: every registered task).")] = None,
    split: SplitOption = None,
    splits: SplitsFileOption = DEFAULT_SPLITS_FILE,
    all_splits: Annotated[bool, typer.Option(
        "--all-splits", help="hf only: every split of the --splits file, each as a split of the dataset.")] = False,
    mode: Annotated[str, typer.Option("--mode", help="The prompt mode, as rescue run's --mode (text modes).")] = "dialogue",
    context_size: Annotated[Optional[int], typer.Option(
        "--context-size", help="Prior rows shown (-1: all; default: each task's own), as rescue run.")] = None,
) -> None:
    """Export instances as chat examples whose user turn is exactly rescue's prompt and whose assistant turn is the
    gold answer in the task's schema (a model trained on them is evaluated by `rescue run` unchanged), or a
    datasets folder with a dataset card."""
    if output_format is ExportFormat.chat:
        exports_chat.check_chat_out(out)  # before any work: a FIFO, a device, a folder or a link is refused
    else:
        exports_hf.check_export_folder(out)
    names = tasks.split(",") if tasks else list(task_registry.TASK_NAMES)
    task_list = [task_registry.get_task(name.strip()) for name in names if name.strip()]
    options = tasks_base.RenderOptions(mode=mode, context_size=context_size, rows=tasks_render.RowCache())  # type: ignore[arg-type]
    if all_splits:
        everything = load_data(data)
        names = data_splits.read_plan(splits).names()
        named = {name: data_splits.select_split(everything, splits, name) for name in names}
    else:
        named = {split or "all": load_data(data, split, splits)}
    if output_format is ExportFormat.chat:
        if len(named) > 1:
            raise typer.BadParameter("--all-splits is for --format hf; export one --split per chat file")
        examples = exports_chat.chat_examples(next(iter(named.values())), task_list, options)
        written = exports_chat.write_chat(out, examples)
        console.print(f"wrote {terminal_text(str(out))}: {written} chat example(s) from {len(task_list)} task(s)", highlight=False,
                      soft_wrap=True)
        return

    per_split = None
    if kind is ExportKind.instances:
        per_split = {name: list(exports_chat.chat_examples(group, task_list, options)) for name, group in named.items()}
    rows = exports_hf.write_hf(out, kind.value, named, per_split)
    shown = ", ".join(f"{name} {n}" for name, n in rows.items())
    console.print(f"wrote {terminal_text(str(out))}: {kind.value} ({terminal_text(shown)}) and README.md, the dataset "
                  "card", highlight=False,
                  soft_wrap=True)
