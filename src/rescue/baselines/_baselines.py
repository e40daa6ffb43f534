"""Offline baselines: reference points that need no network and no model.

Each baseline is a :class:`rescue.engine.types.TaskModel` (the runner's contract, met structurally: this package
sits below the engine and imports nothing from it). ``prepare(task, instances)`` learns what it needs
from the evaluated instances; ``solve(ask)`` answers the asked batch with ``task.format_answer``, so its answer
goes through the same ``parse`` and scoring as a real model's.

- ``baseline/majority`` (all tasks) PEEKS AT THE GOLD LABEL FREQUENCIES of the evaluated data: the most
  frequent label (ITP), the labels ranked by gold frequency (RPP, STP, SSP), the most frequent / most
  typical gold phrase with the median intensity (ER) or toward the most frequent target (VP).
- ``baseline/uniform`` (all tasks): seeded uniform choices (a label, three labels, a 0-10 intensity); for
  ER and VP a gold phrase drawn from OTHER samples. Answers depend on the seed and the instance only, never
  on batching or request order.
- ``baseline/persist`` (RPP only): the gold pattern of the latest earlier RPP instance of the same sample,
  carried forward; the first instance of a sample, which has none, gets the majority ranking.
- ``baseline/nearest`` (ER, VP): the gold annotation of the most similar client turn of ANOTHER sample
  (TF-IDF cosine over the turn's dialogue), never of the same sample.
- ``baseline/supervised`` (ITP, RPP, STP, SSP): TF-IDF + logistic regression on what the prompt shows, fitted
  out of fold by session group (:mod:`rescue.baselines._supervised`).

``docs/baselines.md`` gives every definition and tie-break.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from rescue.data.models import GROUP_LABELS, THERAPIST
from rescue.data.taxonomy import INTENSITY_SCALE
from rescue.llm import ChatAnswer
from rescue.tasks.base import Instance, RenderOptions, Task
from rescue.errors import BaselineError as BaselineError

if TYPE_CHECKING:
    from sklearn.feature_extraction.text import TfidfVectorizer


class Asked(Protocol):
    """What a baseline reads of the runner's request (:class:`rescue.engine.types.TaskRequest` is one): the task
    and the batch of instances asked about; never the messages."""

    task: Task
    batch: list[Instance]


PREFIX = "baseline/"
TOP_K = 3
# What a baseline answers is decided by the shape of the task's answers (its declaration), not its name.
GENERATIVE_ANSWERS = frozenset({"emotion", "viewpoints"})


# --- shared helpers ---------------------------------------------------------------------------------


def _candidates(instance: Instance, counts: Counter[str]) -> list[str]:
    """The closed set of an instance; without one (should not happen), the labels seen as gold."""
    return list(instance.labels) or sorted(counts)


def _by_frequency(labels: Sequence[str], counts: Counter[str]) -> list[str]:
    """``labels`` most frequent first; ties keep the closed set's own order (stable sort)."""
    return sorted(labels, key=lambda label: -counts[label])


def _gold_labels(gold: Any) -> list[str]:
    if isinstance(gold, str):
        return [gold]
    if isinstance(gold, (list, tuple)):
        return [g for g in gold if isinstance(g, str)]
    return []


def _typical_phrase(phrases: Sequence[str]) -> str:
    """The most frequent phrase (ignoring case); among equally frequent ones the most central by TF-IDF
    cosine, i.e. the one most similar on average to all the others. Free-text gold rarely repeats, so
    centrality usually decides."""
    keys = [p.casefold().strip() for p in phrases]
    counts = Counter(keys)
    top = max(counts.values())
    tied = [i for i, key in enumerate(keys) if counts[key] == top]
    if len(tied) == 1 or len(phrases) < 2:
        return phrases[tied[0]]
    # scikit-learn (and SciPy under it) is imported where TF-IDF is used: an import a run of the other
    # baselines, or of a model, does not pay.
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    try:
        matrix = TfidfVectorizer().fit_transform(phrases)
    except ValueError:  # no word at all in any phrase
        return phrases[tied[0]]
    # The sum of a phrase's cosines with all phrases is its cosine with their sum: one vector, not a tied x all
    # matrix (quadratic in the phrases: memory that grows with the square of the data).
    centrality = matrix[tied] @ np.asarray(matrix.sum(axis=0)).ravel()
    return phrases[tied[int(centrality.argmax())]]


def _speaker(instance: Instance) -> str:
    return str(instance.extra.get("speaker") or instance.sample.row(instance.row_index).speaker)


def _people(instance: Instance) -> list[str]:
    """Whom a VP viewpoint can be about: the task's participants list, else the sample's, minus the speaker."""
    names = instance.extra.get("participants") or [*instance.sample.participants, THERAPIST]
    return [n for n in names if n != _speaker(instance)]


def _er_gold_phrase(gold: dict[str, Any]) -> str:
    return str(gold["emotion"])


def _vp_gold_phrases(gold: list[dict[str, Any]]) -> list[str]:
    return [str(v["viewpoint"]) for v in gold]


def _gold_phrases(task: Task, gold: Any) -> list[str]:
    return [_er_gold_phrase(gold)] if task.declaration.answer == "emotion" else _vp_gold_phrases(gold)


def _task(name: str) -> Task | None:
    from rescue.tasks import TASKS

    return TASKS.get(name)


@dataclass
class _TaskState:
    """What a baseline learned in ``prepare`` for one task."""

    task: Task
    instances: list[Instance]
    options: RenderOptions
    counts: dict[str, Counter[str]] = field(default_factory=dict)  # per scenario: gold label counts
    extra: dict[str, Any] = field(default_factory=dict)
    progress: Callable[[int, int], None] | None = None  # (steps done, steps) of a fit


def _label_counts(instances: list[Instance]) -> dict[str, Counter[str]]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for instance in instances:
        counts[instance.scenario].update(_gold_labels(instance.gold))
    return dict(counts)


class Baseline:
    """The TaskModel contract for offline baselines; subclasses say which tasks they apply to and answer one
    instance at a time in :meth:`answer`."""

    kind: ClassVar[str]

    def __init__(self, *, seed: int = 0) -> None:
        self.name = PREFIX + self.kind
        self.seed = seed
        self._states: dict[str, _TaskState] = {}

    def applies(self, task: Task) -> bool:
        """Whether this baseline has an answer for ``task`` (from what the task declares)."""
        return True

    def applies_to(self, task_name: str) -> bool:
        """Whether the baseline answers the task called ``task_name``."""
        task = _task(task_name)
        return task is not None and self.applies(task)

    def prepare(self, task: Task, instances: list[Instance], options: RenderOptions | None = None,
                progress: Callable[[int, int], None] | None = None) -> None:
        """Learn what the baseline needs from the task's instances (BaselineError for a task it does not answer);
        ``progress`` hears (steps done, steps) while a trained baseline fits."""
        if not self.applies(task):
            from rescue.tasks import TASKS

            usable = [name for name, t in TASKS.items() if self.applies(t)]
            raise BaselineError(
                f"{self.name} does not apply to task {task.name!r}; it applies to: {', '.join(sorted(usable))}"
            )
        state = _TaskState(task, list(instances), options or RenderOptions(), _label_counts(instances),
                           progress=progress)
        self.learn(state)
        self._states[task.name] = state

    def learn(self, state: _TaskState) -> None:
        """Subclass hook: precompute from the evaluated instances."""

    def sits_out(self, task: Task, instances: list[Instance]) -> str | None:
        """Why this baseline cannot answer ``task`` on these instances (too few samples), else None: a run
        leaves the pair out with this note instead of failing."""
        return None

    def describe(self) -> dict[str, Any]:
        """What ``results.json`` records of how this baseline answered, per task (empty: nothing to add)."""
        return {}

    async def solve(self, ask: Asked) -> ChatAnswer:
        """The baseline's answer to one batch, in the task's answer format."""
        task = ask.task
        state = self._states.get(task.name)
        if state is None:
            raise BaselineError(f"{self.name}: prepare() was not called for task {task.name!r}")
        values = {i.instance_id: self.answer(state, i) for i in ask.batch}
        return ChatAnswer(task.format_answer(ask.batch, values), meta={"baseline": self.name, "seed": self.seed})

    async def aclose(self) -> None:
        """Nothing to release."""
        return None

    def answer(self, state: _TaskState, instance: Instance) -> Any:
        """The baseline's value for one instance (each baseline implements it)."""
        raise NotImplementedError

    # Majority answers, shared by majority and by persist's fallback.
    def majority_ranking(self, state: _TaskState, instance: Instance) -> list[str]:
        """The instance's candidate labels, most frequent in its scenario first."""
        counts = state.counts.get(instance.scenario, Counter())
        return _by_frequency(_candidates(instance, counts), counts)


# --- the baselines -----------------------------------------------------------------------------------


class MajorityBaseline(Baseline):
    """baseline/majority: the most frequent label (or ranking, or text) of the instance's scenario."""

    kind = "majority"

    def learn(self, state: _TaskState) -> None:
        answer = state.task.declaration.answer
        by_scenario: dict[str, list[Instance]] = defaultdict(list)
        for instance in state.instances:
            by_scenario[instance.scenario].append(instance)
        if answer == "emotion":
            state.extra["emotion"] = {
                scenario: {
                    "emotion": _typical_phrase([_er_gold_phrase(i.gold) for i in group]),
                    "intensity": int(statistics.median_low(int(i.gold["intensity"]) for i in group)),
                }
                for scenario, group in by_scenario.items()
            }
        elif answer == "viewpoints":
            state.extra["phrase"] = {
                scenario: _typical_phrase([p for i in group for p in _vp_gold_phrases(i.gold)])
                for scenario, group in by_scenario.items()
            }
            # Gold targets per (sample, speaker) and per sample: the target a speaker most often holds views of.
            targets: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
            for instance in state.instances:
                for view in instance.gold:
                    targets[(instance.sample_id, view["source"])][view["target"]] += 1
                    targets[(instance.sample_id, "")][view["target"]] += 1
            state.extra["targets"] = targets

    def answer(self, state: _TaskState, instance: Instance) -> Any:
        answer = state.task.declaration.answer
        if answer == "label":
            return self.majority_ranking(state, instance)[0]
        if answer == "ranking":
            return self.majority_ranking(state, instance)[:TOP_K]
        if answer == "emotion":
            return dict(state.extra["emotion"][instance.scenario])
        speaker = _speaker(instance)
        targets = state.extra["targets"]
        counts = targets.get((instance.sample_id, speaker)) or Counter(
            {t: n for t, n in targets[(instance.sample_id, "")].items() if t != speaker}
        )
        target = counts.most_common(1)[0][0] if counts else (_people(instance) or [THERAPIST])[0]
        return [{"source": speaker, "target": target, "viewpoint": state.extra["phrase"][instance.scenario]}]


class UniformBaseline(Baseline):
    """baseline/uniform: a label, ranking or phrase drawn uniformly at random (seeded)."""

    kind = "uniform"

    def sits_out(self, task: Task, instances: list[Instance]) -> str | None:
        if task.declaration.answer in GENERATIVE_ANSWERS and len({i.sample_id for i in instances}) < 2:
            return f"it draws {task.name.upper()} phrases from other samples and the data hold one sample"
        return None

    def learn(self, state: _TaskState) -> None:
        if state.task.declaration.answer in GENERATIVE_ANSWERS:
            phrases: dict[str, list[tuple[str, str]]] = defaultdict(list)  # scenario -> (sample_id, phrase)
            for instance in state.instances:
                gold = _gold_phrases(state.task, instance.gold)
                phrases[instance.scenario].extend((instance.sample_id, p) for p in gold)
            state.extra["phrases"] = phrases
            index: dict[str, tuple[list[str], dict[str, list[int]]]] = {}
            for scenario, pairs in phrases.items():
                own: dict[str, list[int]] = defaultdict(list)
                for position, (sample_id, _) in enumerate(pairs):
                    own[sample_id].append(position)
                index[scenario] = ([p for _, p in pairs], own)
            state.extra["phrase_index"] = index
            if len({i.sample_id for i in state.instances}) < 2:
                raise BaselineError(
                    f"{self.name} draws {state.task.name.upper()} phrases from other samples: it needs at least two"
                )

    def _rng(self, state: _TaskState, instance: Instance) -> random.Random:
        # One generator per instance: the same seed gives the same answer whatever the batching or order.
        return random.Random(f"{self.seed}|{state.task.name}|{instance.instance_id}")

    def _phrase(self, state: _TaskState, instance: Instance, rng: random.Random) -> str:
        phrases = state.extra["phrases"]
        texts, own = state.extra["phrase_index"].get(instance.scenario, ([], {}))
        mine: list[int] = own.get(instance.sample_id, [])
        if len(texts) == len(mine):  # the only sample of its scenario: draw from the other scenario
            pool = [p for group in phrases.values() for sample_id, p in group if sample_id != instance.sample_id]
            phrase: str = rng.choice(pool)
            return phrase
        # The draw rng.choice makes from the scenario's phrases of other samples, without listing them per
        # instance (that list made the baseline quadratic): the k-th phrase that is not the instance's own.
        k = rng.randrange(len(texts) - len(mine))
        for position in mine:
            if position > k:
                break
            k += 1
        return str(texts[k])

    def answer(self, state: _TaskState, instance: Instance) -> Any:
        rng = self._rng(state, instance)
        answer = state.task.declaration.answer
        candidates = _candidates(instance, state.counts.get(instance.scenario, Counter()))
        if answer == "label":
            return rng.choice(candidates)
        if answer == "ranking":
            return rng.sample(candidates, min(TOP_K, len(candidates)))
        if answer == "emotion":
            return {"emotion": self._phrase(state, instance, rng), "intensity": rng.randint(*INTENSITY_SCALE)}
        targets = _people(instance) + [instance.sample.group_label]
        target = rng.choice(targets)
        return [{"source": _speaker(instance), "target": target, "viewpoint": self._phrase(state, instance, rng)}]


class PersistBaseline(Baseline):
    """baseline/persist: for ranking tasks whose gold persists, the sample's last gold so far, else the majority."""

    kind = "persist"

    def applies(self, task: Task) -> bool:
        return task.declaration.answer == "ranking" and task.declaration.gold_persists

    def learn(self, state: _TaskState) -> None:
        history: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for instance in state.instances:
            labels = _gold_labels(instance.gold)
            if labels and labels[0] in instance.labels:
                history[instance.sample_id].append((instance.row_index, labels[0]))
        state.extra["history"] = {sample_id: sorted(rows) for sample_id, rows in history.items()}

    def answer(self, state: _TaskState, instance: Instance) -> list[str]:
        ranking = self.majority_ranking(state, instance)
        history = state.extra["history"].get(instance.sample_id, [])
        earlier = [label for row, label in history if row < instance.row_index]
        if earlier:
            ranking = [earlier[-1]] + [label for label in ranking if label != earlier[-1]]
        return ranking[:TOP_K]


@dataclass
class _Pool:
    """Gold-annotated client turns of every evaluated sample, for retrieval."""

    sample_ids: list[str]
    golds: list[Any]
    vectorizer: TfidfVectorizer
    matrix: Any


class NearestBaseline(Baseline):
    """baseline/nearest: the gold of the most similar turn (TF-IDF) of another sample (generative tasks)."""

    kind = "nearest"

    def applies(self, task: Task) -> bool:
        return task.declaration.answer in GENERATIVE_ANSWERS and task.declaration.gold_rows is not None

    def sits_out(self, task: Task, instances: list[Instance]) -> str | None:
        if len({i.sample_id for i in instances}) < 2:
            return f"it retrieves {task.name.upper()} answers from other samples and the data hold one sample"
        return None

    def learn(self, state: _TaskState) -> None:
        rows_of = state.task.declaration.gold_rows
        assert rows_of is not None
        samples = list({i.sample_id: i.sample for i in state.instances}.values())
        if len(samples) < 2:
            raise BaselineError(
                f"{self.name} retrieves from other samples: it needs at least two samples, got {len(samples)}"
            )
        sample_ids, rows, golds = [], [], []
        for sample in samples:
            for row, gold in rows_of(sample):
                sample_ids.append(sample.sample_id)
                rows.append(row)
                golds.append(gold)
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectorizer = TfidfVectorizer(sublinear_tf=True)
        try:
            matrix = vectorizer.fit_transform([row.dialogue_cleaned for row in rows])
        except ValueError as exc:  # every pooled turn is empty
            raise BaselineError(f"{self.name}: no dialogue to retrieve from ({exc})") from exc
        state.extra["pool"] = _Pool(sample_ids, golds, vectorizer, matrix)

    def answer(self, state: _TaskState, instance: Instance) -> Any:
        pool: _Pool = state.extra["pool"]
        nearest: dict[str, int] = state.extra.setdefault("nearest", {})
        if instance.instance_id not in nearest:  # every evaluated instance at once: one product, one mask
            asked = [i for i in state.instances if i.instance_id not in nearest] + [instance]
            nearest.update(zip((i.instance_id for i in asked), _retrieve(pool, asked)))
        best = nearest[instance.instance_id]
        if best < 0:
            raise BaselineError(f"{self.name}: no turn of another sample to retrieve for {instance.instance_id}")
        gold = pool.golds[best]
        if state.task.declaration.answer == "emotion":
            return {"emotion": gold["emotion"], "intensity": gold["intensity"]}
        return _transfer_viewpoints(gold, instance)


# Similarities computed per block of queries: about this many (8 bytes each) at a time.
_SIMILARITY_BLOCK = 2_000_000


def _retrieve(pool: _Pool, instances: list[Instance]) -> list[int]:
    """For each instance, the pooled turn most similar to its turn (TF-IDF cosine) among those of OTHER samples
    (its own sample's gold would leak the answer: the turn itself is in the pool); ties: the earliest pooled
    turn; -1 when no other sample has one. All queries are transformed at once and compared a block at a
    time, a sample's own turns masked by sample code, so the cost grows with queries x pool in C, not Python."""
    import numpy as np

    codes = {sample_id: k for k, sample_id in enumerate(dict.fromkeys(pool.sample_ids))}
    pool_codes = np.array([codes[s] for s in pool.sample_ids])
    query_codes = np.array([codes.get(i.sample_id, -1) for i in instances])
    queries = pool.vectorizer.transform([i.sample.row(i.row_index).dialogue_cleaned for i in instances])
    step = max(1, _SIMILARITY_BLOCK // max(1, len(pool_codes)))
    best: list[int] = []
    for start in range(0, len(instances), step):
        similarity = (queries[start:start + step] @ pool.matrix.T).toarray()  # cosines: 0 to 1
        similarity[query_codes[start:start + step, None] == pool_codes[None, :]] = -1.0
        picks = similarity.argmax(axis=1)  # the first of equal maxima: the earliest pooled turn
        found = similarity[np.arange(len(picks)), picks] >= 0
        best.extend(np.where(found, picks, -1).tolist())
    return best


def _transfer_viewpoints(gold: list[dict[str, Any]], instance: Instance) -> list[dict[str, str]]:
    """Retrieved viewpoints name another sample's people: re-address them to this turn. The source becomes
    the current speaker; the therapist and the group stay; each other person maps, in order, to the people
    this turn addresses, then to the other participants."""
    row = instance.sample.row(instance.row_index)
    speaker = _speaker(instance)
    ordered = [t for t in row.target if t != speaker and t != THERAPIST and t not in GROUP_LABELS.values()]
    people = ordered + [p for p in _people(instance) if p not in ordered and p != THERAPIST]
    mapping: dict[str, str] = {}
    result: list[dict[str, str]] = []
    for view in gold:
        target = view["target"]
        if target == THERAPIST:
            mapped = THERAPIST
        elif target in GROUP_LABELS.values():
            mapped = instance.sample.group_label
        else:
            if target not in mapping:
                mapping[target] = people[len(mapping) % len(people)] if people else THERAPIST
            mapped = mapping[target]
        triple = {"source": speaker, "target": mapped, "viewpoint": view["viewpoint"]}
        if triple not in result:
            result.append(triple)
    return result


class SupervisedBaseline(Baseline):
    """baseline/supervised: TF-IDF and logistic regression on what the prompt shows, fitted out of fold by session
    group."""

    kind = "supervised"

    def applies(self, task: Task) -> bool:
        return task.declaration.answer in ("label", "ranking")

    def sits_out(self, task: Task, instances: list[Instance]) -> str | None:
        from rescue.data.groups import infer_groups

        groups = infer_groups({i.sample_id: i.sample for i in instances}.values())
        if len({groups.group_of(i.sample_id) for i in instances}) < 2:
            return "it trains on other session groups than the one it answers and the data hold one group"
        return None

    def learn(self, state: _TaskState) -> None:
        from rescue.baselines._supervised import out_of_fold_rankings

        why = self.sits_out(state.task, state.instances)
        if why is not None:
            raise BaselineError(f"{self.name}: {why} (it needs at least two groups: couples or families)")
        state.extra["rankings"], state.extra["scheme"] = out_of_fold_rankings(
            state.task, state.instances, state.options, state.progress)

    def answer(self, state: _TaskState, instance: Instance) -> Any:
        ranking = state.extra["rankings"][instance.instance_id]
        return ranking[0] if state.task.declaration.answer == "label" else ranking[:TOP_K]

    def describe(self) -> dict[str, Any]:
        from rescue.baselines._supervised import FEATURES, MODEL

        return {name: {"model": MODEL, "features": FEATURES, "mode": state.options.mode,
                       **state.extra["scheme"].as_dict()}
                for name, state in self._states.items()}


BASELINES: dict[str, type[Baseline]] = {
    PREFIX + cls.kind: cls
    for cls in (MajorityBaseline, UniformBaseline, PersistBaseline, NearestBaseline, SupervisedBaseline)
}
BASELINE_NAMES: tuple[str, ...] = tuple(BASELINES)


def make_baseline(name: str, *, seed: int = 0) -> Baseline:
    """The baseline called ``name`` (``baseline/majority`` ...); ``seed`` matters for ``baseline/uniform`` only."""
    try:
        cls = BASELINES[name]
    except KeyError:
        raise BaselineError(f"unknown baseline {name!r}; choose one of: {', '.join(BASELINE_NAMES)}") from None
    return cls(seed=seed)
