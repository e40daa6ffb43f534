"""``baseline/supervised``: how much of a task is learnable from RESCUE-Bench's own annotations.

A small trained reference for the closed-answer tasks (ITP, RPP, STP, SSP): TF-IDF features of what the task
shows a model, and a logistic regression (scikit-learn), **fitted out of fold by session group**. The
instances are split into K folds of whole session groups (:mod:`rescue.data.groups`: a couple, or a family
across its clips); each instance is answered by a model trained on the other folds only, so no prediction ever
comes from a model that saw the instance's couple or family. Its answers are written with the task's own
``format_answer`` and go through the same ``parse`` and scoring as any model's.

Features, per instance, from the prompt the run renders for that instance alone (so the run's mode and context
size decide what it sees, exactly as for a model, and nothing hidden from a model is seen):

- the words of every field of the rows the item shows (dialogue, and in the cue modes tone, posture, face ...),
  TF-IDF over word uni- and bigrams;
- structure tokens for the last rows shown: who speaks (``therapist``, the group, or a person by recency) and
  whom they address, and the scenario.

People differ from one couple to the next, so names are never learnt as names: each person is re-named by how
recently they spoke in what the item shows (``person1`` = the most recent client speaker). A label that names a
person (STP's targets) is learnt and predicted in that form and mapped back to the instance's own names.
Labels no training fold ever saw are ranked after the learnt ones, by training frequency, then in the closed
set's order. ``docs/baselines.md`` gives the full definition.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rescue.data.shapes import ChatMessage
from rescue.data.groups import infer_groups
from rescue.data.models import GROUP_LABELS, THERAPIST
from rescue.tasks.base import Instance, RenderOptions, Task

FOLDS = 5
MAX_ITER = 2000
LAST_ROWS = 3
_ITEMS_MARK = "Items:\n"
_DECODER = json.JSONDecoder()
_NOT_WORDS = frozenset(("row_index", "timestamp", "primary_speaker", "target"))
_GROUPS = frozenset(GROUP_LABELS.values())


def _prompt_text(messages: list[ChatMessage]) -> str:
    """The text a model reads: every string content and every text part (video modes send parts)."""
    pieces: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            pieces.append(content)
        elif isinstance(content, list):
            pieces.extend(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "\n".join(pieces)


def _item(text: str) -> dict[str, Any] | None:
    """The one item of a single-instance prompt (the JSON list after ``Items:``), or None if not found."""
    start = text.rfind(_ITEMS_MARK)
    if start < 0:
        return None
    at = start + len(_ITEMS_MARK)
    while at < len(text) and text[at].isspace():
        at += 1
    try:  # decoded where it starts: a copy of the rest of an RPP prompt (every row before the turn) cost as much
        items, _ = _DECODER.raw_decode(text, at)
    except ValueError:
        return None
    if isinstance(items, list) and items and isinstance(items[0], dict):
        return items[0]
    return None


def _rows_shown(item: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [r for r in item.get("prior_context") or [] if isinstance(r, dict)]
    for key, value in item.items():  # the row being decided on (ITP's decision_row), when the task shows one
        if key != "prior_context" and isinstance(value, dict) and "primary_speaker" in value:
            rows.append(value)
    return rows


def _words(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [w for v in value for w in _words(v)]
    if isinstance(value, dict):
        return [w for v in value.values() for w in _words(v)]
    return []


def _row_words(rows: list[dict[str, Any]]) -> list[str]:
    """The texts of every field of ``rows`` but their index, time, speaker and targets, in order."""
    words: list[str] = []
    for row in rows:
        for key, value in row.items():
            if key in _NOT_WORDS:
                continue
            if type(value) is str:  # most fields: the dialogue, a tone
                words.append(value)
            elif value:
                words.extend(_words(value))
    return words


@dataclass
class Encoded:
    """One instance as the classifier sees it."""

    pieces: list[str]  # the document's texts in order: row fields, then structure tokens
    people: dict[str, str]  # the instance's names -> person1, person2, ... (by recency of speaking)

    @property
    def document(self) -> str:
        """The document the features are taken from: the pieces joined by spaces."""
        return " ".join(self.pieces)

    def label(self, label: str) -> str:
        """``label`` as the features see it: a person by their recency role, anything else as is."""
        return self.people.get(label, label)


def _role(name: str, people: dict[str, str]) -> str:
    if name == THERAPIST:
        return "therapist"
    if name in _GROUPS:
        return "group"
    return people.get(name, "other")


def encode(instance: Instance, messages: list[ChatMessage]) -> Encoded:
    """Features of ``instance`` from its single-instance prompt ``messages`` (module docstring)."""
    text = _prompt_text(messages)
    item = _item(text)
    rows = _rows_shown(item) if item else []
    people: dict[str, str] = {}
    for row in reversed(rows):  # most recent speaker first
        speaker = str(row.get("primary_speaker") or "")
        if speaker and speaker != THERAPIST and speaker not in _GROUPS and speaker not in people:
            people[speaker] = f"person{len(people) + 1}"
    for name in instance.labels:  # candidates who never spoke in what is shown
        if name not in people and name != THERAPIST and name not in _GROUPS and name in instance.sample.participants:
            people[name] = "personsilent"
    tokens = [f"scenario{instance.scenario}"]
    for back, row in enumerate(reversed(rows[-LAST_ROWS:]), start=1):
        tokens.append(f"last{back}speaker{_role(str(row.get('primary_speaker') or ''), people)}")
        tokens.extend(f"last{back}target{_role(str(t), people)}" for t in row.get("target") or [])
    words = [text] if item is None else _row_words(rows)  # a prompt of another shape: all of it
    return Encoded([*words, *tokens], people)


def _gold_label(instance: Instance) -> str | None:
    gold = instance.gold
    if isinstance(gold, str):
        return gold
    if isinstance(gold, (list, tuple)) and gold and isinstance(gold[0], str):
        return gold[0]
    return None


@dataclass
class FoldScheme:
    """How the out-of-fold predictions were made (recorded in ``results.json``)."""

    folds: int
    groups: int
    method: str
    fold_of: dict[str, int]  # instance id -> the fold it was answered in (its model never saw that fold)

    def as_dict(self) -> dict[str, Any]:
        """The folds as results.json records them: count, groups per fold and the grouping."""
        return {"folds": self.folds, "groups": self.groups, "grouping": self.method}


FEATURES = ("TF-IDF (word 1-2 grams, sublinear tf, min_df 2) of the fields of the rows the prompt shows, "
            f"plus speaker/target role tokens of the last {LAST_ROWS} rows and the scenario; people re-named by "
            "recency of speaking")
MODEL = (f"scikit-learn LogisticRegression (lbfgs, C=1, max_iter {MAX_ITER}), one per fold, fitted in the span of "
         "the fold's training documents")
MIN_DF = 2  # a gram in fewer of a fold's training documents is no feature (unless that leaves none)
# Added to the Gram matrix's diagonal (rows have unit length) so that duplicate documents, which make it
# singular, do not stop its Cholesky factor; each row gains a private direction this short, which moves the
# optimum by about as much.
_SPAN_JITTER = 1e-10
# Up to this many training instances a fold is fitted in the span of its training rows (a Gram matrix of n^2
# products and an n^3 factor, against lbfgs over every n-gram column): the span pays below it, the columns above,
# so the fit's cost grows linearly with the data past it (benchmarks/README.md, issue 47).
SPAN_MAX = 1000

FoldProgress = Callable[[int, int], None]  # (folds fitted, folds) as the fitting goes


def row_products(left: Any, right: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every dot product between the ``left`` rows, and between each ``right`` row and each ``left`` row.

    Columns in more than a tenth of the left rows go through a dense matrix product, the rest through the
    sparse one: a sparse product's cost grows with the square of a column's frequency, a dense one's does not."""
    frequent = np.bincount(left.indices, minlength=left.shape[1]) * 10 > left.shape[0]
    dense, sparse = np.flatnonzero(frequent), np.flatnonzero(~frequent)
    dense_left, sparse_left = left[:, dense].toarray(), left[:, sparse]
    gram = dense_left @ dense_left.T + (sparse_left @ sparse_left.T).toarray()
    cross = right[:, dense].toarray() @ dense_left.T + (right[:, sparse] @ sparse_left.T).toarray()
    return gram, cross


def span_features(train: Any, test: Any) -> tuple[np.ndarray, np.ndarray]:
    """The training and test rows in coordinates of the span of the training rows.

    L2-regularised logistic regression's optimum weights lie in the span of its training rows, and the
    coordinates keep every dot product between training rows and every one between a test row and a
    training row; so a model fitted on them (at most as many columns as training rows) has the same optimum,
    and the same predictions, as one fitted on the tens of thousands of n-gram columns, for a fraction of the
    cost. The coordinates are the Cholesky factor L of the training rows' Gram matrix G = L L^T (the rows in
    a basis of their span, up to a rotation the solver does not see), a test row's are L^-1 of its products."""
    from scipy.linalg import LinAlgError, cholesky, eigh, solve_triangular

    gram, cross = row_products(train, test)
    try:
        factor = cholesky(gram + _SPAN_JITTER * np.eye(len(gram)), lower=True, check_finite=False)
    except LinAlgError:  # rounding left the Gram matrix indefinite: its eigenvectors, the tiny ones dropped
        values, vectors = eigh(gram, check_finite=False)
        kept = values > max(float(values.max(initial=0.0)), 0.0) * _SPAN_JITTER
        factor = vectors[:, kept] * np.sqrt(values[kept])
        return factor, cross @ (vectors[:, kept] / np.sqrt(values[kept]))
    return factor, solve_triangular(factor, cross.T, lower=True, check_finite=False).T


def gram_counts(documents: Sequence[str]) -> Any:
    """How often each word uni- and bigram occurs in each document (csr, columns in the vocabulary's alphabetical
    order), counted once per task: every fold takes its rows from it."""
    from sklearn.feature_extraction.text import CountVectorizer

    try:
        return CountVectorizer(ngram_range=(1, 2)).fit_transform(documents)
    except ValueError:  # no document holds a word
        return None


def fold_tfidf(counts: Any, train: Sequence[int], test: Sequence[int]) -> tuple[Any, Any] | None:
    """The TF-IDF rows of the ``train`` and ``test`` documents that ``TfidfVectorizer(ngram_range=(1, 2),
    sublinear_tf=True, min_df=2)`` fitted on the training documents gives (with ``min_df`` 1 when 2 leaves no
    gram), from the task's ``counts``: the columns the training rows keep, weighed by a TfidfTransformer fitted
    on them (the vectorizer is that counter and that transformer); None when they hold no gram."""
    from sklearn.feature_extraction.text import TfidfTransformer

    if counts is None:
        return None
    training = counts[np.asarray(train, dtype=np.int64)]
    frequency = np.bincount(training.indices, minlength=training.shape[1])
    keep = np.flatnonzero(frequency >= MIN_DF)
    if not len(keep):
        keep = np.flatnonzero(frequency)
    if not len(keep):
        return None
    weigh = TfidfTransformer(sublinear_tf=True)
    return (weigh.fit_transform(training[:, keep]),
            weigh.transform(counts[np.asarray(test, dtype=np.int64)][:, keep]))


def _fit_fold(counts: Any, train: list[int], labels: list[str], test: list[int]
              ) -> tuple[list[str], list[list[float]]]:
    """The classes a fold's model learnt and each test instance's probability for each (none: no words).

    Up to :data:`SPAN_MAX` training instances the model is fitted in the span of the training rows
    (:func:`span_features`), above on the n-gram columns: the same model either way."""
    from sklearn.linear_model import LogisticRegression

    features = fold_tfidf(counts, train, test)
    if features is None:
        return [], [[] for _ in test]
    x_train, x_test = features
    if len(train) <= SPAN_MAX:
        x_train, x_test = span_features(x_train, x_test)
    model = LogisticRegression(C=1.0, max_iter=MAX_ITER).fit(x_train, labels)
    return [str(c) for c in model.classes_], model.predict_proba(x_test).tolist()


def _ranking(instance: Instance, enc: Encoded, score: dict[str, float], counts: Counter[str | None]) -> list[str]:
    order = {label: k for k, label in enumerate(instance.labels)}
    return sorted(instance.labels,
                  key=lambda label: (-score.get(enc.label(label), -1.0), -counts[enc.label(label)], order[label]))


def out_of_fold_rankings(task: Task, instances: list[Instance], options: RenderOptions,
                         progress: FoldProgress | None = None) -> tuple[dict[str, list[str]], FoldScheme]:
    """Every instance's candidate labels ranked by a model trained without its session group; ``progress`` hears
    of each fold."""
    from sklearn.model_selection import GroupKFold

    from rescue.threads import threads_limited

    samples = list({i.sample_id: i.sample for i in instances}.values())
    grouping = infer_groups(samples)
    groups = [grouping.group_of(i.sample_id) for i in instances]
    distinct = len(set(groups))
    if distinct < 2:  # the baseline sits such a task out before asking (SupervisedBaseline.sits_out)
        raise ValueError(f"out-of-fold training needs at least two session groups, got {distinct}")
    encoded = [encode(i, task.render([i], options)) for i in instances]
    labels = [e.label(g) if (g := _gold_label(i)) is not None else None for i, e in zip(instances, encoded)]
    counts = gram_counts([e.document for e in encoded])
    folds = min(FOLDS, distinct)
    rankings: dict[str, list[str]] = {}
    fold_of: dict[str, int] = {}
    splits = list(GroupKFold(n_splits=folds).split(np.zeros((len(instances), 1)), groups=groups))
    # BLAS threads only wait on each other over matrices this small: one thread does the work for less CPU.
    with threads_limited(1):
        for fold, (all_train, test) in enumerate(splits, start=1):
            if progress is not None:
                progress(fold - 1, folds)
            fold_of.update((instances[n].instance_id, fold) for n in test)
            train = [int(n) for n in all_train if labels[n] is not None]
            seen = Counter(labels[n] for n in train)
            classes: list[str] = []
            probabilities: list[list[float]] = [[] for _ in test]
            if len(seen) >= 2:
                classes, probabilities = _fit_fold(counts, train, [str(labels[n]) for n in train], list(test))
            for position, n in enumerate(test):
                score = dict(zip(classes, probabilities[position]))
                rankings[instances[n].instance_id] = _ranking(instances[n], encoded[n], score, seen)
            if progress is not None:
                progress(fold, folds)
    return rankings, FoldScheme(folds, distinct, grouping.method, fold_of)
