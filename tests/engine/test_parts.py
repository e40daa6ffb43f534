"""The groups of the configuration that the engine's helpers read (rescue.engine.parts): each field is a
``RunConfig`` field of the same name and type, so a group restates no option, and ``part`` copies the values."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from rescue.engine import parts
from rescue.engine.config import RunConfig
from rescue.engine.run_options import RunOptions

GROUPS = [getattr(parts, name) for name in parts.__all__ if dataclasses.is_dataclass(getattr(parts, name))]


def _declared(name: str) -> object:
    """The type RunOptions declares for ``name``, or a property's return type (``model_specs``)."""
    hints = typing.get_type_hints(RunOptions)
    if name in hints:
        return hints[name]
    return typing.get_type_hints(getattr(RunConfig, name).fget)["return"]


def test_the_groups_are_found() -> None:
    assert {g.__name__ for g in GROUPS} >= {"Asking", "Judging", "Selection", "BertScoring", "Resuming", "Roster"}


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: g.__name__)
def test_each_field_is_a_run_config_field_of_the_same_type(group: type) -> None:
    assert dataclasses.fields(group), group
    assert group.__dataclass_params__.frozen  # type: ignore[attr-defined]
    for name, hint in typing.get_type_hints(group).items():
        assert hasattr(RunConfig, name) or name in RunConfig.model_fields, f"{group.__name__}.{name}"
        assert hint == _declared(name), f"{group.__name__}.{name}: {hint} is not RunOptions' {_declared(name)}"


def test_part_copies_the_values_of_a_config() -> None:
    config = RunConfig(out="x", tasks="er,vp", judges=["j"], judge_repeats=3, concurrency=4, batch_size="authors",
                       context_size=2, mode="audio", parse="lenient", limit_samples=5, sample_choice="first")
    assert config.part(parts.Judging) == parts.Judging(["j"], "likert", 3, 4, False)
    asking = config.part(parts.Asking)
    assert (asking.mode, asking.batch_size, asking.context_size, asking.parse) == ("audio", "authors", 2, "lenient")
    assert asking.render(None).mode == "audio" and asking.render(None).context_size == 2
    assert (asking.epochs, asking.seed) == (1, None)
    assert config.part(parts.Selection) == parts.Selection(None, None, 5, "first", None)
    assert config.part(parts.Roster).model_specs == config.model_specs
    with pytest.raises(dataclasses.FrozenInstanceError):
        asking.concurrency = 8  # type: ignore[misc]


def test_the_typed_results_blocks_match_the_models_that_read_them():
    # The engine writes these blocks as TypedDicts and rescue.runs.results reads them back as models: a key
    # written under another name than the model reads (or a field the model has and the engine never writes)
    # fails here, not in a report.
    from rescue.engine.accounting import CostEntry, RunCounts
    from rescue.engine.plan import Used
    from rescue.runs.results import BertScoreInfo, ModelCost, RunStatus, UsedValues
    from rescue.scoring.bertscore import BackboneDescription

    assert set(Used.__annotations__) == set(UsedValues.model_fields) | {"baselines"}  # baselines: an extra
    assert set(RunCounts.__annotations__) - {"budget_exhausted"} <= set(RunStatus.model_fields)
    assert set(CostEntry.__annotations__) == set(ModelCost.model_fields) | {"batch"}  # batch: an extra
    assert set(BertScoreInfo.model_fields) <= set(BackboneDescription.__annotations__)
