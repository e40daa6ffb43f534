"""One run configuration: `RunConfig` (pydantic) is what results.json stores and resume compares; every field
is a `rescue run` option with the same default, so the CLI and the model cannot drift apart."""

from __future__ import annotations

import inspect

import pytest

from rescue.cli.app import DEFAULT_SPLITS_FILE
from rescue.tasks import TASKS
from rescue.cli.run_cmds import run_command
from rescue.engine.config import OPERATIONAL_FIELDS, RunConfig, RunError

# RunConfig field -> the `rescue run` parameter that sets it, where the names differ.
RENAMED = {"models": "model", "judges": "judge", "extra_body": "extra", "task_options": "task_option"}
# Fields set from several options or from a file, and their options.
COMPOSITE = {"video": {"media_root", "media_match", "video_input", "frame_rate", "max_frames", "frame_size",
                       "media_workers", "image_detail"}}
# Options that are not configuration: they say what to do with it.
NOT_CONFIG = {"dry_run", "suite", "ctx"}
# The CLI spells a few "nothing" values its own way; RunConfig keeps None.
CLI_SPELLING = {"max_failures": (50, 50), "tasks": (None, None), "model_settings": (None, {}), "cache_dir": (None, None),
                "prices": (None, None), "splits": (DEFAULT_SPLITS_FILE, None)}  # --splits is a path; stored only with --split


def _cli_defaults() -> dict[str, object]:
    return {name: p.default for name, p in inspect.signature(run_command).parameters.items()}


def test_every_config_field_is_a_run_option_and_every_option_a_field():
    cli = _cli_defaults()
    fields = set(RunConfig.model_fields)
    covered = set(NOT_CONFIG)
    for name in fields:
        if name in COMPOSITE:
            assert COMPOSITE[name] <= set(cli), f"RunConfig.{name}: options {COMPOSITE[name] - set(cli)} missing"
            covered |= COMPOSITE[name]
            continue
        option = RENAMED.get(name, name)
        assert option in cli, f"RunConfig.{name} has no `rescue run` option ({option})"
        covered.add(option)
    assert set(cli) - covered == set(), f"`rescue run` options outside RunConfig: {set(cli) - covered}"


def test_defaults_agree():
    cli = _cli_defaults()
    for name, info in RunConfig.model_fields.items():
        if name in COMPOSITE or name in RENAMED or name in ("out", "data"):
            continue
        default = info.get_default(call_default_factory=True)
        if name in CLI_SPELLING:
            continue
        assert cli[name] == default, f"--{name.replace('_', '-')}: CLI default {cli[name]!r}, RunConfig {default!r}"
    # --tasks defaults to None on the command line (so `--help` needs no task registry): every task, as RunConfig.
    assert cli["tasks"] is None
    assert RunConfig.model_fields["tasks"].get_default(call_default_factory=True) == list(TASKS)


def test_unknown_fields_and_bad_values_are_refused():
    with pytest.raises(Exception, match="temprature"):
        RunConfig(out="x", temprature=1.0)  # type: ignore[call-arg]
    with pytest.raises(RunError, match="--sample-choice"):
        RunConfig(out="x", sample_choice="random")
    assert RunConfig(out="x", tasks="ITP, rpp").tasks == ["itp", "rpp"]


def test_results_config_round_trips_and_operational_fields_do_not_block_a_resume():
    config = RunConfig(out="a", tasks=["itp"], limit_samples=3, temperature=0.3, concurrency=4)
    again = RunConfig.from_json(config.to_json(), "results.json")
    assert again.result_fields() == config.result_fields()
    relaxed = RunConfig(out="b", tasks=["itp"], limit_samples=3, temperature=0.3, concurrency=64, max_retries=1)
    assert relaxed.result_fields() == config.result_fields()
    assert {"out", "concurrency", "max_retries", "quiet"} <= OPERATIONAL_FIELDS
    assert RunConfig(out="a", tasks=["itp"], temperature=0.7).result_fields() != config.result_fields()
