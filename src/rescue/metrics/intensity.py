"""The ER intensity score of the paper: S_int = max(1, 5 - |predicted - gold|) on the 0-10 scale.

A plain function (gold first, like every rescue metric); it imports nothing from rescue.
"""

from __future__ import annotations

INTENSITY_MIN = 0
INTENSITY_MAX = 10
# The lowest S_int there is; a failed answer gets it, so a failure never scores above a wrong answer.
INTENSITY_SCORE_FLOOR = 1.0


def intensity_score(gold: int, predicted: int) -> float:
    """S_int: 5 for an exact match, one point less per point of difference, never below 1.

    >>> intensity_score(7, 7), intensity_score(7, 5), intensity_score(2, 9)
    (5.0, 3.0, 1.0)
    """
    for name, value in (("gold", gold), ("predicted", predicted)):
        if not INTENSITY_MIN <= value <= INTENSITY_MAX:
            raise ValueError(f"{name} intensity {value!r} is outside {INTENSITY_MIN}-{INTENSITY_MAX}")
    return float(max(1, 5 - abs(predicted - gold)))
