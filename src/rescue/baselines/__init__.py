"""The offline baselines: reference models that need no network, no key and no weights (``baseline/majority``,
``uniform``, ``persist``, ``nearest`` and ``supervised``), each a :class:`rescue.engine.types.TaskModel` that the
runner asks as it asks a model, and their numerics (TF-IDF, the supervised baseline's out-of-fold fit).

``make_baseline(name)`` gives the baseline ``name`` names; ``docs/baselines.md`` defines each. The modules behind
this face are private.
"""

from __future__ import annotations

from rescue.baselines._baselines import (
    BASELINE_NAMES,
    BASELINES,
    Asked,
    Baseline,
    BaselineError,
    MajorityBaseline,
    NearestBaseline,
    PersistBaseline,
    SupervisedBaseline,
    UniformBaseline,
    make_baseline,
)

__all__ = ["BASELINES", "BASELINE_NAMES", "Asked", "Baseline", "BaselineError", "MajorityBaseline",
           "NearestBaseline", "PersistBaseline", "SupervisedBaseline", "UniformBaseline", "make_baseline"]
