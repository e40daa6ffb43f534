"""Word uni- and bigram TF-IDF for ``baseline/supervised``, fold by fold, with every text tokenised once.

The features are exactly those of scikit-learn's ``TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True,
min_df=2)`` fitted on a fold's training documents (its default lower-casing and token pattern, smoothed idf,
rows scaled to unit length); tests/engine/test_tfidf.py holds the two equal. What differs is the work: the
vectorizer tokenises every document again in every fold and keeps each n-gram as a Python string, where
:class:`Tokenizer` tokenises each distinct text once per run (the rows a prompt shows recur across instances,
folds and tasks), counts n-grams as integers, and a fold only re-weighs columns of one count matrix.
Columns are in the order of the n-grams' integer codes, not alphabetical (a model's fit does not depend on it).

:class:`DeltaRows` gives a fold's dot products between those rows without forming them: a prompt that shows every
row before a turn (RPP) is the previous instance's prompt and one row more, so each document is kept as its
difference from the one before, a tenth of the entries, and the products are summed back along those chains.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# scikit-learn's default token_pattern: words of two or more word characters; they never span a space, so
# the tokens of texts joined by spaces are the texts' tokens one after the other.
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_WORD = np.dtype(np.int32)
# A bigram's code: (first word + 1) * 2**32 + second word, above every unigram's code (a word's id).
_SHIFT = np.int64(1 << 32)
MIN_DF = 2
_SORT_WORDS = 1 << 20  # words counted by one sort: its keys and their sort take tens of MB, not the task's all


@dataclass
class GramCounts:
    """How often each word uni- or bigram occurs in each document: ``matrix[document, column]``, the
    column's gram code in ``grams`` (ascending)."""

    matrix: Any  # scipy.sparse.csr_matrix of float64 counts
    grams: np.ndarray


class Tokenizer:
    """Word ids and the tokens of every text seen, kept for a run (one per baseline, shared by its tasks)."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._texts: dict[str, bytes] = {}  # text -> its word ids as int32 bytes (compact, joined by concatenation)

    def _tokens(self, text: str) -> bytes:
        known = self._texts.get(text)
        if known is None:
            ids = self._ids
            words = [ids.setdefault(word, len(ids)) for word in _TOKEN.findall(text.lower())]
            known = self._texts[text] = np.array(words, dtype=_WORD).tobytes()
        return known

    def counts(self, documents: Sequence[Sequence[str]], words_per_sort: int = _SORT_WORDS) -> GramCounts:
        """The gram counts of ``documents``, each given as its pieces (texts joined by spaces), counted
        ``words_per_sort`` words at a time (a longer document alone)."""
        from scipy.sparse import csr_matrix

        tokens = [[self._tokens(p) for p in pieces] for pieces in documents]
        lengths = np.array([sum(map(len, texts)) for texts in tokens], dtype=np.int64) // _WORD.itemsize
        vocabulary = max(len(self._ids), 1)
        parts = [(np.zeros(0, np.int64),) * 3]
        for start, stop in _batches(lengths, words_per_sort):  # a bounded batch of words at a time (memory)
            words = np.frombuffer(b"".join([t for texts in tokens[start:stop] for t in texts]), dtype=_WORD)
            rows, packed, data = document_grams(words.astype(np.int64), lengths[start:stop], vocabulary)
            parts.append((rows + start, packed, data))
        rows, packed, data = (np.concatenate([part[k] for part in parts]) for k in range(3))
        distinct, columns = np.unique(packed, return_inverse=True)
        lead, second = np.divmod(distinct, vocabulary)  # packed: a word, or (first word + 1) * vocabulary + second
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(documents)))])
        matrix = csr_matrix((data.astype(np.float64), columns.astype(np.int32), indptr),
                            shape=(len(documents), len(distinct)))
        return GramCounts(matrix, lead * _SHIFT + second)

    def names(self, grams: np.ndarray) -> list[str]:
        """The n-grams of ``grams`` as the vectorizer names them (``word`` or ``word word``)."""
        words = list(self._ids)
        names = []
        for code in grams.tolist():
            first, second = divmod(code, int(_SHIFT))
            names.append(words[second] if first == 0 else f"{words[first - 1]} {words[second]}")
        return names


def _batches(lengths: np.ndarray, most: int) -> list[tuple[int, int]]:
    """Consecutive runs of documents of at most ``most`` words in all (a longer document alone)."""
    ends = np.cumsum(lengths)
    runs: list[tuple[int, int]] = []
    first = 0
    while first < len(lengths):
        stop = max(first + 1, int(np.searchsorted(ends, ends[first] - lengths[first] + most, side="right")))
        runs.append((first, stop))
        first = stop
    return runs


def document_grams(words: np.ndarray, lengths: np.ndarray, vocabulary: int, limit: int = 1 << 62
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each document's distinct grams and their counts, every document at once: ``words`` the word ids of the
    documents one after the other (``lengths`` each), a gram packed as the word, or a bigram as (first + 1) *
    ``vocabulary`` + second (ascending as the codes of :class:`GramCounts` are). Returns (document, packed gram,
    count), sorted by document, then gram.

    A gram is counted by one sort of (document, gram) keys, as many documents at a time as keep a key under
    ``limit``, not one small sort per document: two thousand prompts' calls cost more than their arithmetic."""
    ends = np.cumsum(lengths)
    starts = ends - lengths
    document = np.repeat(np.arange(len(lengths)), lengths)
    pairs = np.ones(max(len(words) - 1, 0), dtype=bool)
    last = ends[:-1] - 1  # a document's last word does not pair with the next one's first
    pairs[last[(last >= 0) & (last < len(pairs))]] = False
    span = (vocabulary + 1) * vocabulary
    per_key = max(1, limit // span)
    parts = []
    for first in range(0, len(lengths), per_key):
        stop = min(first + per_key, len(lengths))
        begin, end = (int(starts[first]), int(ends[stop - 1])) if stop > first else (0, 0)
        chunk, owner = words[begin:end], document[begin:end] - first
        inside = pairs[begin:max(end - 1, begin)]
        keys = np.concatenate([owner * span + chunk,
                               owner[:-1][inside] * span + (chunk[:-1][inside] + 1) * vocabulary + chunk[1:][inside]])
        distinct, counts = np.unique(keys, return_counts=True)
        owners, grams = np.divmod(distinct, span)
        parts.append((owners + first, grams, counts))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return tuple(np.concatenate([part[k] for part in parts]) for k in range(3))  # type: ignore[return-value]


def fold_tfidf(counts: GramCounts, train: Sequence[int], test: Sequence[int]) -> tuple[Any, Any, np.ndarray] | None:
    """TF-IDF rows of the ``train`` and ``test`` documents with the vocabulary and idf of the ``train`` ones,
    and the columns kept (indices into ``counts.grams``); None when the training documents hold no word.

    Grams in fewer than :data:`MIN_DF` training documents are dropped, unless that drops every gram (a
    vocabulary of single occurrences), when all are kept.
    """
    training = counts.matrix[np.asarray(train, dtype=np.int64)]
    weights = fold_idf(training)
    if weights is None:
        return None
    keep, idf = weights
    return _weigh(training[:, keep], idf), _weigh(counts.matrix[np.asarray(test, dtype=np.int64)][:, keep], idf), keep


def fold_idf(training: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The columns a fold keeps (in at least :data:`MIN_DF` of the ``training`` count rows, else every gram they
    hold) and their smoothed idf; None when the rows hold no gram."""
    frequency = np.bincount(training.indices, minlength=training.shape[1])
    keep = np.flatnonzero(frequency >= MIN_DF)
    if not len(keep):
        keep = np.flatnonzero(frequency)
    if not len(keep):
        return None
    idf = np.log((1 + training.shape[0]) / (1 + frequency[keep])) + 1.0
    return keep, idf


def _weigh(counts: Any, idf: np.ndarray) -> Any:
    """Sublinear tf (1 + log count) times idf, each row scaled to unit length (rows with no gram stay zero)."""
    matrix = counts.copy()
    matrix.data = (np.log(matrix.data) + 1.0) * idf[matrix.indices]
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    norms = np.sqrt(np.bincount(rows, weights=matrix.data ** 2, minlength=matrix.shape[0]))
    norms[norms == 0] = 1.0
    matrix.data /= norms[rows]
    return matrix


def sublinear(counts: Any) -> Any:
    """Sublinear tf (1 + log count) of a count matrix, in a new matrix."""
    matrix = counts.copy()
    matrix.data = np.log(matrix.data) + 1.0
    return matrix


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


@dataclass
class DeltaRows:
    """The documents' sublinear-tf rows, each kept as its difference from an earlier document's row where that
    difference has fewer entries (its chain's parent), for a fold's products at the cost of the differences."""

    counts: Any  # the documents' gram counts (csr)
    squares: Any  # each document's sublinear tf squared: its squared norm under any column weights
    deltas: Any  # each document's sublinear tf less its parent's (its own, without one)
    parent: np.ndarray  # the parent of each document, -1 for none; always an earlier document
    depth: np.ndarray  # how many parents up a document's chain starts

    @classmethod
    def of(cls, counts: GramCounts, previous: Sequence[int]) -> DeltaRows:
        """Chains over ``counts``' documents; ``previous[n]``: an earlier document that document ``n`` may extend
        (-1: none), taken as its parent when the difference from it is sparser than the document itself."""
        from scipy.sparse import csr_matrix, diags

        rows = sublinear(counts.matrix)
        n = rows.shape[0]
        candidate = np.asarray(previous, dtype=np.int64).reshape(n)
        if (candidate >= np.arange(n)).any():
            raise ValueError("a document's previous document must come before it")
        linked = np.flatnonzero(candidate >= 0)
        pick = csr_matrix((np.ones(len(linked)), (linked, candidate[linked])), shape=(n, n))
        differences = (rows - pick @ rows).tocsr()
        use = (candidate >= 0) & (np.diff(differences.indptr) < np.diff(rows.indptr))
        deltas = (diags(use.astype(np.float64)) @ differences + diags((~use).astype(np.float64)) @ rows).tocsr()
        deltas.eliminate_zeros()
        parent = np.where(use, candidate, -1)
        depth = np.zeros(n, dtype=np.int64)
        for doc in np.flatnonzero(use).tolist():  # parents come first: their depth is final
            depth[doc] = depth[parent[doc]] + 1
        return cls(counts.matrix, rows.multiply(rows).tocsr(), deltas, parent, depth)

    def products(self, train: Sequence[int], test: Sequence[int]) -> tuple[np.ndarray, np.ndarray] | None:
        """What :func:`row_products` gives for :func:`fold_tfidf`'s training and test rows (the unit-length
        TF-IDF rows of the fold), without forming them; None when the training documents hold no gram."""
        train_at, test_at = np.asarray(train, dtype=np.int64), np.asarray(test, dtype=np.int64)
        weights = fold_idf(self.counts[train_at])
        if weights is None:
            return None
        scale = np.zeros(self.counts.shape[1])
        scale[weights[0]] = weights[1]
        norms = np.sqrt(self.squares @ (scale * scale))
        norms[norms == 0] = 1.0
        left, right = self._closure(train_at), self._closure(test_at)
        gram, cross = row_products(self._scaled(left, scale), self._scaled(right, scale))
        self._sum_chains(gram, left, left)
        self._sum_chains(cross, right, left)
        gram /= np.outer(norms[left], norms[left])
        cross /= np.outer(norms[right], norms[left])
        keep_left, keep_right = np.searchsorted(left, train_at), np.searchsorted(right, test_at)
        return gram[np.ix_(keep_left, keep_left)], cross[np.ix_(keep_right, keep_left)]

    def _closure(self, docs: np.ndarray) -> np.ndarray:
        """``docs`` and every parent up their chains, in ascending order."""
        member = np.zeros(len(self.parent), dtype=bool)
        member[docs] = True
        while True:
            up = self.parent[member]
            up = up[up >= 0]
            if member[up].all():
                return np.flatnonzero(member)
            member[up] = True

    def _scaled(self, docs: np.ndarray, scale: np.ndarray) -> Any:
        matrix = self.deltas[docs]
        matrix.data *= scale[matrix.indices]
        matrix.eliminate_zeros()
        return matrix

    def _sum_chains(self, matrix: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> None:
        """Turn products of differences into products of documents: each row (then column) gets its parent's
        added, chain by chain from the first document down."""
        for axis, docs in ((0, rows), (1, columns)):
            position = np.full(len(self.parent), -1, dtype=np.int64)
            position[docs] = np.arange(len(docs))
            parent = self.parent[docs]
            source = np.where(parent >= 0, position[parent], -1)
            linked = np.flatnonzero(source >= 0)
            if (source[linked] == linked - 1).all():  # each chain in a run of its own (one sample's prompts)
                _cumulate_runs(matrix, axis, np.append(np.flatnonzero(source < 0), len(docs)))
                continue
            depth = self.depth[docs]
            for level in range(1, int(depth.max(initial=0)) + 1):
                at = np.flatnonzero(depth == level)
                if axis == 0:
                    matrix[at] += matrix[source[at]]
                else:
                    matrix[:, at] += matrix[:, source[at]]


def _cumulate_runs(matrix: np.ndarray, axis: int, starts: np.ndarray) -> None:
    """Running sums along ``axis`` within each run of ``starts`` (the last entry: the end), in place: the sums
    the chains add up one parent at a time, in the same order (the same rounding), a block at a time."""
    for start, stop in zip(starts[:-1].tolist(), starts[1:].tolist()):
        if stop - start > 1:
            block = matrix[start:stop] if axis == 0 else matrix[:, start:stop]
            np.cumsum(block, axis=axis, out=block)
