"""rescue.baselines._logistic (issue 34 item 1): the model scikit-learn's LogisticRegression(C=1, lbfgs) fits, without
scikit-learn, on every shape of input baseline/supervised gives it; and the folds are GroupKFold's."""

from __future__ import annotations

import numpy as np
import pytest
import sklearn
from scipy.sparse import random as sparse_random
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from rescue.baselines._logistic import fit_logistic
from rescue.baselines._supervised import MAX_ITER, group_folds, span_features


def _problem(rows: int, columns: int, classes: int, seed: int) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, columns))
    labels = [f"label{k}" for k in rng.integers(0, classes, size=rows)]
    return x, labels


def _same_fit(x, labels: list[str], test) -> None:
    ours = fit_logistic(x, labels, max_iter=MAX_ITER)
    theirs = LogisticRegression(C=1.0, max_iter=MAX_ITER).fit(x, labels)
    assert ours.classes == [str(c) for c in theirs.classes_]
    assert ours.iterations == int(theirs.n_iter_[0])  # the same iterates: the solver stopped at the same step
    np.testing.assert_allclose(ours.probabilities(test), theirs.predict_proba(test), rtol=0, atol=1e-9)


@pytest.mark.parametrize("classes", [2, 3, 11])
def test_dense_rows_fit_as_scikit_learn_fits_them(classes):
    x, labels = _problem(120, 30, classes, seed=classes)
    _same_fit(x, labels, _problem(40, 30, classes, seed=99)[0])


@pytest.mark.parametrize("classes", [2, 6])
def test_a_lower_triangular_factor_fits_as_scikit_learn_fits_it(classes):
    """The span coordinates of sparse TF-IDF-like rows: a lower-triangular square matrix, multiplied by the
    triangular BLAS routine."""
    rng = np.random.default_rng(classes)
    train = sparse_random(80, 400, density=0.05, format="csr", random_state=rng)
    test = sparse_random(30, 400, density=0.05, format="csr", random_state=rng)
    x_train, x_test = span_features(train, test)
    assert not np.triu(x_train, 1).any()
    _same_fit(x_train, [f"c{k}" for k in rng.integers(0, classes, size=80)], x_test)


def test_sparse_columns_fit_as_scikit_learn_fits_them():
    rng = np.random.default_rng(5)
    x = sparse_random(90, 300, density=0.03, format="csr", random_state=rng)
    _same_fit(x, [f"c{k}" for k in rng.integers(0, 4, size=90)], x[:20])


def test_one_class_is_refused():
    with pytest.raises(ValueError, match="two classes"):
        fit_logistic(np.eye(3), ["a", "a", "a"])


@pytest.mark.skipif(tuple(int(p) for p in sklearn.__version__.split(".")[:2]) < (1, 6),
                    reason="GroupKFold took the largest groups in an unstable order before scikit-learn 1.6")
@pytest.mark.parametrize("seed", range(6))
def test_group_folds_are_group_k_folds(seed):
    """Groups of many sizes, ties among them included, and fewer folds than groups or as many."""
    rng = np.random.default_rng(seed)
    names = [f"group{k:02d}" for k in range(int(rng.integers(3, 15)))]
    groups = [names[k] for k in rng.integers(0, len(names), size=int(rng.integers(20, 80)))]
    groups += names  # every group present at least once
    folds = min(5, len(set(groups)))
    theirs = list(GroupKFold(n_splits=folds).split(np.zeros(len(groups)), groups=groups))
    ours = group_folds(groups, folds)
    assert len(ours) == len(theirs)
    for (our_train, our_test), (their_train, their_test) in zip(ours, theirs):
        assert our_train.tolist() == their_train.tolist() and our_test.tolist() == their_test.tolist()
