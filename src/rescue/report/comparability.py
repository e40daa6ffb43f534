"""Whether the systems of one report can be compared, and where they cannot.

Pairing runs by ``instance_id`` alone compares runs whose gold differs, whose judges or BERTScore
backbones differ, or that cover different instances. Before any table is built, the report checks:

- the data: the sha256 each run recorded (``results.json`` config.used.data_sha256);
- the task options: RPP gold field, context size per task, parse policy;
- the scorers, for ER/VP: judge models, judge scale, BERTScore backbone;
- thinking (``--thinking``, or a model's own ``thinking`` setting);
- the gold of every shared instance;
- the instance set per task (a ``--limit-samples`` run beside a full one).

Every difference refuses the report with a message naming it, unless ``--allow-mixed``: then the
systems are shown side by side, each cell with its instance count and a mark where it was computed
on another instance set than the others.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rescue.report.runs import System
from rescue.tasks import TASK_NAMES, TASKS, graded_tasks, right_wrong_tasks
from rescue.errors import ComparabilityError as ComparabilityError

GENERATIVE = tuple(graded_tasks())
# The tasks whose gold field the rpp_gold option chooses (RPP).
RPP_GOLD_TASKS = tuple(name for name, task in TASKS.items() if "rpp_gold" in task.declaration.options.model_fields)
MIXED_MARK = "‡"


@dataclass
class Comparability:
    """Whether runs can share a leaderboard: the differences found, what could not be checked, instance coverage."""

    differences: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # what older results.json files do not record
    # (task, scope) -> instance ids of each system; where the sets differ cells are marked
    coverage: dict[tuple[str, str], dict[str, frozenset[str]]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether no difference was found."""
        return not self.differences

    def mixed(self, task: str, scope: str, system: str) -> bool:
        """Whether ``system``'s cell of ``task`` in ``scope`` is on another instance set than the others'."""
        sets = self.coverage.get((task, scope)) or {}
        if system not in sets or len(sets) < 2:
            return False
        union = frozenset().union(*sets.values())
        return sets[system] != union


def _judges(system: System) -> str | None:
    judges = system.config.judges
    return ", ".join(str(j) for j in judges) if judges else None


def judge_text(system: System) -> str:
    """The system's judges and scale, as the comparability check names them."""
    judges = _judges(system)
    if judges is None:
        return "no judge"
    return f"{judges} ({system.config.judge_scale} scale)"


def bertscore_text(system: System) -> str | None:
    """The backbone as a short phrase (model, layer, rescaling); None when BERTScore was off."""
    bert = system.config.bertscore
    if bert is None:
        return None
    text = bert.model or "?"
    if bert.num_layers is not None:
        text += f", layer {bert.num_layers}"
    if bert.rescale_with_baseline:
        text += ", rescaled"
    if not (bert.model_extra or {}).get("pair_matching"):
        # Before issue 24 a pair's score depended on its batch neighbours (by up to 0.01): not the same numbers.
        text += ", batch-dependent pair scores (older rescue)"
    return text


def _has(system: System, tasks: Sequence[str]) -> bool:
    return any(system.task_records(t) or t in system.results.tasks for t in tasks)


def _setting_checks() -> list[tuple[str, Sequence[str] | None, Callable[[System], object]]]:
    """(name, tasks it matters for (None: all), value per system; None = not recorded)."""
    return [
        ("data (sha256)", None, lambda s: s.config.used.data_sha256),
        # Before these were recorded, "default" meant auto and the only parse policy was strict.
        ("RPP gold field", RPP_GOLD_TASKS, lambda s: s.config.used.rpp_gold or s.config.rpp_gold or "auto"),
        ("parse policy", tuple(right_wrong_tasks()),
         lambda s: s.config.used.parse or s.config.parse),
        ("judge", GENERATIVE, _judges),
        ("judge scale", GENERATIVE, lambda s: s.config.judge_scale if _judges(s) else None),
        ("BERTScore backbone", GENERATIVE, bertscore_text),
        # A thinking model with thinking off is another system: never compared with it silently.
        ("thinking (--thinking)", None, thinking_text),
        # Sampled answers are another system than greedy ones; an inspect log that recorded no temperature may
        # have sent none (inspect drops it for names it takes for reasoning models).
        ("temperature", None, temperature_text),
    ]


NOT_RECORDED = "not recorded"


def temperature_text(system: System) -> str:
    """The temperature a system's requests were sent with: its own model settings', else the run's; an inspect log
    that records none (written before rescue did) is ``not recorded``."""
    own = (system.config.model_settings.get(system.model) or {}).get("temperature")
    stored = system.config.model_extra or {}
    # A results.json always holds the option (default 0); only an inspect log can hold None.
    value = own if own is not None else stored.get("temperature", 0.0)
    return NOT_RECORDED if value is None else f"{float(value):g}"


def thinking_text(system: System) -> str:
    """The thinking setting a system ran with: its own model settings' or the run's --thinking, else the default."""
    own = (system.config.model_settings.get(system.model) or {}).get("thinking")
    return str(own or system.config.thinking or "the model's default")


def _context_sizes(system: System) -> dict[str, int]:
    sizes = system.config.used.context_size
    if sizes:
        return sizes
    # Older runs record only the option; None meant "each task's default".
    option = system.config.context_size
    return {} if option is None else {t: option for t in system.tasks}


def _gold_key(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def check(systems: Sequence[System], scopes: Sequence[str]) -> Comparability:
    """Every difference between the systems that makes a side-by-side comparison misleading."""
    result = Comparability()
    if len(systems) < 2:
        return result
    _check_settings(systems, result)
    tasks = [t for t in TASK_NAMES if any(t in s.tasks for s in systems)]  # the registry's order
    for task in tasks:
        _check_context_size(systems, task, result)
    for task in tasks:
        _check_task_options(systems, task, result)
    for task in tasks:
        _check_gold(systems, task, result)
    for task in tasks:
        _check_coverage(systems, task, scopes, result)
    return result


def _check_settings(systems: Sequence[System], result: Comparability) -> None:
    for name, tasks, value in _setting_checks():
        relevant = [s for s in systems if tasks is None or _has(s, tasks)]
        values = {s.label: value(s) for s in relevant}
        known = {k: v for k, v in values.items() if v is not None}
        if name == "data (sha256)" and len(known) < len(values):
            missing = [k for k, v in values.items() if v is None]
            result.unchecked.append(f"data: {', '.join(missing)} record(s) no data sha256 (written by an older rescue)")
        # A run without a judge (or BERTScore) shows "—" in those columns: nothing is mixed there.
        if len(set(map(str, known.values()))) > 1:
            shown = "; ".join(f"{k}: {str(v)[:12] if name.startswith('data') else v}" for k, v in known.items())
            result.differences.append(f"{name} differs: {shown}")


def _check_context_size(systems: Sequence[System], task: str, result: Comparability) -> None:
    sizes = {s.label: _context_sizes(s).get(task) for s in systems if s.task_records(task)}
    known = {k: v for k, v in sizes.items() if v is not None}
    if len(set(known.values())) > 1:
        shown = "; ".join(f"{k}: {v}" for k, v in known.items())
        result.differences.append(f"{task.upper()} context size differs: {shown}")


def _check_task_options(systems: Sequence[System], task: str, result: Comparability) -> None:
    options = {s.label: s.config.used.task_options.get(task) for s in systems if s.task_records(task)}
    known_options = {k: json.dumps(v, sort_keys=True) for k, v in options.items() if v is not None}
    if len(set(known_options.values())) > 1:
        shown = "; ".join(f"{k}: {v}" for k, v in known_options.items())
        result.differences.append(f"{task.upper()} task options differ: {shown}")


def _check_gold(systems: Sequence[System], task: str, result: Comparability) -> None:
    gold: dict[str, tuple[str, str]] = {}
    clashes: dict[tuple[str, str], list[str]] = {}
    for system in systems:
        for record in system.task_records(task):
            key = _gold_key(record.gold)
            first = gold.setdefault(record.instance_id, (system.label, key))
            if first[1] != key:
                clashes.setdefault((first[0], system.label), []).append(record.instance_id)
    for (a, b), ids in clashes.items():
        result.differences.append(f"{task.upper()} gold differs between {a} and {b} on {len(ids)} shared "
                                  f"instance(s), e.g. {ids[0]}")


def _check_coverage(systems: Sequence[System], task: str, scopes: Sequence[str], result: Comparability) -> None:
    for scope in scopes:
        sets = {s.label: frozenset(r.instance_id for r in s.task_records(task)
                                   if scope == "all" or r.scenario == scope)
                for s in systems if s.task_records(task)}
        sets = {k: v for k, v in sets.items() if v}
        if len(sets) > 1:
            result.coverage[(task, scope)] = sets
    # People's systems cover what they answered (their coverage is reported, rescue.report.people): only the
    # models' instance sets must agree.
    people = {s.label for s in systems if s.people}
    pooled = {k: v for k, v in (result.coverage.get((task, "all")) or {}).items() if k not in people}
    if pooled and len(set(pooled.values())) > 1:
        union = frozenset().union(*pooled.values())
        shown = "; ".join(f"{k}: {len(v)}" for k, v in pooled.items())
        result.differences.append(f"{task.upper()} instance sets differ ({len(union)} in all; {shown})")


def refusal(result: Comparability) -> str:
    """The message that refuses runs that are not comparable, with each difference and the way out."""
    lines = ["the runs are not comparable:"] + [f"  - {d}" for d in result.differences]
    lines.append("Rerun them with the same data and options, or pass --allow-mixed to show them side by side "
                 "(each cell with its instance count; cells on other instance sets marked "
                 f"{MIXED_MARK}; paired tests on the shared instances with equal gold only).")
    return "\n".join(lines)
