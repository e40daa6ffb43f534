"""``rescue submit RUN --out FILE``: a run directory packed as one bundle (:mod:`rescue.submissions.bundle`).

The bundle holds the run's own ``results.json`` and ``predictions.jsonl`` byte for byte, every answer its models
and judges gave (from the run's cache), every leaderboard cell with its interval, and a manifest of what was run.
The data is read again to compute each task's instance and prompt digests; it must be the data the run used
(its SHA-256 is checked), so a bundle always names the release it was made on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rescue.data.fingerprint import data_sha256
from rescue.data.loading import load_samples
from rescue.engine.config import RunConfig
from rescue.errors import BundleError, RescueError
from rescue.llm import ResponseCache
from rescue.runs.folder import CACHE, locked_message, read_run
from rescue.runs.results import PREDICTIONS, RESULTS, RunResults
from rescue.submissions.bundle import (ANSWERS, BUNDLE_SCHEMA, INTERVALS, PEOPLE, Declarations, Manifest, RunState,
                                       SystemFacts, canonical_json, now_iso, system_kind, write_bundle)
from rescue.submissions.facts import run_intervals, taken_instances, task_facts
from rescue.tasks.base import PredictionRecord
from rescue._version import __version__


@dataclass
class Submitted:
    """What ``rescue submit`` wrote: the bundle, its systems and answers, and what the manifest says of the run."""

    path: Path
    manifest: Manifest
    answers: int


def run_data(results: RunResults, data: str | Path | None, origin: Path) -> tuple[str | None, str]:
    """The data a run used (``data`` or the path it recorded; None: the bundled demo data) and its SHA-256,
    checked against the run's: a bundle's digests are only meaningful on the run's own data."""
    recorded = results.config.used.data_sha256 or (results.data.sha256 if results.data else None)
    path = str(data) if data is not None else (results.data.path if results.data and results.data.path else None)
    try:
        actual = data_sha256(path)
    except (OSError, RescueError) as exc:
        raise BundleError(f"--data {path}: cannot be read ({exc}); give the data the run used with --data") from None
    if recorded and actual != recorded:
        shown = path or "the bundled demo data"
        raise BundleError(f"{shown}: its SHA-256 is {actual[:12]}..., but {origin / RESULTS} records "
                          f"{recorded[:12]}...: give the data the run used with --data")
    return path, actual


def _answer_line(entry: tuple[str, str, str, str, dict[str, object], dict[str, object], float]) -> str:
    key, model, purpose, text, usage, meta, created = entry
    return canonical_json({"request_sha256": key, "model": model, "purpose": purpose, "text": text,
                           "finish_reason": meta.get("finish_reason", ""), "usage": usage, "meta": meta,
                           "answered_at": created}) + "\n"


def _count(usage: dict[str, object], key: str) -> int:
    value = usage.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _systems(results: RunResults, records: Iterable[PredictionRecord], answers: list[dict[str, object]],
             settings: dict[str, dict[str, object]]) -> dict[str, SystemFacts]:
    tasks: dict[str, set[str]] = {}
    for record in records:
        tasks.setdefault(record.model, set()).add(record.task)
    systems: dict[str, SystemFacts] = {}
    for name, model in results.models.items():
        own = [a for a in answers if a["model"] == name]
        served = sorted({str(a["meta"].get("served_model")) for a in own
                         if isinstance(a["meta"], dict) and a["meta"].get("served_model")})
        # usage: task -> the model's counts for it (its own requests; the judge's sit under "judge").
        counts = [u for task, u in model.usage.items() if task != "judge" and isinstance(u, dict)]
        requests = sum(_count(u, "requests") for u in counts)
        tokens_in = sum(_count(u, "input_tokens") for u in counts)
        tokens_out = sum(_count(u, "output_tokens") for u in counts)
        systems[name] = SystemFacts(kind=system_kind(name), configured=name, answered_as=served,
                                    settings=settings.get(name, {}), tasks=sorted(tasks.get(name, set())),
                                    requests=requests, input_tokens=tokens_in, output_tokens=tokens_out,
                                    cost=model.cost.total if model.cost else None, answers=len(own))
    return systems


def submit(run_dir: str | Path, out: str | Path, *, declarations: Declarations | None = None,
           data: str | Path | None = None, cache: str | Path | None = None) -> Submitted:
    """Pack ``run_dir`` as a bundle at ``out``; BundleError (nothing written) when the run cannot be read, is
    being written, was made on other data than ``data``, or its files hold a key."""
    root = Path(run_dir)
    locked = locked_message(root)
    if locked:
        raise BundleError(locked)
    try:
        results, records = read_run(root)
    except RescueError as exc:
        raise BundleError(str(exc)) from None
    if results.config.mode != "dialogue" and results.config.mode != "dialogue+transcript":
        if results.config.mode.startswith("video") or results.config.mode in ("frames", "clip"):
            raise BundleError(f"{root}: a {results.config.mode}-mode run cannot be submitted yet: its requests hold "
                              "media that a bundle does not carry (submit a dialogue-mode run)")
    config = RunConfig.from_json(results.config.as_dict(), str(root / RESULTS))
    path, sha = run_data(results, data, root)
    samples = load_samples(path, keep_text=False)
    if results.data is not None and results.data.sample_ids:
        chosen = set(results.data.sample_ids)
        samples = [s for s in samples if s.sample_id in chosen]
    facts = task_facts(config, samples, taken_instances(results))
    cache_file = Path(cache) if cache is not None else root / CACHE
    names = set(results.models) | set(results.config.judges)
    lines: list[str] = []
    if cache_file.is_file():
        store = ResponseCache(cache_file)
        try:
            lines = [_answer_line(tuple(entry)) for entry in store.answers_of(names)]  # type: ignore[arg-type]
        finally:
            store.close()
    answers = [json.loads(line) for line in lines]
    # The decoding settings each model was asked with (the run's, overridden by its own): what enters a request.
    settings = {name: {**config.settings_for(name).key_fields(), "thinking": config.settings_for(name).thinking}
                for name in results.models if system_kind(name) == "model"}
    run = results.run
    limited = bool(results.data and (results.data.sample_choice != "all" or results.data.instance_ids is not None))
    instance_sets = {(r.task, r.model) for r in records}
    per_task: dict[str, set[frozenset[str]]] = {}
    by_pair: dict[tuple[str, str], set[str]] = {}
    for r in records:
        by_pair.setdefault((r.task, r.model), set()).add(r.instance_id)
    for (task, _model), ids in by_pair.items():
        per_task.setdefault(task, set()).add(frozenset(ids))
    manifest = Manifest(
        bundle_schema=BUNDLE_SCHEMA, rescue_version=__version__, created=now_iso(), data_sha256=sha,
        samples=len(samples), mode=results.config.mode, tasks=facts,
        systems=_systems(results, records, answers, settings), judges=list(results.config.judges),
        judge={"scale": results.config.judge_scale,
               "prompt_sha256": getattr(results.config, "judge_prompt_sha256", None) or {}},
        bertscore=results.config.bertscore.model_dump(mode="json") if results.config.bertscore else None,
        thinking=results.config.thinking,
        state=RunState(complete=bool(run.complete) if run else False, rescored=bool(run.rescored) if run else False,
                       parse=results.config.parse,
                       limited=limited, mixed=any(len(sets) > 1 for sets in per_task.values()) or not instance_sets,
                       run_id=run.run_id if run else None, elapsed_s=run.elapsed_s if run else None),
        declarations=declarations or Declarations(), files={})
    people = {PEOPLE: (root / PEOPLE).read_bytes()} if (root / PEOPLE).is_file() else {}
    members = {**people, RESULTS: (root / RESULTS).read_bytes(), PREDICTIONS: (root / PREDICTIONS).read_bytes(),
               ANSWERS: "".join(lines).encode("utf-8"),
               INTERVALS: (json.dumps(run_intervals(root), indent=1, allow_nan=False) + "\n").encode("utf-8")}
    written = write_bundle(out, manifest, members)
    return Submitted(written, manifest, len(lines))
