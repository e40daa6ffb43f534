"""baseline/supervised's features and fit (issue 34 item 1): the fold TF-IDF is scikit-learn's TfidfVectorizer's,
its products taken along chains of differences are those of the rows themselves, and a model fitted in the span
of the training rows predicts what one fitted on the n-gram columns does."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from rescue.baselines._supervised import MAX_ITER, encode, span_features
from rescue.baselines._tfidf import MIN_DF, DeltaRows, Tokenizer, document_grams, fold_tfidf, row_products
from rescue.tasks import get_task
from rescue.tasks.base import RenderOptions

PIECES = [
    ["Ünïcode Straße", "straße again", "a b c", "", "x"],
    ["we talked. We TALKED!", "last1speakerperson1", "scenariocouple"],
    ["talked we", "scenariocouple", "ΣΑΣ σας"],
    ["no shared words here", "scenariofamily"],
    ["we talked", "scenariocouple", "ΣΑΣ"],
]


def _reference(train_docs: list[str], test_docs: list[str], min_df: int = MIN_DF):
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=min_df)
    return vectorizer.fit_transform(train_docs), vectorizer.transform(test_docs), list(vectorizer.get_feature_names_out())


def _same_columns(ours, names: list[str], theirs, their_names: list[str]) -> None:
    assert sorted(names) == sorted(their_names)
    order = [their_names.index(name) for name in names]
    np.testing.assert_allclose(ours.toarray(), theirs.toarray()[:, order], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("train", [[0, 1, 2, 4], [1, 2, 4], [0, 3]])
def test_fold_tfidf_is_the_vectorizers(train):
    """Every column, idf, sublinear tf and row norm as TfidfVectorizer computes them, min_df fallback included
    ([0, 3] share no word: min_df 2 would keep nothing, and both then keep every gram)."""
    tokenizer = Tokenizer()
    counts = tokenizer.counts(PIECES)
    test = [n for n in range(len(PIECES)) if n not in train]
    features = fold_tfidf(counts, train, test)
    assert features is not None
    x_train, x_test, kept = features
    documents = [" ".join(p) for p in PIECES]
    try:
        ref_train, ref_test, ref_names = _reference([documents[n] for n in train], [documents[n] for n in test])
    except ValueError:  # the vectorizer keeps nothing at min_df 2: the baseline's fallback keeps every gram
        ref_train, ref_test, ref_names = _reference([documents[n] for n in train], [documents[n] for n in test], 1)
    names = tokenizer.names(counts.grams[kept])
    _same_columns(x_train, names, ref_train, ref_names)
    _same_columns(x_test, names, ref_test, ref_names)


def test_texts_are_tokenised_once_and_shared_between_tasks():
    tokenizer = Tokenizer()
    first = tokenizer.counts(PIECES)
    again = tokenizer.counts(list(reversed(PIECES)))
    np.testing.assert_array_equal(first.matrix.toarray()[::-1], again.matrix.toarray())
    assert len(tokenizer._texts) == len({p for doc in PIECES for p in doc})


@pytest.mark.parametrize("limit", [1 << 62, 1])  # 1: one document per sort (the keys' bound for a vast vocabulary)
def test_all_documents_counted_at_once_are_each_counted_alone(limit):
    """Empty documents, one-word ones, and a document's last word never paired with the next one's first."""
    lengths = np.array([3, 0, 1, 4, 0, 2])
    words = np.array([0, 1, 0, 2, 3, 3, 3, 1, 1, 0], dtype=np.int64)
    rows, packed, counts = document_grams(words, lengths, vocabulary=4, limit=limit)
    expected = []
    for document, start in enumerate(np.cumsum(lengths) - lengths):
        own = words[start:start + lengths[document]]
        codes = np.concatenate([own, (own[:-1] + 1) * 4 + own[1:]])
        grams, times = np.unique(codes, return_counts=True)
        expected += [(document, int(g), int(n)) for g, n in zip(grams, times)]
    assert list(zip(rows.tolist(), packed.tolist(), counts.tolist())) == expected
    assert [len(part) for part in document_grams(np.zeros(0, np.int64), np.zeros(0, np.int64), 1)] == [0, 0, 0]


@pytest.mark.parametrize("words_per_sort", [1, 3, 7])
def test_counts_taken_a_few_words_at_a_time_are_the_same(words_per_sort):
    """Documents longer than a batch stand alone, shorter ones share one; empty ones count nothing."""
    documents = [*PIECES, [], *CHAINED]
    whole = Tokenizer().counts(documents)
    batched = Tokenizer().counts(documents, words_per_sort=words_per_sort)
    np.testing.assert_array_equal(batched.grams, whole.grams)
    assert (batched.matrix != whole.matrix).nnz == 0 and batched.matrix.shape == whole.matrix.shape


def test_no_word_at_all_gives_no_features():
    counts = Tokenizer().counts([["!"], ["?"], [""]])
    assert fold_tfidf(counts, [0, 1], [2]) is None


def _same_products(deltas: DeltaRows, counts, train: list[int], test: list[int]) -> None:
    x_train, x_test, _ = fold_tfidf(counts, train, test)
    gram, cross = row_products(x_train, x_test)
    products = deltas.products(train, test)
    assert products is not None
    np.testing.assert_allclose(products[0], gram, rtol=0, atol=1e-12)
    np.testing.assert_allclose(products[1], cross, rtol=0, atol=1e-12)


# Each document extends the one before where it can: 1 repeats 0 and adds words, 2 repeats 1, 4 repeats 2 with
# two pieces dropped (its difference is the larger: it stands alone), 3 shares nothing with 2.
CHAINED = [["we talked", "about the kids"], ["we talked", "about the kids", "and money again"],
           ["we talked", "about the kids", "and money again", "you never listen", "scenariocouple"],
           ["no shared words here"], ["we talked", "scenariocouple", "money"]]


@pytest.mark.parametrize("train, test", [([0, 1, 3], [2, 4]), ([2, 3, 4], [0, 1]), ([1, 2], [0, 3, 4]),
                                          ([4, 2], [3]), ([3], [0, 1, 2, 4])])
def test_products_along_chains_are_the_rows_products(train, test):
    """Whichever documents train (a chain's first members left out, or alone in the test fold), the products
    summed back along the chains are those of fold_tfidf's rows, to rounding; [3] keeps every gram (min_df)."""
    counts = Tokenizer().counts(CHAINED)
    deltas = DeltaRows.of(counts, [-1, 0, 1, 2, 2])
    assert deltas.parent.tolist() == [-1, 0, 1, -1, -1] and deltas.depth.tolist() == [0, 1, 2, 0, 0]
    _same_products(deltas, counts, train, test)


# Two samples' prompts interleaved: 0, 2, 4 extend each other, and 1, 3 (chains not in runs of their own).
INTERLEAVED = [["we talked", "about the kids"], ["she left", "early today"],
               ["we talked", "about the kids", "and money again"], ["she left", "early today", "without a word"],
               ["we talked", "about the kids", "and money again", "you never listen"]]


@pytest.mark.parametrize("train, test", [([0, 1, 3], [2, 4]), ([2, 3, 4], [0, 1]), ([1, 4], [0, 2, 3])])
def test_products_along_interleaved_chains_are_the_rows_products(train, test):
    counts = Tokenizer().counts(INTERLEAVED)
    deltas = DeltaRows.of(counts, [-1, -1, 0, 1, 2])
    assert deltas.parent.tolist() == [-1, -1, 0, 1, 2]
    _same_products(deltas, counts, train, test)


@pytest.mark.parametrize("task_name", ["rpp", "itp"])
def test_products_along_the_chains_of_a_task_are_the_rows_products(demo_samples, task_name):
    """RPP's prompts extend each other (every row before the turn); ITP's show a window of rows."""
    task = get_task(task_name)
    instances = task.build(demo_samples)
    counts = Tokenizer().counts([encode(i, task.render([i], RenderOptions())).pieces for i in instances])
    previous = [max((m for m in range(n) if instances[m].sample_id == i.sample_id), default=-1)
                for n, i in enumerate(instances)]
    deltas = DeltaRows.of(counts, previous)
    if task_name == "rpp":  # most documents are kept as their difference from the one before
        assert (deltas.parent >= 0).sum() > len(instances) / 2 and deltas.deltas.nnz < counts.matrix.nnz / 3
    for fold in range(3):
        _same_products(deltas, counts, [n for n in range(len(instances)) if n % 3 != fold],
                       [n for n in range(len(instances)) if n % 3 == fold])


def test_products_of_documents_without_a_word_are_none_and_chains_point_back():
    counts = Tokenizer().counts([["!"], ["?"], ["a word"]])
    assert DeltaRows.of(counts, [-1, 0, 1]).products([0, 1], [2]) is None
    with pytest.raises(ValueError, match="before it"):
        DeltaRows.of(counts, [1, -1, -1])


def _demo_features(demo_samples, task_name: str):
    task = get_task(task_name)
    instances = task.build(demo_samples)
    encoded = [encode(i, task.render([i], RenderOptions())) for i in instances]
    labels = [e.label(i.gold if isinstance(i.gold, str) else i.gold[0]) for i, e in zip(instances, encoded)]
    counts = Tokenizer().counts([e.pieces for e in encoded])
    train = [n for n in range(len(instances)) if n % 4]
    test = [n for n in range(len(instances)) if not n % 4]
    x_train, x_test, _ = fold_tfidf(counts, train, test)
    return x_train, x_test, [labels[n] for n in train]


@pytest.mark.parametrize("task_name", ["ssp", "itp"])
def test_a_model_fitted_in_the_span_predicts_what_one_on_the_columns_does(demo_samples, task_name):
    """The same optimum: fitted to convergence both ways, the probabilities agree to solver precision."""
    x_train, x_test, labels = _demo_features(demo_samples, task_name)
    span_train, span_test = span_features(x_train, x_test)
    assert span_train.shape[1] <= x_train.shape[0] < x_train.shape[1]
    columns = LogisticRegression(C=1.0, max_iter=MAX_ITER, tol=1e-10).fit(x_train, labels)
    span = LogisticRegression(C=1.0, max_iter=MAX_ITER, tol=1e-10).fit(span_train, labels)
    assert list(columns.classes_) == list(span.classes_)
    np.testing.assert_allclose(span.predict_proba(span_test), columns.predict_proba(x_test), atol=1e-6)


def test_duplicate_documents_leave_the_span_fit_exact(demo_samples):
    """Duplicates make the Gram matrix singular; the fit in the span still finds the columns' optimum."""
    from scipy.sparse import vstack

    x_train, x_test, labels = _demo_features(demo_samples, "ssp")
    x_train, labels = vstack([x_train, x_train]).tocsr(), labels + labels
    span_train, span_test = span_features(x_train, x_test)
    columns = LogisticRegression(C=1.0, max_iter=MAX_ITER, tol=1e-10).fit(x_train, labels)
    span = LogisticRegression(C=1.0, max_iter=MAX_ITER, tol=1e-10).fit(span_train, labels)
    np.testing.assert_allclose(span.predict_proba(span_test), columns.predict_proba(x_test), atol=1e-6)
