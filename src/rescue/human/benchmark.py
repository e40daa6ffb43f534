"""A benchmark project: people take the benchmark's task instances in the browser (issue #38).

``rescue review init DIR --benchmark --data FILE --tasks itp,rpp`` copies the data into ``DIR/data/`` (under its
own file name, so its data digest is the one a ``rescue run`` on FILE records) and writes ``DIR/benchmark.json``.
The instances are the tasks' own (``task.build``), and a person is shown exactly what a model is shown: the page
is made from the parts of the prompt the task sends for that one instance (``task.parts``, the same parts
``task.render`` makes the message of): its instructions, the item's context rows, its current row (where the task
shows it), the facts it gives and its labels with their definitions, so nothing a prompt hides can reach the
browser. Answers are checked against the task's answer shape and the instance's closed set here,
before they are stored; the export then sends them through the task's own ``format_answer`` and ``parse``.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rescue.atomic import write_atomic
from rescue.data.fingerprint import data_sha256
from rescue.data.groups import infer_groups
from rescue.data.loading import load_samples
from rescue.data.readback import read_json_file, validated
from rescue.data.models import GROUP_LABELS, Sample
from rescue.data.taxonomy import INTENSITY_SCALE, Label, stated_definition
from rescue.data.text import visible_text, visible_words
from rescue.errors import ReviewError
from rescue.review.project import BENCHMARK_FILE, DRAFT_FILE
from rescue.human.shapes import BenchPage, Frame, FramesView, LabelDefinition
from rescue.tasks import get_task
from rescue.tasks.base import MODES, VIDEO_MODES, Instance, RenderOptions, Task
from rescue.tasks.prompts import PromptParts, ShowsParts

if TYPE_CHECKING:  # the video layer loads only for a project in a video mode
    from rescue.video import VideoContext

DATA_DIR = "data"
MEDIA_CACHE = ".media-cache"  # the frames of a video-mode project, made once
TOP_K = 3  # a ranking task asks for the 3 most likely labels
MAX_ANSWER_TEXT = 500  # one emotion or viewpoint phrase
MAX_VIEWPOINTS = 10
MAX_BENCHMARK_BYTES = 1024 * 1024  # a few hundred bytes written: anything near this was not


class SampleRecord(BaseModel):
    """``benchmark.json``'s ``sample``: how ``--sample N`` drew each task's instances, and which it kept."""

    model_config = ConfigDict(extra="forbid", strict=True)

    per_task: int = Field(ge=1)
    seed: int
    strata: list[str] = Field(max_length=10)
    of: dict[str, int] = Field(default_factory=dict)  # each task's full count
    instances: dict[str, list[str]]  # each task's kept instance ids, in build order


class BenchmarkFile(BaseModel):
    """``benchmark.json`` as ``rescue review init --benchmark`` writes it; a key it does not know is refused when
    read (a misspelt ``per_instance`` would otherwise fall back to 1 without a word)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    version: Literal[1] = 1
    data: str = Field(min_length=1, max_length=4096)
    data_sha256: str | None = None
    tasks: list[str] = Field(min_length=1, max_length=100)
    per_instance: int = Field(default=1, ge=1, le=10_000)
    mode: str = "dialogue"
    instances: dict[str, int] = Field(default_factory=dict)
    video: dict[str, str | int | float | None] | None = None
    sample: SampleRecord | None = None  # --sample N: the instances kept



def _task_names(tasks: list[str]) -> list[str]:
    names = [get_task(t).name for t in tasks if t.strip()]
    if not names:
        raise ReviewError("--tasks: name at least one task (e.g. itp,rpp)")
    return list(dict.fromkeys(names))


def _video_config(mode: str, media_root: str | Path | None) -> dict[str, Any] | None:
    if mode not in MODES:
        raise ReviewError(f"--mode {mode!r}: choose one of {', '.join(MODES)}")
    if mode not in VIDEO_MODES:
        if media_root is not None:
            raise ReviewError(f"--media-root needs --mode {' or '.join(VIDEO_MODES)}")
        return None
    if media_root is None or not Path(media_root).is_dir():
        raise ReviewError(f"--mode {mode}: give --media-root, the folder that holds the sessions' videos")
    # Frames, as images a page can show; a clip would need the browser to fetch media the CSP keeps to the app.
    return {"media_root": str(Path(media_root).resolve()), "video_input": "frames"}


def init_benchmark(root: str | Path, data: str | Path, tasks: list[str], per_instance: int = 2,
                   mode: str = "dialogue", media_root: str | Path | None = None, sample: int | None = None,
                   seed: int = 0) -> dict[str, Any]:
    """Make the benchmark project ``root``: its data copied in, ``benchmark.json`` written. With ``sample``, each
    task keeps that many of its instances (:func:`stratified_sample`, recorded with ``seed`` in benchmark.json).
    ReviewError for a folder that already holds a project, a per-instance count or sample below 1, unknown tasks,
    a video mode without media; DataError for bad data; VideoError for media that cannot serve every sample."""
    folder, source = Path(root), Path(data)
    if per_instance < 1:
        raise ReviewError(f"--per-instance {per_instance}: give each instance to at least one person")
    if sample is not None and sample < 1:
        raise ReviewError(f"--sample {sample}: keep at least one instance of each task")
    video = _video_config(mode, media_root)
    if (folder / BENCHMARK_FILE).exists() or (folder / DRAFT_FILE).exists():
        raise ReviewError(f"{folder}: already holds a review project")
    if not source.is_file():
        raise ReviewError(f"--data {source}: no such file")
    names = _task_names(tasks)
    samples = load_samples(source)  # bad data stops here, naming its line, before anything is written
    built = {name: get_task(name).build(samples) for name in names}
    counts = {name: len(found) for name, found in built.items()}
    empty = [name for name, n in counts.items() if not n]
    if empty:
        raise ReviewError(f"--data {source}: no instance of {', '.join(empty)} in these samples")
    if video is not None:
        _video_context(video, samples, None)  # every sample's media found and readable, before anything is written
    (folder / DATA_DIR).mkdir(parents=True, exist_ok=True)
    copy = folder / DATA_DIR / source.name
    shutil.copyfile(source, copy)
    chosen = {}
    if sample is not None:
        chosen = {name: [i.instance_id for i in stratified_sample(found, sample, seed, name)] for name, found in built.items()}
    config = {"version": 1, "data": f"{DATA_DIR}/{source.name}", "data_sha256": data_sha256(copy), "tasks": names,
              "per_instance": per_instance, "mode": mode,
              "instances": {name: len(ids) for name, ids in chosen.items()} if chosen else counts,
              **({"video": video} if video else {}),
              **({"sample": {"per_task": sample, "seed": seed, "strata": list(STRATA), "of": counts,
                             "instances": chosen}} if chosen else {})}
    write_atomic(folder / BENCHMARK_FILE, json.dumps(config, indent=2) + "\n")
    return config


STRATA = ("scenario", "session group")  # what --sample stratifies each task's instances by


def stratified_sample(instances: list[Instance], n: int, seed: int, task: str) -> list[Instance]:
    """``n`` of a task's instances (all of them when it has no more), in build order: each stratum (scenario and
    session group, :func:`rescue.data.groups.infer_groups`) in its share by largest remainder (ties: the larger
    stratum, then its name), drawn within it by a generator seeded with ``seed``, the task and the stratum, so
    the same data, task and seed always give the same instances."""
    if n >= len(instances):
        return list(instances)
    groups = infer_groups({i.sample.sample_id: i.sample for i in instances}.values())
    strata: dict[tuple[str, str], list[Instance]] = defaultdict(list)
    for instance in instances:
        strata[(instance.sample.scenario, groups.group_of(instance.sample.sample_id))].append(instance)
    exact = {key: n * len(found) / len(instances) for key, found in strata.items()}
    quota = {key: int(share) for key, share in exact.items()}
    for key in sorted(strata, key=lambda k: (-(exact[k] - quota[k]), -len(strata[k]), k))[:n - sum(quota.values())]:
        quota[key] += 1
    kept = {i.instance_id for key, found in sorted(strata.items())
            for i in random.Random(f"{seed}:{task}:{key[0]}:{key[1]}").sample(found, quota[key])}
    return [i for i in instances if i.instance_id in kept]


@dataclass
class Benchmark:
    """A loaded benchmark project: its configuration, samples and every task's instances in build order."""

    root: Path
    config: dict[str, Any]
    samples: list[Sample]
    instances: dict[str, list[Instance]] = field(default_factory=dict)
    video: VideoContext | None = None  # in a video mode: the frames each instance's prompt carries
    _reach: dict[tuple[str, int], int] = field(default_factory=dict, repr=False)  # made once per instance
    _turns: dict[tuple[str, int], list[tuple[str, int]]] | None = field(default=None, repr=False)

    @property
    def mode(self) -> str:
        """The mode prompts are rendered in (dialogue unless the project says otherwise)."""
        return str(self.config.get("mode", "dialogue"))

    @property
    def tasks(self) -> list[str]:
        """The project's tasks, in its order."""
        return list(self.instances)

    @property
    def data_path(self) -> Path:
        """The project's copy of the data."""
        return self.root / str(self.config["data"])

    @property
    def per_instance(self) -> int:
        """How many people answer each instance."""
        return int(self.config.get("per_instance", 1))

    @property
    def segments(self) -> dict[str, Any]:
        """Nothing to verify: ``rescue review serve`` counts a benchmark's instances instead."""
        return {}

    def instance(self, task: str, number: int) -> Instance:
        """The ``number``-th (from 1) instance of ``task``; ReviewError when there is none."""
        found = self.instances.get(task) or []
        if not 1 <= number <= len(found):
            raise ReviewError(f"no instance {task}/{number}")
        return found[number - 1]

    def keys(self) -> list[tuple[str, int]]:
        """Every (task, number) of the project."""
        return [(task, n) for task, found in self.instances.items() for n in range(1, len(found) + 1)]

    def sample_of(self, task: str, number: int) -> str:
        """The sample (session) the instance is of: the unit look-ahead is about."""
        return self.instance(task, number).sample.sample_id

    def hides_from(self, task: str, number: int) -> int:
        """The first row of its sample the instance hides: its own row where the task predicts it (RPP, STP, SSP),
        else the row after it (ITP's decision row and ER/VP's current turn are shown)."""
        return hidden_from(get_task(task), self.instance(task, number))

    def reach(self, task: str, number: int) -> int:
        """The last row of its sample the instance's page tells anything about: its last shown row, or the row it
        hides where the page gives facts of that row (RPP's target speaker, SSP's support target). Read from the
        page itself, so a task that shows more reaches further."""
        key = (task, number)
        if key not in self._reach:
            self._reach[key] = _reach_of(self, task, number)
        return self._reach[key]

    def same_turn(self, task: str, number: int) -> list[tuple[str, int]]:
        """The other instances of the project on the same sample and row (other tasks' instances of that turn)."""
        if self._turns is None:
            self._turns = defaultdict(list)
            for key in self.keys():
                found = self.instance(*key)
                self._turns[(found.sample.sample_id, found.row_index)].append(key)
        found = self.instance(task, number)
        return [k for k in self._turns[(found.sample.sample_id, found.row_index)] if k != (task, number)]

    def reveals(self, shown: tuple[str, int], other: tuple[str, int]) -> bool:
        """Whether showing the page of ``shown`` shows something ``other`` hides (no-look-ahead: the answer to
        ``other`` must come before it). An instance never reveals itself."""
        return (shown != other and self.sample_of(*shown) == self.sample_of(*other)
                and self.reach(*shown) >= self.hides_from(*other))


def load_benchmark(root: str | Path) -> Benchmark:
    """Read ``root/benchmark.json`` and its data; ReviewError naming the file and field when it cannot."""
    folder = Path(root).resolve()
    path = folder / BENCHMARK_FILE
    try:  # read as every file rescue wrote is (rescue.data.readback): edited, cut or hostile ones named
        value = read_json_file(path, ReviewError, max_bytes=MAX_BENCHMARK_BYTES)
    except OSError as exc:
        raise ReviewError(f"{path}: cannot read the benchmark project ({exc.strerror or exc}; write it with "
                          "`rescue review init --benchmark`)") from None
    if not isinstance(value, dict):
        raise ReviewError(f"{path}:1: expected a JSON object (write it with `rescue review init --benchmark`)")
    config = validated(BenchmarkFile, value, str(path), ReviewError).model_dump(exclude_none=True)
    if config.get("video"):
        from rescue.video import VideoOptions

        unknown = sorted(set(config["video"]) - {f.name for f in fields(VideoOptions)})
        if unknown:
            raise ReviewError(f"{path}: field video.{unknown[0]}: not a video option rescue knows")
    data = (folder / config["data"]).resolve()
    if folder not in data.parents:
        raise ReviewError(f"{path}: field data: {config['data']!r} must be a file inside the project folder")
    samples = load_samples(data)
    instances = {name: get_task(name).build(samples) for name in _task_names([str(t) for t in config["tasks"]])}
    if "sample" in config:
        instances = _sampled(path, config["sample"], instances)
    bench = Benchmark(folder, config, samples, instances)
    if isinstance(config.get("video"), dict):
        bench.video = _video_context(config["video"], samples, folder / MEDIA_CACHE)
        # Every instance's frames are made (or found in the cache) now, as a run makes them before it asks.
        bench.video.wrap_tasks({n: get_task(n) for n in instances}, instances, None)
    return bench


def _sampled(path: Path, sample: Any, instances: dict[str, list[Instance]]) -> dict[str, list[Instance]]:
    """Each task's instances that ``sample.instances`` names (in build order); ReviewError naming the field when
    it names one the data does not make."""
    chosen = sample.get("instances") if isinstance(sample, dict) else None
    if not isinstance(chosen, dict):
        raise ReviewError(f"{path}: field sample.instances: missing (write it with `rescue review init --sample N`)")
    kept = {}
    for task, found in instances.items():
        ids = chosen.get(task)
        if not isinstance(ids, list):
            raise ReviewError(f"{path}: field sample.instances.{task}: missing")
        known = {i.instance_id for i in found}
        unknown = [str(i) for i in ids if i not in known]
        if unknown:
            raise ReviewError(f"{path}: field sample.instances.{task}: {unknown[0][:80]!r} is no instance of the data")
        wanted = set(ids)
        kept[task] = [i for i in found if i.instance_id in wanted]
    return kept


def _video_context(video: dict[str, Any], samples: list[Sample], cache: Path | None) -> VideoContext:
    from rescue.video import VideoContext, VideoOptions

    return VideoContext.locate(VideoOptions(**video), samples, cache)


def _frames(bench: Benchmark, task: Task, instance: Instance) -> FramesView | None:
    """The media the instance's prompt carries: its note and each frame (caption, data URL), nothing later."""
    if bench.video is None:
        return None
    from rescue.llm import ImagePart, TextPart

    parts = bench.video.media_parts(task, instance, None)
    note = parts[0].text if parts and isinstance(parts[0], TextPart) else ""
    frames: list[Frame] = []
    caption = ""
    for part in parts[1:]:
        if isinstance(part, TextPart):
            caption = part.text.strip("[]")
        elif isinstance(part, ImagePart):
            frames.append({"caption": caption, "src": part.data_url()})
    return {"note": note, "frames": frames}


# --- what a person sees ----------------------------------------------------------------------------------------


def prompt_parts(task: Task, instance: Instance, mode: str = "dialogue") -> PromptParts:
    """The parts of the one prompt a model gets for this instance alone (the task's :class:`PromptParts`)."""
    if not isinstance(task, ShowsParts):
        raise ReviewError(f"task {task.name}: its prompt's parts are not exposed (a task's parts method), so a "
                          "person cannot be shown what a model is")
    return task.parts([instance], RenderOptions(mode=mode))  # type: ignore[arg-type]


def _definitions(labels: list[str], defined: tuple[Label, ...]) -> list[LabelDefinition]:
    """Each label of the instance's closed set with its whole definition as the prompt states it: the definition,
    then when to use it and when not ("" where the prompt defines no such label)."""
    stated = {label.name: stated_definition(label) for label in defined}
    return [{"label": name, "definition": stated.get(name, "")} for name in labels]


def _people(instance: Instance) -> list[str]:
    """Whom a viewpoint may be held by or be about: the participants and the group."""
    sample = instance.sample
    return [*sample.participants, GROUP_LABELS.get(sample.scenario, "Couple")]


def hidden_from(task: Task, instance: Instance) -> int:
    """The first row of the instance's sample its prompt hides (the declaration's ``hidden``)."""
    return instance.row_index if task.declaration.hidden == "row" else instance.row_index + 1


def _reach_of(bench: Benchmark, task: str, number: int) -> int:
    shown = page(bench, task, number)
    current = [shown["current"]] if shown["current"] else []
    rows = [r["row_index"] for r in [*shown["context"], *current] if isinstance(r.get("row_index"), int)]
    if shown["given"]:  # facts of the row the instance predicts
        rows.append(bench.instance(task, number).row_index)
    return max(rows, default=-1)


def page(bench: Benchmark, task_name: str, number: int) -> BenchPage:
    """What the page of one instance shows: made from the parts of the instance's prompt only (never from its
    sample): its instructions, its item (the values it gives, its context rows, its own row where the task shows
    it) and its labels with their definitions."""
    task, instance = get_task(task_name), bench.instance(task_name, number)
    parts = prompt_parts(task, instance, bench.mode)
    instructions, current = parts.instructions_text, parts.current()
    kind = task.declaration.answer
    return {
        "task": task.name, "title": task.title, "number": number, "total": len(bench.instances[task.name]),
        "answer_kind": kind, "rank": min(TOP_K, len(instance.labels)) if kind == "ranking" else 1,
        "labels": _definitions(instance.labels, parts.labels),
        "intensity": list(INTENSITY_SCALE),
        "people": _people(instance) if kind == "viewpoints" else [],
        "speaker": current.get("primary_speaker", "") if current else "",
        "instructions": instructions, "statement": instructions.split("\n\n", 1)[0].strip(),
        "context": parts.context(), "current": current,
        "given": parts.given(), "media": _frames(bench, task, instance),
    }


def withheld_page(bench: Benchmark, task_name: str, number: int) -> BenchPage:
    """The page of an instance a person may no longer answer (locked before they answered it): its task and
    number only, nothing of its prompt."""
    task = get_task(task_name)
    return {"task": task.name, "title": task.title, "number": number, "total": len(bench.instances[task.name]),
            "answer_kind": task.declaration.answer, "rank": 0, "labels": [], "intensity": list(INTENSITY_SCALE),
            "people": [], "speaker": "", "instructions": "", "statement": "", "context": [], "current": None, "given": {},
            "media": None}


# --- what a person may answer ----------------------------------------------------------------------------------


def _text(value: Any, where: str) -> str:
    # Blank is what shows nothing: spaces, and format characters (zero-width space, joiners, BOM, direction marks).
    if not isinstance(value, str) or not visible_words(value):
        raise ReviewError(f"{where}: write a short phrase")
    control = next((c for c in value if unicodedata.category(c) in ("Cc", "Cs") and not c.isspace()), None)
    if control is not None:
        raise ReviewError(f"{where}: holds the control character {visible_text(control)} (write a short phrase)")
    if len(value) > MAX_ANSWER_TEXT:
        raise ReviewError(f"{where}: at most {MAX_ANSWER_TEXT} characters")
    return re.sub(r"\s+", " ", value).strip()


def _label(value: Any, labels: list[str]) -> str:
    if value not in labels:
        raise ReviewError(f"answer: {str(value)[:60]!r} is not one of: {', '.join(labels)}")
    return str(value)


def _ranking(value: Any, labels: list[str]) -> list[str]:
    if not isinstance(value, list) or not 1 <= len(value) <= min(TOP_K, len(labels)):
        raise ReviewError(f"answer: rank 1 to {min(TOP_K, len(labels))} labels of the closed set, most likely first")
    ranked = [_label(v, labels) for v in value]
    if len(set(ranked)) != len(ranked):
        raise ReviewError("answer: a label may appear only once in a ranking")
    return ranked


def _emotion(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) != {"emotion", "intensity"}:
        raise ReviewError("answer: give {\"emotion\": phrase, \"intensity\": 0-10}")
    low, high = INTENSITY_SCALE
    intensity = value["intensity"]
    if isinstance(intensity, bool) or not isinstance(intensity, int) or not low <= intensity <= high:
        raise ReviewError(f"answer.intensity: a whole number from {low} to {high}")
    return {"emotion": _text(value["emotion"], "answer.emotion"), "intensity": intensity}


def _viewpoints(value: Any, people: list[str]) -> list[dict[str, str]]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_VIEWPOINTS:
        raise ReviewError(f"answer: give 1 to {MAX_VIEWPOINTS} viewpoints")
    found = []
    for i, entry in enumerate(value):
        where = f"answer[{i}]"
        if not isinstance(entry, dict) or set(entry) != {"source", "target", "viewpoint"}:
            raise ReviewError(f"{where}: give source, target and viewpoint")
        for key in ("source", "target"):
            if entry[key] not in people:
                raise ReviewError(f"{where}.{key}: {str(entry[key])[:60]!r} is not one of: {', '.join(people)}")
        if entry["source"] == entry["target"]:  # the rulebook's self-target rule, as for a model's or a draft's
            raise ReviewError(f"{where}.target: a viewpoint is about someone else; {str(entry['source'])[:60]!r} is "
                              "its source and its target")
        found.append({"source": entry["source"], "target": entry["target"],
                      "viewpoint": _text(entry["viewpoint"], f"{where}.viewpoint")})
    return found


def checked_answer(bench: Benchmark, task_name: str, number: int, value: Any) -> Any:
    """``value`` as the task's answer for the instance, or ReviewError saying what is wrong with it."""
    task, instance = get_task(task_name), bench.instance(task_name, number)
    kind = task.declaration.answer
    if kind == "label":
        return _label(value, instance.labels)
    if kind == "ranking":
        return _ranking(value, instance.labels)
    if kind == "emotion":
        return _emotion(value)
    return _viewpoints(value, _people(instance))
