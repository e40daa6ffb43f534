"""Word uni- and bigram TF-IDF for ``baseline/supervised``, fold by fold, with every text tokenised once.

The features are exactly those of scikit-learn's ``TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True,
min_df=2)`` fitted on a fold's training documents (its default lower-casing and token pattern, smoothed idf,
rows scaled to unit length); tests/engine/test_tfidf.py holds the two equal. What differs is the work: the
vectorizer tokenises every document again in every fold and keeps each n-gram as a Python string, where
:class:`Tokenizer` tokenises each distinct text once per run (the rows a prompt shows recur across instances,
folds and tasks), counts n-grams as integers, and a fold only re-weighs columns of one count matrix.
Columns are in the order of the n-grams' integer codes, not alphabetical (a model's fit does not depend on it).
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

    def _grams(self, pieces: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The distinct gram codes of one document (its ``pieces`` joined by spaces) and their counts."""
        words = np.frombuffer(b"".join([self._tokens(p) for p in pieces]), dtype=_WORD).astype(np.int64)
        codes = np.concatenate([words, (words[:-1] + 1) * _SHIFT + words[1:]])
        grams, counts = np.unique(codes, return_counts=True)
        return grams, counts

    def counts(self, documents: Sequence[Sequence[str]]) -> GramCounts:
        """The gram counts of ``documents``, each given as its pieces (texts joined by spaces)."""
        from scipy.sparse import csr_matrix

        per_document = [self._grams(pieces) for pieces in documents]
        lengths = np.array([len(grams) for grams, _ in per_document], dtype=np.int64)
        codes = np.concatenate([grams for grams, _ in per_document]) if per_document else np.zeros(0, np.int64)
        grams = np.unique(codes)
        columns = np.searchsorted(grams, codes).astype(np.int32)
        data = np.concatenate([n for _, n in per_document]).astype(np.float64) if per_document else np.zeros(0)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        matrix = csr_matrix((data, columns, indptr), shape=(len(documents), len(grams)))
        return GramCounts(matrix, grams)

    def names(self, grams: np.ndarray) -> list[str]:
        """The n-grams of ``grams`` as the vectorizer names them (``word`` or ``word word``)."""
        words = list(self._ids)
        names = []
        for code in grams.tolist():
            first, second = divmod(code, int(_SHIFT))
            names.append(words[second] if first == 0 else f"{words[first - 1]} {words[second]}")
        return names


def fold_tfidf(counts: GramCounts, train: Sequence[int], test: Sequence[int]) -> tuple[Any, Any, np.ndarray] | None:
    """TF-IDF rows of the ``train`` and ``test`` documents with the vocabulary and idf of the ``train`` ones,
    and the columns kept (indices into ``counts.grams``); None when the training documents hold no word.

    Grams in fewer than :data:`MIN_DF` training documents are dropped, unless that drops every gram (a
    vocabulary of single occurrences), when all are kept.
    """
    training = counts.matrix[np.asarray(train, dtype=np.int64)]
    frequency = np.bincount(training.indices, minlength=counts.matrix.shape[1])
    keep = np.flatnonzero(frequency >= MIN_DF)
    if not len(keep):
        keep = np.flatnonzero(frequency)
    if not len(keep):
        return None
    n = training.shape[0]
    idf = np.log((1 + n) / (1 + frequency[keep])) + 1.0
    return _weigh(training[:, keep], idf), _weigh(counts.matrix[np.asarray(test, dtype=np.int64)][:, keep], idf), keep


def _weigh(counts: Any, idf: np.ndarray) -> Any:
    """Sublinear tf (1 + log count) times idf, each row scaled to unit length (rows with no gram stay zero)."""
    matrix = counts.copy()
    matrix.data = (np.log(matrix.data) + 1.0) * idf[matrix.indices]
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    norms = np.sqrt(np.bincount(rows, weights=matrix.data ** 2, minlength=matrix.shape[0]))
    norms[norms == 0] = 1.0
    matrix.data /= norms[rows]
    return matrix
