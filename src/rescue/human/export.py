"""People's answers as systems of a run, and what their answers cost and how much they agree (issue #38).

Each person is a model ``human/<name>`` and the pooled answer ``human/pooled``: they answer the run's requests
from the stored answers through the task's own ``format_answer``, so the runner parses and scores them with the
same code as any model (ER and VP with the same judges and BERTScore). A person answers only their instances;
an instance they did not answer is missing from their answer, which the task's ``parse`` records as a failure,
as for a model, so every system of the run covers the same instances.

The pooled answer of an instance: the most frequent label (a tie goes to the closed set's order); the Borda
count of the rankings (the same tie-break); for ER the median intensity with the phrase of the person whose
intensity is nearest it (then the first by name); for VP the viewpoints of the first person by name.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any

from rescue.display import markdown_table, markdown_text
from rescue.llm import ChatAnswer
from rescue.metrics.agreement import alpha, text_agreement
from rescue.human.benchmark import Benchmark
from rescue.human.shapes import Disagreement, GivenAnswer, HumanSummary, TaskAgreement, TimeStats
from rescue.tasks import get_task
from rescue.tasks.base import Instance, RenderOptions, Task

PREFIX = "human/"
POOLED = "pooled"
FEW_UNITS = 30  # below this many doubly answered instances, agreement figures carry wide uncertainty
DISAGREEMENTS_SHOWN = 10


class HumanModel:
    """A person's (or the pooled) stored answers as a model of a run (the runner's TaskModel protocol)."""

    def __init__(self, name: str, answers: dict[tuple[str, str], Any]):
        self.name = PREFIX + name
        self.answers = answers  # (task, instance_id) -> value

    def applies_to(self, task_name: str) -> bool:
        """People answer every task of the project."""
        return True

    def prepare(self, task: Task, instances: list[Instance], options: RenderOptions | None = None) -> None:
        """Nothing to learn."""
        return None

    async def solve(self, ask: Any) -> ChatAnswer:
        """The stored answers of the batch, in the task's own answer format."""
        task: Task = ask.task
        values = {i.instance_id: self.answers[(task.name, i.instance_id)] for i in ask.batch
                  if (task.name, i.instance_id) in self.answers}
        return ChatAnswer(task.format_answer(ask.batch, values), meta={"human": self.name})

    async def aclose(self) -> None:
        """Nothing to release."""
        return None


def _by_instance(answers: list[GivenAnswer]) -> dict[tuple[str, int], dict[str, Any]]:
    grouped: dict[tuple[str, int], dict[str, Any]] = defaultdict(dict)
    for answer in answers:
        grouped[(answer["task"], answer["number"])][answer["user"]] = answer["value"]
    return grouped


def _pooled_label(values: list[Any], labels: list[str]) -> Any:
    counts = Counter(values)
    return max(labels, key=lambda label: (counts[label], -labels.index(label)))


def _pooled_ranking(values: list[list[str]], labels: list[str]) -> list[str]:
    size = max(len(v) for v in values)
    points: Counter[str] = Counter()
    for ranking in values:
        for at, label in enumerate(ranking):
            points[label] += size - at
    return sorted((label for label in labels if points[label]), key=lambda x: (-points[x], labels.index(x)))[:size]


def _pooled_emotion(values: list[dict[str, Any]]) -> dict[str, Any]:
    middle = round(statistics.median(v["intensity"] for v in values))
    nearest = min(values, key=lambda v: abs(v["intensity"] - middle))
    return {"emotion": nearest["emotion"], "intensity": middle}


def pooled_value(task: Task, instance: Instance, by_person: dict[str, Any]) -> Any:
    """The pooled answer of an instance from each person's answer (see the module's description)."""
    values = [by_person[name] for name in sorted(by_person)]
    kind = task.declaration.answer
    if kind == "label":
        return _pooled_label(values, instance.labels)
    if kind == "ranking":
        return _pooled_ranking(values, instance.labels)
    if kind == "emotion":
        return _pooled_emotion(values)
    return values[0]


def human_models(bench: Benchmark, answers: list[GivenAnswer]) -> list[HumanModel]:
    """One model per person who answered anything (by name), then ``human/pooled``."""
    per_person: dict[str, dict[tuple[str, str], Any]] = defaultdict(dict)
    pooled: dict[tuple[str, str], Any] = {}
    for (task_name, number), by_person in sorted(_by_instance(answers).items()):
        instance = bench.instance(task_name, number)
        for name, value in by_person.items():
            per_person[name][(task_name, instance.instance_id)] = value
        pooled[(task_name, instance.instance_id)] = pooled_value(get_task(task_name), instance, by_person)
    return [HumanModel(name, found) for name, found in sorted(per_person.items())] + [HumanModel(POOLED, pooled)]


# --- time and agreement ----------------------------------------------------------------------------------------


def _times(answers: list[GivenAnswer], order: list[str]) -> dict[str, dict[str, TimeStats]]:
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for answer in sorted(answers, key=lambda a: order.index(a["task"])):
        if answer["seconds"] is not None:
            per[answer["user"]][answer["task"]].append(float(answer["seconds"]))
    return {name: {task: {"answered": len(xs), "median_s": round(statistics.median(xs), 1),
                          "mean_s": round(statistics.fmean(xs), 1)} for task, xs in tasks.items()}
            for name, tasks in sorted(per.items())}


def _category(kind: str, value: Any) -> str:
    """What exact agreement compares: the label, the top of a ranking, the emotion phrase, the viewpoints."""
    if kind == "ranking":
        return str(value[0])
    if kind == "emotion":
        return " ".join(str(value["emotion"]).casefold().split())
    if kind == "viewpoints":
        return "; ".join(sorted(f"{v['source']}>{v['target']}: {' '.join(v['viewpoint'].casefold().split())}"
                                for v in value))
    return str(value)


def _alpha(kind: str, units: list[dict[str, Any]], people: list[str]) -> float | None:
    if kind == "emotion":  # the intensities, on their interval scale
        matrix = [[u[p]["intensity"] if p in u else None for u in units] for p in people]
        return alpha(matrix, "interval")
    if kind == "viewpoints":
        return None  # free text: exact agreement and token overlap only
    codes = {c: i for i, c in enumerate(sorted({_category(kind, v) for u in units for v in u.values()}))}
    return alpha([[codes[_category(kind, u[p])] if p in u else None for u in units] for p in people], "nominal")


def _spread(kind: str, values: list[Any]) -> float:
    """How far apart the answers of one instance are: distinct answers (ER: plus the intensity range)."""
    distinct = len({_category(kind, v) for v in values})
    if kind == "emotion":
        spread = [int(v["intensity"]) for v in values]
        return distinct + (max(spread) - min(spread)) / 10
    return float(distinct)


def _task_agreement(bench: Benchmark, task_name: str, grouped: dict[tuple[str, int], dict[str, Any]]) -> TaskAgreement:
    kind = get_task(task_name).declaration.answer
    units = {number: by for (task, number), by in grouped.items() if task == task_name and len(by) >= 2}
    people = sorted({p for by in units.values() for p in by})
    texts = [[_category(kind, v) for v in by.values()] for by in units.values()]
    exact = text_agreement(texts)["exact"] if kind in ("emotion", "viewpoints") else (
        sum(1 for t in texts if len(set(t)) == 1) / len(texts) if texts else None)
    worst = sorted(units.items(), key=lambda item: (-_spread(kind, list(item[1].values())), item[0]))
    shown: list[Disagreement] = [{"number": n, "instance_id": bench.instance(task_name, n).instance_id, "answers": by}
             for n, by in worst[:DISAGREEMENTS_SHOWN] if _spread(kind, list(by.values())) > 1]
    result: TaskAgreement = {
        "units": len(units), "raters": len(people), "alpha": _alpha(kind, list(units.values()), people) if units else None,
        "alpha_of": {"label": "label, nominal", "ranking": "top label, nominal", "emotion": "intensity, interval",
                     "viewpoints": "none (free text)"}[kind],
        "exact_agreement": exact, "disagreements": shown,
    }
    if kind in ("emotion", "viewpoints"):
        result["token_overlap"] = text_agreement(texts)["token_overlap"]
    if len(units) < FEW_UNITS:
        result["note"] = (f"only {len(units)} instance(s) answered by two or more people: agreement is uncertain "
                          f"(aim for {FEW_UNITS} or more)")
    return result


def human_summary(bench: Benchmark, answers: list[GivenAnswer]) -> HumanSummary:
    """Time per instance per person and task, and agreement between people per task."""
    grouped = _by_instance(answers)
    answered = {t: sum(1 for (task, _n) in grouped if task == t) for t in bench.tasks}
    return {
        "instances": {t: len(v) for t, v in bench.instances.items()}, "answered": answered,
        "per_instance": bench.per_instance, "time": _times(answers, bench.tasks),
        "agreement": {t: _task_agreement(bench, t, grouped) for t in bench.tasks},
    }


def _figure(value: Any) -> str:
    return "—" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def summary_markdown(summary: HumanSummary) -> str:
    """The summary as Markdown (``human.md`` beside the run); people's text and instance ids as plain text."""
    times = [[name, t.upper(), str(v["answered"]), str(v["median_s"]), str(v["mean_s"])]
             for name, tasks in summary["time"].items() for t, v in tasks.items()]
    agreement = [[t.upper(), str(a["units"]), str(a["raters"]), _figure(a["alpha"]), a["alpha_of"], _figure(a["exact_agreement"])]
                 for t, a in summary["agreement"].items()]
    notes = [f"- {t.upper()}: {a['note']}." for t, a in summary["agreement"].items() if a.get("note")]
    disputed = [
        f"- {task.upper()} {markdown_text(d['instance_id'])}: " + markdown_text("; ".join(
            f"{p}: {_category(get_task(task).declaration.answer, v)}" for p, v in sorted(d["answers"].items())))
        for task, a in summary["agreement"].items() for d in a["disagreements"]]
    return "\n".join([
        "# People on the benchmark", "", "## Time per instance (seconds from first shown to first answer)", "",
        markdown_table(["person", "task", "answered", "median s", "mean s"], times),
        "## Agreement between people", "",
        markdown_table(["task", "instances answered twice+", "people", "α", "α of", "exact agreement"], agreement),
        *notes, "", "## Where people disagree most", "", *disputed]).rstrip() + "\n"
