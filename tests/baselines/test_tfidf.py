"""baseline/supervised's features and fit (issue 47 item 3): the fold TF-IDF, taken from one count matrix per task,
is scikit-learn's TfidfVectorizer fitted on the fold's training documents, and a model fitted in the span of the
training rows predicts what one fitted on the n-gram columns does."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from rescue.baselines._supervised import MAX_ITER, MIN_DF, encode, fold_tfidf, gram_counts, row_products, span_features
from rescue.tasks import get_task
from rescue.tasks.base import RenderOptions

DOCUMENTS = [
    "Ünïcode Straße straße again a b c  x",
    "we talked. We TALKED! last1speakerperson1 scenariocouple",
    "talked we scenariocouple ΣΑΣ σας",
    "no shared words here scenariofamily",
    "we talked scenariocouple ΣΑΣ",
]


def _reference(train_docs: list[str], test_docs: list[str], min_df: int = MIN_DF):
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=min_df)
    return vectorizer.fit_transform(train_docs), vectorizer.transform(test_docs)


def _same(ours, theirs) -> None:
    """Equal but for the last bit: a row's entries are summed for its norm in another order (the columns taken
    from the task's count matrix come sorted)."""
    np.testing.assert_allclose(ours.toarray(), theirs.toarray(), rtol=1e-15, atol=1e-16)


@pytest.mark.parametrize("train", [[0, 1, 2, 4], [1, 2, 4], [0, 3], [4, 0], [2]])
def test_fold_tfidf_is_the_vectorizers(train):
    """Every column (in the vectorizer's order), idf, sublinear tf and row norm as TfidfVectorizer computes them
    fitted on the fold alone, min_df fallback included ([0, 3] share no word: min_df 2 would keep nothing, and
    both then keep every gram; [2] is one document)."""
    test = [n for n in range(len(DOCUMENTS)) if n not in train]
    features = fold_tfidf(gram_counts(DOCUMENTS), train, test)
    assert features is not None
    try:
        reference = _reference([DOCUMENTS[n] for n in train], [DOCUMENTS[n] for n in test])
    except ValueError:  # the vectorizer keeps nothing at min_df 2: the baseline's fallback keeps every gram
        reference = _reference([DOCUMENTS[n] for n in train], [DOCUMENTS[n] for n in test], 1)
    for ours, theirs in zip(features, reference):
        assert ours.shape == theirs.shape
        _same(ours, theirs)


@pytest.mark.parametrize("task_name", ["itp", "rpp", "stp", "ssp"])
def test_a_tasks_fold_tfidf_is_the_vectorizers(demo_samples, task_name):
    """On a task's own documents (RPP's repeat each other, STP's name people by role)."""
    task = get_task(task_name)
    instances = task.build(demo_samples)
    documents = [encode(i, task.render([i], RenderOptions())).document for i in instances]
    train = [n for n in range(len(documents)) if n % 3]
    test = [n for n in range(len(documents)) if not n % 3]
    ours = fold_tfidf(gram_counts(documents), train, test)
    assert ours is not None
    for mine, theirs in zip(ours, _reference([documents[n] for n in train], [documents[n] for n in test])):
        _same(mine, theirs)


@pytest.mark.parametrize("documents", [["!", "?", ""], ["", ""], ["a b", "c"]])
def test_no_word_at_all_gives_no_features(documents):
    """Nothing the vectorizer counts (punctuation, empty texts, one-letter words): no features, no fit."""
    assert fold_tfidf(gram_counts(documents), [0, 1], [len(documents) - 1]) is None


def test_row_products_are_the_rows_products():
    """Frequent columns through a dense product, the rest through the sparse one: every product as the rows'."""
    features = fold_tfidf(gram_counts(DOCUMENTS * 3), list(range(10)), list(range(10, 15)))
    assert features is not None
    gram, cross = row_products(*features)
    np.testing.assert_allclose(gram, (features[0] @ features[0].T).toarray(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(cross, (features[1] @ features[0].T).toarray(), rtol=0, atol=1e-12)


def _demo_features(demo_samples, task_name: str):
    task = get_task(task_name)
    instances = task.build(demo_samples)
    encoded = [encode(i, task.render([i], RenderOptions())) for i in instances]
    labels = [e.label(i.gold if isinstance(i.gold, str) else i.gold[0]) for i, e in zip(instances, encoded)]
    train = [n for n in range(len(instances)) if n % 4]
    test = [n for n in range(len(instances)) if not n % 4]
    x_train, x_test = fold_tfidf(gram_counts([e.document for e in encoded]), train, test)
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
