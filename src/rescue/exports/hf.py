"""Hugging Face ``datasets`` folders: samples or task instances, with a dataset card.

``write_hf`` saves a ``datasets.DatasetDict`` (one split per name given: ``train``, ``test``, ... or ``all``) with
``save_to_disk``, so ``datasets.load_from_disk(FOLDER)`` loads it, and writes ``README.md``, a dataset card with
the Table 3 figures, the label distributions, the fields, a licence placeholder and the citation. Push it with
``DatasetDict.push_to_hub`` from your own account; rescue never contacts a hub.

- ``samples``: one row per sample: ``sample_id``, ``scenario``, ``participants``, ``turns`` and ``record``, the
  sample exactly as the release writes it (JSON text), so nothing of the format is lost; ``rescue.load(FOLDER)``
  reads it back (:func:`rescue.data.reading.iter_records`).
- ``instances``: one row per task instance: ``task``, ``instance_id``, ``sample_id``, ``scenario``,
  ``row_index``, ``messages`` (the exact prompt), ``answer`` (the gold answer in the task's schema) and ``gold``
  (JSON text).

Needs the ``hf`` extra (``pip install 'rescue-bench[hf]'``: datasets, pyarrow).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal, TypedDict

from rescue.data import stats as dataset_stats
from rescue.data.models import Sample
from rescue.data.names import distinct_path_names, path_name
from rescue.exports.chat import ChatExample
from rescue.atomic import check_target
from rescue.errors import ExportError as ExportError, OutFileError

HF_EXTRA = "pip install 'rescue-bench[hf]'"
CITATION = """@article{hu2026rescuebench,
  title   = {RESCUE-Bench: Towards Relation-Aware Multi-Party Emotional Support Conversation Systems},
  author  = {Hu and others},
  journal = {arXiv preprint arXiv:2609.09657},
  year    = {2026}
}"""
class SampleRow(TypedDict):
    """One datasets row of a samples export (its fields are described in the card by :data:`SAMPLE_FIELDS`)."""

    sample_id: str
    scenario: str
    participants: list[str]
    turns: int
    record: str


class PromptMessage(TypedDict):
    """A prompt message of an instances export, its content as text (a multi-part content as JSON text)."""

    role: str
    content: str


class InstanceRow(TypedDict):
    """One datasets row of an instances export (its fields are described in the card by :data:`INSTANCE_FIELDS`)."""

    task: str
    instance_id: str
    sample_id: str
    scenario: str
    row_index: int
    messages: list[PromptMessage]
    answer: str
    gold: str


SAMPLE_FIELDS = {
    "sample_id": "the clip's id, `<group folder>/<clip>`",
    "scenario": "`couple` or `family`",
    "participants": "the clients' names (the therapist is `Therapist`)",
    "turns": "number of annotated rows",
    "record": "the sample exactly as the release writes it (JSON text): `rows` with timing, speakers, dialogue, "
              "individual cues, relational stance, support strategy and relation pattern",
}
INSTANCE_FIELDS = {
    "task": "itp, rpp, stp, ssp, er or vp",
    "instance_id": "`<sample_id>#<local id>`",
    "sample_id": "the clip the instance comes from",
    "scenario": "`couple` or `family`",
    "row_index": "the row the instance is about",
    "messages": "the exact prompt `rescue run` sends (role, content)",
    "answer": "the gold answer in the task's own answer schema (what a perfect model replies)",
    "gold": "the gold label or annotation (JSON text)",
}


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise ExportError(f"--format hf needs the 'hf' extra (missing: datasets): {HF_EXTRA}") from None
    return datasets


def sample_rows(samples: list[Sample]) -> list[SampleRow]:
    """One datasets row per sample: id, scenario, participants, turns, and the whole record as JSON."""
    return [{"sample_id": s.sample_id, "scenario": s.scenario, "participants": list(s.participants),
             "turns": len(s.rows), "record": s.release_json()} for s in samples]


def instance_rows(examples: list[ChatExample]) -> list[InstanceRow]:
    """One datasets row per instance: the prompt messages, the answer and the gold as JSON."""
    return [{"task": e.task, "instance_id": e.instance.instance_id, "sample_id": e.instance.sample_id,
             "scenario": e.instance.scenario, "row_index": e.instance.row_index,
             "messages": [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str)
                           else json.dumps(m["content"], ensure_ascii=False)} for m in e.messages[:-1]],
             "answer": e.answer, "gold": json.dumps(e.instance.gold, ensure_ascii=False)} for e in examples]


def dataset_card(kind: Literal["samples", "instances"], splits: dict[str, list[Sample]],
                 rows: dict[str, int]) -> str:
    """README.md of the folder: YAML header for the hub, then the figures, fields, licence and citation."""
    every = [s for group in splits.values() for s in group]
    stats = dataset_stats.compute(every)
    fields = SAMPLE_FIELDS if kind == "samples" else INSTANCE_FIELDS
    split_lines = "\n".join(f"| {name} | {len(group)} | {rows[name]} |" for name, group in splits.items())
    header = "\n".join([
        "---", "license: other  # TODO: the licence of your data and of the source recordings", "language:", "- en",
        "task_categories:", "- text-classification", "- text-generation", "pretty_name: RESCUE-Bench",
        "tags:", "- emotional-support", "- multi-party", "- therapy", "---", ""])
    return "\n".join([
        header,
        f"# RESCUE-Bench ({kind})", "",
        "Relation-aware, multi-party emotional support: couple and family therapy sessions annotated turn by turn "
        "on six dimensions (timing and speakers; what was said; individual cues; relational stance; the "
        "therapist's support strategy and its target; the group's relation pattern). Exported by rescue "
        "(`rescue export --format hf`).", "",
        "## Splits", "", f"| split | samples | {'rows' if kind == 'samples' else 'instances'} |", "|---|---|---|",
        split_lines, "",
        "Splits (when not `all`) are assigned by session group (a couple, or a family across its clips): no group is "
        "in two splits (`rescue splits`).", "",
        "## Statistics (the paper's Table 3)", "", dataset_stats.render_markdown(stats),
        "## Fields", "", "| field | meaning |", "|---|---|",
        *(f"| `{name}` | {meaning} |" for name, meaning in fields.items()), "",
        "Load it with `datasets.load_from_disk(FOLDER)`; `rescue.load(FOLDER)` reads a samples folder back as "
        "release-format samples.", "",
        "## Licence", "", "TODO: state the licence of the annotations and the terms of the source recordings.", "",
        "## Citation", "", "```bibtex", CITATION, "```", ""])


EXPORT_MARK = "dataset_dict.json"  # what datasets' save_to_disk writes at the top of the folder


def check_export_folder(out: Path) -> None:
    """``--out`` of ``--format hf`` is replaced whole, so it must be absent, an empty folder, or a folder an
    earlier export wrote (it holds ``dataset_dict.json``): never a link, a file or a device, nor a folder of
    other things (a home folder named by mistake would be deleted). Raises :class:`OutFileError` naming it."""
    out = Path(out)
    if out.is_symlink():
        raise OutFileError(out, f"a symbolic link to {os.readlink(out)}; an hf export replaces its folder whole "
                           "and never through a link: name the folder itself")
    if not out.exists():
        return
    if not out.is_dir():
        check_target(out)  # names a FIFO, a device or a socket as it is
        raise OutFileError(out, "exists and is not a folder; an hf export writes a folder: name a new one")
    if any(out.iterdir()) and not (out / EXPORT_MARK).is_file():
        raise OutFileError(out, f"a folder that holds other things than an export (no {EXPORT_MARK}); an hf "
                           "export replaces its folder whole: name a new or empty folder, or an earlier export")


def write_hf(out: Path, kind: Literal["samples", "instances"], splits: dict[str, list[Sample]],
             examples: dict[str, list[ChatExample]] | None = None) -> dict[str, int]:
    """Write the folder; returns rows per split. ``out`` is replaced whole or left as it was."""
    import shutil
    import tempfile

    for name in splits:  # each split is a folder of ``out``: a name like "../x" would be written outside it
        path_name(name, file=out, field="split")
    distinct_path_names(splits, file=out, field="split")
    datasets = _datasets()
    datasets.disable_progress_bars()  # rescue prints its own one-line summary
    tables: dict[str, list[SampleRow] | list[InstanceRow]] = {}
    for name, group in splits.items():
        tables[name] = sample_rows(group) if kind == "samples" else instance_rows((examples or {}).get(name, []))
    rows = {name: len(table) for name, table in tables.items()}
    if not any(rows.values()):
        raise ExportError(f"nothing to export to {out}: no {kind}")
    out = Path(out)
    check_export_folder(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        # An empty split has no columns to infer: it is left out rather than saved with another schema.
        saved = datasets.DatasetDict({name: datasets.Dataset.from_list(table)
                                      for name, table in tables.items() if table})
        saved.save_to_disk(str(staging))
        (staging / "README.md").write_text(dataset_card(kind, splits, rows), encoding="utf-8")
        check_export_folder(out)  # again: something may have been put there while the export was made
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return rows
