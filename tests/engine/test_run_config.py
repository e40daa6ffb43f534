"""One run configuration: every `rescue run` option is declared once (`rescue.engine.run_options.RunOptions`), and
both `RunConfig` (pydantic: what results.json stores and resume compares) and the command are made from it."""

from __future__ import annotations

import typing

import pytest
import typer.main

from rescue.cli import app
from rescue.engine.config import OPERATIONAL_FIELDS, RunConfig, RunError
from rescue.engine.run_options import RunOptions, declared_options, literal_choices
from rescue.tasks import TASKS


def _run_params() -> dict[str, object]:
    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    return {p.name: p for p in command.params}


def test_the_command_and_the_model_are_made_from_one_declaration():
    declared = declared_options()
    params = _run_params()
    assert list(params) == [d.name for d in declared]  # the help's order is the declaration's
    for d in declared:
        assert params[d.name].opts[0] == d.opt.flags[0].split("/")[0]  # type: ignore[attr-defined]
        assert params[d.name].help == d.opt.help  # type: ignore[attr-defined]
    options = {d.name for d in declared if d.in_config}
    assert set(RunConfig.model_fields) - options == {"video"}  # gathered from --media-root and its friends
    assert options <= set(RunConfig.model_fields)
    for d in declared:
        if d.in_config and d.opt.cli is None:
            assert params[d.name].default == RunConfig.model_fields[d.name].default, d.name  # type: ignore[attr-defined]


def test_closed_choices_are_written_once():
    """Each closed choice is one Literal in rescue.data.choices: the option's type is it, and the library's tuples
    are its values, the same object (no second list a test has to hold equal)."""
    from rescue.data import choices
    from rescue.llm._providers import THINKING_LEVELS
    from rescue.tasks.base import MODES, PARSE_POLICIES
    from rescue.tasks.rpp import RPP_GOLD_CHOICES
    from rescue.video._options import IMAGE_DETAILS, MEDIA_MATCHES, VIDEO_INPUTS

    assert MODES is choices.MODES and PARSE_POLICIES is choices.PARSE_POLICIES
    assert THINKING_LEVELS is choices.THINKING_LEVELS and RPP_GOLD_CHOICES is choices.RPP_GOLD_CHOICES
    from rescue.scoring.judge import SCALES

    assert SCALES is choices.JUDGE_SCALES and typing.get_type_hints(RunOptions)["judge_scale"] is choices.JudgeScale
    assert (IMAGE_DETAILS, MEDIA_MATCHES, VIDEO_INPUTS) == (choices.IMAGE_DETAILS, choices.MEDIA_MATCHES,
                                                            choices.VIDEO_INPUTS)
    assert IMAGE_DETAILS is choices.IMAGE_DETAILS and MEDIA_MATCHES is choices.MEDIA_MATCHES
    hints = typing.get_type_hints(RunOptions)
    assert hints["mode"] is choices.Mode and hints["parse"] is choices.ParsePolicy
    assert literal_choices(hints["thinking"]) == THINKING_LEVELS
    video = {d.name: d for d in declared_options() if not d.in_config}
    assert video["media_match"].choices == MEDIA_MATCHES and video["video_input"].choices == VIDEO_INPUTS
    assert video["image_detail"].choices == IMAGE_DETAILS


def test_video_option_defaults_are_the_video_layers():
    from rescue.video._options import VideoOptions

    video = {d.name: d.default for d in declared_options() if not d.in_config}
    defaults = VideoOptions()
    for name in ("media_match", "video_input", "frame_rate", "max_frames", "frame_size", "image_detail"):
        assert video[name] == getattr(defaults, name), name
    assert video["media_workers"] == defaults.workers


def test_every_task_by_default():
    assert RunConfig(out="x").tasks == list(TASKS)
    assert RunConfig(out="x", tasks=None).tasks == list(TASKS)


@pytest.mark.parametrize(("values", "message"), [
    ({"mode": "film"}, "--mode 'film': choose one of dialogue"),
    ({"judge_scale": "nine"}, "--judge-scale 'nine': choose one of likert, authors"),
    ({"concurrency": 0}, "--concurrency 0: must be at least 1"),
    ({"batch_size": "0"}, "--batch-size '0': a positive number or 'authors'"),
    ({"budget_retry": 1.0}, "--budget-retry 1.0: a factor above 1"),
    ({"budget_retry": float("inf")}, "--budget-retry inf: a factor above 1 and at most 100"),
    ({"budget_retry": 1e308}, "--budget-retry 1e\\+308: a factor above 1 and at most 100"),
    ({"budget_retry": float("nan")}, "--budget-retry nan: a factor above 1"),
    ({"budget_retry": -2.0}, "--budget-retry -2.0: a factor above 1"),
    ({"budget_retry": 101.0}, "--budget-retry 101.0: a factor above 1 and at most 100"),
    ({"context_size": -2}, "--context-size -2: use -1"),
])
def test_a_bad_value_names_its_option(values, message):
    with pytest.raises(RunError, match=message):
        RunConfig(out="x", **values)


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


def test_video_is_video_options_in_a_video_mode_and_none_in_the_others(tmp_path, recwarn):
    from rescue.errors import VideoError
    from rescue.video import VideoOptions

    video = RunConfig(out="o", mode="video", media_root=str(tmp_path), frame_size=300)
    assert isinstance(video.video, VideoOptions) and video.video.frame_size == 300
    assert video.to_json()["video"] == video.video.to_json()  # as results.json stored it before it was typed
    back = RunConfig.from_json(video.to_json(), "results.json")
    assert back.video == video.video
    assert RunConfig(out="o").video is None
    # Read by VideoOptions, not pydantic: an unknown option is named, never dropped.
    with pytest.raises(VideoError, match="unknown video option"):
        RunConfig(out="o", mode="video", video={"media_root": str(tmp_path), "fps": 2})
    assert not [w for w in recwarn if "serializ" in str(w.message)]  # no pydantic serializer warning
