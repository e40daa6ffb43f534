"""Support-strategy preference bias (Kang et al., ACL 2024, used for ESConv), from a confusion matrix.

Definition used here:

- wins ``W[i, j]`` = number of instances where the model predicted strategy i (top-1) when the gold
  was strategy j, for i != j (the diagonal, i.e. right answers, carries no preference);
- Bradley-Terry strengths ``p`` are the maximum-likelihood solution of P(i beats j) = p_i/(p_i+p_j),
  fitted with Hunter's (2004) MM algorithm to convergence (Kang et al. run a fixed 20 iterations);
- strengths are normalised to sum to K, the number of strategies with at least one comparison
  (Kang et al.'s normalisation, so 1.0 is "no preference"); a strategy never compared has none;
- preference bias ``B`` = population standard deviation of those normalised strengths (Kang's ``p_bias``);
  ``log_spread`` = standard deviation of the natural log of the positive strengths, reported alongside
  because it does not depend on the normalisation.

Failed instances are left out: they are no preference for any strategy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PreferenceResult:
    """A model's label preference (Bradley-Terry strengths per label) and how biased it is."""

    labels: list[str]
    strengths: list[float | None]  # normalised to sum to K over labels that have one
    bias: float | None  # std of the normalised strengths
    log_spread: float | None  # std of log strengths over positive strengths
    iterations: int
    converged: bool


def bradley_terry(wins: np.ndarray, *, max_iter: int = 10_000, tol: float = 1e-10) -> tuple[np.ndarray, int, bool]:
    """MM estimate of Bradley-Terry strengths from a wins matrix (``wins[i, j]``: i beat j).

    Items with no comparison get NaN; items that never win converge to 0.
    """
    w = np.asarray(wins, dtype=float).copy()
    np.fill_diagonal(w, 0.0)
    n = w + w.T
    compared = n.sum(axis=1) > 0
    p = np.where(compared, 1.0, np.nan)
    total_wins = w.sum(axis=1)
    iterations, converged = 0, False
    for iterations in range(1, max_iter + 1):  # noqa: B007 - read after the loop
        with np.errstate(divide="ignore", invalid="ignore"):
            pair_sum = p[:, None] + p[None, :]
            denominator = np.nansum(np.where(n > 0, n / pair_sum, 0.0), axis=1)
            updated = np.where(compared, total_wins / denominator, np.nan)
        positive = updated[compared & (updated > 0)]
        if positive.size:
            updated = updated / np.exp(np.mean(np.log(positive)))  # fix the scale: geometric mean 1
        change = np.nanmax(np.abs(updated - p)) if compared.any() else 0.0
        p = updated
        if change < tol:
            converged = True
            break
    return p, iterations, converged


def preference_bias(labels: Sequence[str], gold: Sequence[str], predicted: Sequence[str | None]) -> PreferenceResult:
    """Strengths and bias over ``labels`` from paired gold / top-1 predicted labels (None = failure)."""
    index = {label: k for k, label in enumerate(labels)}
    wins = np.zeros((len(labels), len(labels)))
    for g, p in zip(gold, predicted):
        if p is None or g not in index or p not in index or g == p:
            continue
        wins[index[p], index[g]] += 1
    strengths, iterations, converged = bradley_terry(wins)
    defined = ~np.isnan(strengths)
    if not defined.any():
        return PreferenceResult(list(labels), [None] * len(labels), None, None, iterations, converged)
    normalised = strengths * defined.sum() / np.nansum(strengths)
    positive = normalised[defined & (normalised > 0)]
    return PreferenceResult(
        list(labels),
        [None if np.isnan(v) else float(v) for v in normalised],
        float(np.std(normalised[defined])),
        float(np.std(np.log(positive))) if positive.size > 1 else None,
        iterations,
        converged,
    )
