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
from rescue.human.store import check_person_name
from rescue.human.shapes import (
    Disagreement,
    DisputedItem,
    GivenAnswer,
    GroupFigures,
    HumanSummary,
    PeopleBlock,
    PersonRecord,
    TaskAgreement,
    TimeStats,
)
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


def _panel(bench: Benchmark, answers: list[GivenAnswer], people: set[str]) -> dict[tuple[str, str], Any]:
    panel: dict[tuple[str, str], Any] = {}
    for (task_name, number), by_person in sorted(_by_instance(answers).items()):
        mine = {name: value for name, value in by_person.items() if name in people}
        if mine:
            instance = bench.instance(task_name, number)
            panel[(task_name, instance.instance_id)] = pooled_value(get_task(task_name), instance, mine)
    return panel


def panel_systems(groups: dict[str, str], people: list[str]) -> dict[str, list[str]]:
    """Each panel system (``human/pooled``: everyone; ``human/GROUP/panel``: a group's people) and its people."""
    panels = {PREFIX + POOLED: sorted(people)}
    for group in sorted(set(groups.values())):
        panels[f"{PREFIX}{group}/panel"] = sorted(p for p in people if groups.get(p) == group)
    return panels


def human_models(bench: Benchmark, answers: list[GivenAnswer], groups: dict[str, str] | None = None) -> list[HumanModel]:
    """One model per person who answered anything (by name), then ``human/pooled`` (everyone's panel) and a panel
    per group (``human/GROUP/panel``); ReviewError for a person named as one of those systems."""
    per_person: dict[str, dict[tuple[str, str], Any]] = defaultdict(dict)
    for (task_name, number), by_person in sorted(_by_instance(answers).items()):
        instance = bench.instance(task_name, number)
        for name, value in by_person.items():
            per_person[name][(task_name, instance.instance_id)] = value
    for name in per_person:
        check_person_name(name)
    panels = panel_systems(groups or {}, list(per_person))
    return [HumanModel(name, found) for name, found in sorted(per_person.items())] + [
        HumanModel(system[len(PREFIX):], _panel(bench, answers, set(members))) for system, members in panels.items()]


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


def human_summary(bench: Benchmark, answers: list[GivenAnswer], assigned: dict[str, list[tuple[str, int]]] | None = None,
                  groups: dict[str, str] | None = None, late: int = 0) -> HumanSummary:
    """Time per instance per person and task, agreement between people per task, and who the people are: each
    person's group, instances assigned and answered (coverage), and per group the figures a report gives people."""
    grouped = _by_instance(answers)
    answered = {t: sum(1 for (task, _n) in grouped if task == t) for t in bench.tasks}
    return {
        "instances": {t: len(v) for t, v in bench.instances.items()}, "answered": answered,
        "per_instance": bench.per_instance, "time": _times(answers, bench.tasks),
        "agreement": {t: _task_agreement(bench, t, grouped) for t in bench.tasks},
        "people": _people_block(bench, answers, assigned or {}, groups or {}, late),
    }


def _ids(bench: Benchmark, keys: list[tuple[str, int]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for task, number in keys:
        found[task].append(bench.instance(task, number).instance_id)
    return dict(found)


def _people_block(bench: Benchmark, answers: list[GivenAnswer], assigned: dict[str, list[tuple[str, int]]],
                  groups: dict[str, str], late: int) -> PeopleBlock:
    names = sorted({a["user"] for a in answers} | set(assigned))
    given: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for answer in answers:
        given[answer["user"]].append((answer["task"], answer["number"]))
    people: dict[str, PersonRecord] = {name: {
        "group": groups.get(name, ""), "assigned": _ids(bench, assigned.get(name, [])),
        "answered": _ids(bench, sorted(given.get(name, []))),
    } for name in names}
    panels = panel_systems(groups, [n for n in names if given.get(n)])
    member_sets = {"": names, **{g: [n for n in names if groups.get(n) == g] for g in sorted(set(groups.values()))}}
    return {
        "protocol": "no look-ahead: each answer given before any page showed what its instance hides (docs/human.md)",
        "subset": {t: [i.instance_id for i in found] for t, found in bench.instances.items()},
        "people": people, "panels": panels, "left_out_late": late,
        "groups": {group or "all": _group_figures(bench, answers, assigned, members) for group, members in member_sets.items()},
    }


def _group_figures(bench: Benchmark, answers: list[GivenAnswer], assigned: dict[str, list[tuple[str, int]]],
                   members: list[str]) -> GroupFigures:
    mine = [a for a in answers if a["user"] in members]
    seconds = [float(a["seconds"]) for a in mine if a["seconds"] is not None]
    grouped = _by_instance(mine)
    agreement = {t: _task_agreement(bench, t, grouped) for t in bench.tasks}
    return {
        "people": len(members), "members": members,
        "assigned_per_person": statistics.median([len(assigned.get(m, [])) for m in members]) if members else 0,
        "answered_per_person": statistics.median([sum(1 for a in mine if a["user"] == m) for m in members]) if members else 0,
        "coverage": round(len(mine) / n, 4) if (n := sum(len(assigned.get(m, [])) for m in members)) else None,
        "median_s_per_item": round(statistics.median(seconds), 1) if seconds else None,
        "agreement": {t: {"alpha": a["alpha"], "alpha_of": a["alpha_of"], "exact_agreement": a["exact_agreement"],
                          "units": a["units"]} for t, a in agreement.items()},
    }


def disputed(bench: Benchmark, answers: list[GivenAnswer], groups: dict[str, str]) -> list[DisputedItem]:
    """Every instance answered by two people or more whose answers differ (exact agreement's categories), with
    each person's answer and group: what ``disputed.jsonl`` beside the run holds."""
    found: list[DisputedItem] = []
    for (task_name, number), by_person in sorted(_by_instance(answers).items(), key=lambda kv: (bench.tasks.index(kv[0][0]), kv[0][1])):
        kind = get_task(task_name).declaration.answer
        if len(by_person) >= 2 and len({_category(kind, v) for v in by_person.values()}) > 1:
            found.append({"task": task_name, "number": number, "instance_id": bench.instance(task_name, number).instance_id,
                          "answers": dict(sorted(by_person.items())),
                          "groups": {p: groups.get(p, "") for p in sorted(by_person)}})
    return found


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
    block = summary["people"]
    persons = [[name, r["group"] or "—", str(sum(map(len, r["answered"].values()))),
                str(sum(map(len, r["assigned"].values())))] for name, r in block["people"].items()]
    groups = [[group, str(g["people"]), _figure(g["assigned_per_person"]), _figure(g["answered_per_person"]),
               "—" if g["coverage"] is None else f"{g['coverage']:.0%}", _figure(g["median_s_per_item"])]
              for group, g in block["groups"].items()]
    return "\n".join([
        "# People on the benchmark", "", f"Protocol: {block['protocol']}." + (
            f" {block['left_out_late']} answer(s) given after their reveal were left out." if block["left_out_late"] else ""),
        "", "## People and groups (coverage: answered of assigned; unanswered instances are not counted as wrong)", "",
        markdown_table(["person", "group", "answered", "assigned"], persons),
        markdown_table(["group", "people", "items per person", "answered per person", "coverage", "median s per item"], groups),
        "Disputed items (answered differently by two people or more), with each answer: disputed.jsonl.", "",
        "## Time per instance (seconds from first shown to first answer)", "",
        markdown_table(["person", "task", "answered", "median s", "mean s"], times),
        "## Agreement between people", "",
        markdown_table(["task", "instances answered twice+", "people", "α", "α of", "exact agreement"], agreement),
        *notes, "", "## Where people disagree most", "", *disputed]).rstrip() + "\n"
