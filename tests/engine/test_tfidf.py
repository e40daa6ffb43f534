"""baseline/supervised's features and fit (issue 34 item 1): the fold TF-IDF is scikit-learn's TfidfVectorizer's,
and a model fitted in the span of the training rows predicts what one fitted on the n-gram columns does."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from rescue.engine.supervised import MAX_ITER, encode, span_features
from rescue.engine.tfidf import MIN_DF, Tokenizer, fold_tfidf
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


def test_no_word_at_all_gives_no_features():
    counts = Tokenizer().counts([["!"], ["?"], [""]])
    assert fold_tfidf(counts, [0, 1], [2]) is None


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
