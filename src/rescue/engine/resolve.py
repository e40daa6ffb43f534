"""``resolve_model(spec)`` for evaluation: ``baseline/NAME`` is an offline baseline
(:mod:`rescue.baselines`, a :class:`~rescue.engine.types.TaskModel`); every other spec is a
:class:`~rescue.llm.Model` from :func:`rescue.llm.resolve_model` (presets, ``--base-url``,
``local/NAME``)."""

from __future__ import annotations

from typing import Any

from rescue.engine.types import TaskModel
from rescue.llm import GenerationSettings, LocalModel
from rescue.llm._resolve import settings_with
from rescue.llm import Model, resolve_model as resolve_llm

__all__ = ["LocalModel", "resolve_model"]


def resolve_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    settings: GenerationSettings | None = None,
    need_key: bool = True,
    **overrides: Any,
) -> Model | TaskModel:
    """The model or baseline ``spec`` names; ``overrides`` are :class:`GenerationSettings` fields."""
    if spec.partition("/")[0] == "baseline":
        from rescue.baselines import make_baseline

        return make_baseline(spec, seed=settings_with(settings, **overrides).seed or 0)
    return resolve_llm(spec, base_url=base_url, api_key_env=api_key_env, settings=settings, need_key=need_key,
                       **overrides)
