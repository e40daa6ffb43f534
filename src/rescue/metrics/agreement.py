"""Agreement statistics between raters, as plain functions (no rescue imports): exact agreement, MAE,
correlations, Cohen's kappa, Krippendorff's alpha, and for free text exact agreement after normalisation and
a token-overlap score. Statistics libraries are imported when a statistic
is computed, so importing this module stays cheap."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import Literal, TypedDict


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _is_integral(values: Iterable[float]) -> bool:
    return all(float(v).is_integer() for v in values)


def pair_statistics(human: Sequence[float], judge: Sequence[float]) -> dict[str, float | int | None]:
    """Agreement of paired scores: exact agreement, MAE, Spearman, Pearson, quadratic-weighted Cohen's kappa
    and Krippendorff's alpha (ordinal). Correlations are ``None`` when a side is constant (undefined);
    kappa is ``None`` when a score is not a whole number (the mean of several judges)."""
    import numpy as np
    from scipy.stats import pearsonr, spearmanr
    from sklearn.metrics import accuracy_score, cohen_kappa_score, mean_absolute_error

    if len(human) != len(judge):
        raise ValueError("human and judge scores must pair up")
    n = len(human)
    result: dict[str, float | int | None] = {
        "pairs": n, "exact_matches": None, "exact_agreement": None, "mae": None, "spearman": None,
        "pearson": None, "cohen_kappa_quadratic": None, "krippendorff_alpha": None,
    }
    if n == 0:
        return result
    h = np.asarray(human, dtype=float)
    j = np.asarray(judge, dtype=float)
    # accuracy_score wants labels; scores are compared as strings of their exact values.
    exact = accuracy_score([repr(float(x)) for x in h], [repr(float(x)) for x in j])
    result["exact_agreement"] = float(exact)
    result["exact_matches"] = round(exact * n)
    result["mae"] = float(mean_absolute_error(h, j))
    if n >= 2 and np.ptp(h) > 0 and np.ptp(j) > 0:
        result["spearman"] = _finite(spearmanr(h, j).statistic)
        result["pearson"] = _finite(pearsonr(h, j).statistic)
    if _is_integral(h) and _is_integral(j) and len(set(h) | set(j)) > 1:
        result["cohen_kappa_quadratic"] = _finite(cohen_kappa_score(h.astype(int), j.astype(int), weights="quadratic"))
    result["krippendorff_alpha"] = alpha([list(h), list(j)])
    return result


def alpha(
    reliability: Sequence[Sequence[float | None]],
    level: Literal["nominal", "ordinal", "interval", "ratio"] = "ordinal",
) -> float | None:
    """Krippendorff's alpha of a raters x units matrix (``None`` = not rated); ``None`` when undefined
    (fewer than two raters, no unit rated twice, or no variation at all)."""
    import krippendorff
    import numpy as np

    if len(reliability) < 2:
        return None
    matrix = np.array([[np.nan if v is None else float(v) for v in row] for row in reliability], dtype=float)
    paired = (~np.isnan(matrix)).sum(axis=0) >= 2
    if not paired.any():
        return None
    values = matrix[:, paired]
    if np.unique(values[~np.isnan(values)]).size < 2:
        return None  # no variation: alpha is 0/0
    return _finite(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))


_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'", "`": "'"})


def text_tokens(text: str) -> list[str]:
    """The words of ``text`` after normalisation: Unicode NFKC, case folded, typographic apostrophes made
    plain, punctuation and spacing dropped (``"Leans  IN, arms crossed."`` -> ``["leans", "in", "arms",
    "crossed"]``)."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold())


def token_overlap(a: str, b: str) -> float:
    """Token F1 of two texts (the multiset overlap of their words, as SQuAD scores answers): 1.0 for the same
    words in any order, 0.0 for none shared; two empty texts agree (1.0), an empty and a non-empty one do not."""
    left, right = Counter(text_tokens(a)), Counter(text_tokens(b))
    if not left or not right:
        return 1.0 if not left and not right else 0.0
    shared = sum((left & right).values())
    if shared == 0:
        return 0.0
    precision, recall = shared / sum(right.values()), shared / sum(left.values())
    return 2 * precision * recall / (precision + recall)


class TextAgreement(TypedDict):
    """Agreement on free text (:func:`text_agreement`)."""

    units: int
    exact: float | None
    token_overlap: float | None


def text_agreement(units: Iterable[Sequence[str]]) -> TextAgreement:
    """Agreement on free text over units each rated by two or more raters (units with fewer are skipped):
    ``exact`` is the share of units on which every text is the same after normalisation (:func:`text_tokens`),
    ``token_overlap`` the mean over units of the mean pairwise :func:`token_overlap`; ``None`` with no unit."""
    rated = [list(texts) for texts in units if len(texts) >= 2]
    if not rated:
        return {"units": 0, "exact": None, "token_overlap": None}
    exact = sum(1 for texts in rated if len({tuple(text_tokens(t)) for t in texts}) == 1)
    overlap = [sum(token_overlap(a, b) for a, b in pairs) / len(pairs)
               for pairs in (list(combinations(texts, 2)) for texts in rated)]
    return {"units": len(rated), "exact": exact / len(rated), "token_overlap": sum(overlap) / len(overlap)}


def alt_test(
    judge: dict[str, float],
    humans: dict[str, dict[str, float]],
    *,
    epsilon: float = 0.2,
    q: float = 0.05,
    min_items: int = 2,
    wilcoxon_below: int = 30,
) -> dict[str, object]:
    """The alternative annotator test (Calderon, Reichart & Dror, ACL 2025): may the judge replace a human?

    ``judge`` maps item → judge score; ``humans`` maps rater → item → score. For each rater j left out, on the
    items j rated with at least one other rater and the judge, the judge's and j's alignment with the other
    raters is the negative RMSE against their scores; the judge wins item i when its alignment is at least j's
    (W_f), j wins when j's is at least the judge's (W_h; a tie is a win for both). ρ_f and ρ_h are the shares
    of items won. The one-sided test of H0: ρ_f ≤ ρ_h − ε is a paired t-test on d_i = W_f − W_h against −ε,
    or a Wilcoxon signed-rank test on d_i + ε when fewer than ``wilcoxon_below`` items. The p-values of all
    raters are corrected by Benjamini–Yekutieli at ``q``; the winning rate ω is the share of raters whose H0
    is rejected, and the judge passes when ω ≥ 0.5. The advantage probability is the mean ρ_f.

    ε is the cost-benefit margin: the paper suggests 0.2 when the humans are crowd workers, 0.15 for skilled
    annotators and 0.1 for experts. Raters with fewer than ``min_items`` such items are left out (listed).
    """
    import numpy as np
    from scipy.stats import false_discovery_control, ttest_1samp, wilcoxon

    per_rater: dict[str, dict[str, object]] = {}
    skipped: dict[str, int] = {}
    for rater, own in sorted(humans.items()):
        w_f: list[float] = []
        w_h: list[float] = []
        for item, score in own.items():
            if item not in judge:
                continue
            others = [h[item] for r, h in humans.items() if r != rater and item in h]
            if not others:
                continue
            rest = np.asarray(others, dtype=float)
            judge_fit = -math.sqrt(float(np.mean((judge[item] - rest) ** 2)))
            human_fit = -math.sqrt(float(np.mean((score - rest) ** 2)))
            w_f.append(float(judge_fit >= human_fit))
            w_h.append(float(human_fit >= judge_fit))
        if len(w_f) < min_items:
            skipped[rater] = len(w_f)
            continue
        d = np.asarray(w_f) - np.asarray(w_h)
        if len(d) < wilcoxon_below:
            test = "wilcoxon"
            p = float(wilcoxon(d + epsilon, alternative="greater", zero_method="zsplit").pvalue)
        else:
            test = "t-test"
            if np.ptp(d) == 0:  # no spread: the mean alone decides
                p = 0.0 if d[0] > -epsilon else 1.0
            else:
                p = float(ttest_1samp(d, -epsilon, alternative="greater").pvalue)
        per_rater[rater] = {"items": len(d), "rho_judge": float(np.mean(w_f)), "rho_human": float(np.mean(w_h)),
                            "test": test, "p_value": p}
    if per_rater:
        adjusted = false_discovery_control([v["p_value"] for v in per_rater.values()], method="by")
        for values, p_adj in zip(per_rater.values(), adjusted):
            values["p_adjusted"] = float(p_adj)
            values["judge_wins"] = bool(p_adj < q)
    wins = sum(1 for v in per_rater.values() if v["judge_wins"])
    winning_rate = wins / len(per_rater) if per_rater else None
    return {
        "epsilon": epsilon, "q": q, "raters_tested": len(per_rater), "raters_skipped": skipped,
        "winning_rate": winning_rate,
        "advantage_probability": (float(np.mean([v["rho_judge"] for v in per_rater.values()])) if per_rater
                                  else None),
        "passed": None if winning_rate is None else winning_rate >= 0.5,
        "per_rater": per_rater,
    }
