"""L2-regularised logistic regression for ``baseline/supervised``: scikit-learn's ``LogisticRegression(C=1)``
with its default lbfgs solver, written out so that a fit on a few hundred rows pays only for its arithmetic.

The objective, its parameter layout, the starting point and SciPy's L-BFGS-B with scikit-learn's settings are
scikit-learn's (1.4 and later): the mean log loss plus ``||W||^2 / (2 C n)`` (intercepts not penalised); two
classes take the binomial loss with one weight vector (the second class the positive one), more the multinomial
loss with one row per class; probabilities as its ``predict_proba`` computes them. The iterates are scikit-learn's
up to rounding (tests/engine/test_logistic.py holds the two equal). What differs is the work: scikit-learn checks
and converts its input on every fit and pays a tenth of a second to import its linear models, and a fit in the
span of the training rows (:func:`rescue.baselines._supervised.span_coordinates`) has a lower-triangular feature
matrix, whose products here take the triangular BLAS routine at half the arithmetic of a full one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_ITER = 100  # scikit-learn's default
TOL = 1e-4  # scikit-learn's default
_FTOL = 64 * np.finfo(float).eps  # what scikit-learn passes to L-BFGS-B
_MAX_LINE_SEARCH = 50  # likewise

Products = tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]


@dataclass
class Logistic:
    """A fitted model: its classes (sorted), weights (one row per class; one row for two classes, the second
    class's) and intercepts, and how many iterations the solver took."""

    classes: list[str]
    weights: np.ndarray
    intercepts: np.ndarray
    iterations: int

    def probabilities(self, x: Any) -> np.ndarray:
        """Each row's probability of each class, in the order of :attr:`classes`."""
        from scipy.special import expit

        raw: np.ndarray = np.asarray(x @ self.weights.T) + self.intercepts
        if len(self.classes) == 2:
            positive: np.ndarray = expit(raw[:, 0])
            return np.stack([1 - positive, positive], axis=1)
        raw -= raw.max(axis=1, keepdims=True)
        np.exp(raw, out=raw)
        raw /= raw.sum(axis=1, keepdims=True)
        return raw


def _products(x: Any) -> Products:
    """``x @ w`` and ``x.T @ r`` for a (features x classes) ``w`` and a (rows x classes) ``r``: by the triangular
    BLAS routine when ``x`` is a dense lower-triangular square matrix (half the arithmetic), else by ``@``."""
    if isinstance(x, np.ndarray) and x.ndim == 2 and x.shape[0] == x.shape[1] and not np.triu(x, 1).any():
        from scipy.linalg.blas import dtrmm

        factor = np.asfortranarray(x, dtype=np.float64)
        return (lambda w: dtrmm(1.0, factor, np.asfortranarray(w), lower=1),
                lambda r: dtrmm(1.0, factor, np.asfortranarray(r), lower=1, trans_a=1))
    return (lambda w: np.asarray(x @ w), lambda r: np.asarray(x.T @ r))


def _binomial(products: Products, positive: np.ndarray, l2: float) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    from scipy.special import expit

    times, times_t = products
    n = len(positive)

    def loss_gradient(coef: np.ndarray) -> tuple[float, np.ndarray]:
        weights = coef[:-1]
        raw = times(weights[:, None])[:, 0] + coef[-1]
        loss = np.logaddexp(0.0, raw) - positive * raw
        pointwise = (expit(raw) - positive) / n
        gradient = np.empty_like(coef)
        gradient[:-1] = times_t(pointwise[:, None])[:, 0] + l2 * weights
        gradient[-1] = pointwise.sum()
        return float(loss.sum() / n) + 0.5 * l2 * float(weights @ weights), gradient

    return loss_gradient


def _multinomial(products: Products, y: np.ndarray, classes: int, l2: float
                 ) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    times, times_t = products
    n = len(y)
    rows = np.arange(n)

    def loss_gradient(coef: np.ndarray) -> tuple[float, np.ndarray]:
        # scikit-learn's layout: (classes x (features + 1)) in Fortran order, the classes of a feature together.
        matrix = coef.reshape((classes, -1), order="F")
        weights = matrix[:, :-1]
        raw = times(weights.T) + matrix[:, -1]
        top = raw.max(axis=1, keepdims=True)
        exps = np.exp(raw - top)
        sums = exps.sum(axis=1, keepdims=True)
        loss = np.log(sums[:, 0]) + top[:, 0] - raw[rows, y]
        pointwise = exps / sums
        pointwise[rows, y] -= 1.0
        pointwise /= n
        gradient = np.empty(matrix.shape, order="F")
        gradient[:, :-1] = times_t(pointwise).T + l2 * weights
        gradient[:, -1] = pointwise.sum(axis=0)
        flat = weights.ravel()
        return float(loss.sum() / n) + 0.5 * l2 * float(flat @ flat), gradient.ravel(order="F")

    return loss_gradient


def fit_logistic(x: Any, labels: Sequence[str], *, c: float = 1.0, max_iter: int = MAX_ITER,
                 tol: float = TOL) -> Logistic:
    """The model scikit-learn's ``LogisticRegression(C=c, max_iter=max_iter, tol=tol).fit(x, labels)`` fits
    (module docstring); ``x``: a dense array or a SciPy sparse matrix, at least two distinct labels."""
    from scipy.optimize import minimize

    classes, y = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"logistic regression needs at least two classes, got {len(classes)}")
    n, features = x.shape
    l2 = 1.0 / (c * n)
    products = _products(x)
    if len(classes) == 2:
        objective = _binomial(products, (y == 1).astype(np.float64), l2)
        start = np.zeros(features + 1)
    else:
        objective = _multinomial(products, y, len(classes), l2)
        start = np.zeros(len(classes) * (features + 1))
    result = minimize(objective, start, method="L-BFGS-B", jac=True,
                      options={"maxiter": max_iter, "maxls": _MAX_LINE_SEARCH, "gtol": tol, "ftol": _FTOL})
    matrix = result.x.reshape((1 if len(classes) == 2 else len(classes), -1), order="F")
    return Logistic([str(label) for label in classes], matrix[:, :-1].copy(), matrix[:, -1].copy(), int(result.nit))
