"""The notebook API (`import rescue`): the README's snippet as written, Jupyter's running loop, nothing written
without `out=`, typed results with `.to_pandas()`, and a Python model of one's own."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

import rescue
from rescue.errors import RescueError

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_snippet() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- notebook-api -->\s*```python\n(.*?)```", text, re.S)
    assert match, "README.md lost its notebook API snippet (marked <!-- notebook-api -->)"
    return match.group(1)


def test_the_readme_snippet_runs_as_written_in_under_ten_lines(tmp_path, monkeypatch):
    code = _readme_snippet()
    assert len([line for line in code.splitlines() if line.strip()]) < 10
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the documented snippet, verbatim
    frame = scope["frame"]
    assert {"model", "task", "scope", "instances"} <= set(frame.columns)
    assert set(frame["task"]) == {"itp", "rpp"}
    assert list(tmp_path.iterdir()) == []  # no out=: nothing written, not even a cache


def test_public_surface_is_declared_and_resolves():
    assert {"load", "get_task", "evaluate", "evaluate_async", "Evaluation", "RunResults"} <= set(rescue.__all__)
    for name in rescue.__all__:
        assert getattr(rescue, name) is not None
    assert rescue.get_task("ITP").name == "itp"


def test_evaluate_works_inside_a_running_event_loop(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    async def notebook_cell() -> rescue.Evaluation:
        # What Jupyter does: the cell's code runs while an event loop is running in this thread.
        return rescue.evaluate("baseline/majority", tasks=["itp"], limit_samples=1)

    result = asyncio.run(notebook_cell())
    assert result.complete and result.metrics("baseline/majority", "itp")["instances"] > 0
    assert list(tmp_path.iterdir()) == []


def test_evaluate_async_and_out_writes_a_run_directory(tmp_path):
    result = asyncio.run(rescue.evaluate_async(["baseline/majority"], tasks=["rpp"], limit_samples=2,
                                               out=tmp_path / "run"))
    assert result.out == tmp_path / "run"
    stored = json.loads((tmp_path / "run" / "results.json").read_text())
    assert stored["models"]["baseline/majority"]["rpp"] == result.results.model_dump(mode="json")[
        "models"]["baseline/majority"]["rpp"]
    assert len(result.records_frame()) == len(result.records) > 0


def test_a_python_model_of_ones_own(tmp_path):
    from rescue.llm._types import ChatAnswer, ModelBase

    class AlwaysYes(ModelBase):
        name = "my/always-yes"

        async def complete(self, request):
            return ChatAnswer('{"answer": "yes"}', "ok")

    samples = rescue.load()[:1]
    result = rescue.evaluate(AlwaysYes(), tasks=["itp"], data=samples)
    frame = result.to_pandas()
    row = frame[(frame.model == "my/always-yes") & (frame.scope == "all")].iloc[0]
    assert row["instances"] == len(rescue.get_task("itp").build(samples))


def _option_values() -> dict[str, object]:
    """Every option `rescue run` declares that is configuration, by its name, at its default (a video mode and a
    media root so that the video options apply)."""
    from rescue.engine.run_options import declared_options

    values = {d.name: d.default for d in declared_options()
              if (d.in_config or d.opt.video) and d.name not in ("out", "tasks", "models")}
    return {**values, "mode": "video", "media_root": "."}


def test_evaluate_takes_every_option_rescue_run_takes_video_options_included(tmp_path):
    """By name, as `rescue run` spells them (--frame-size is frame_size): each reaches the run's configuration.
    A video mode needs media, so the run stops at the first sample with no clip: a RescueError, not pydantic's."""
    values = {**_option_values(), "frame_size": 224, "media_workers": 1, "media_root": str(tmp_path)}
    try:
        rescue.evaluate("baseline/majority", tasks=["itp"], **values)
    except RescueError as exc:
        assert "frame_size" not in str(exc) and "unknown option" not in str(exc), exc
    from rescue.engine.config import RunConfig

    config = RunConfig(out=".", **values)
    assert config.video is not None and config.video.frame_size == 224 and config.video.workers == 1
    assert config.video.media_root == str(tmp_path.resolve())


@pytest.mark.parametrize(("values", "message"), [
    ({"frame_size": "big"}, "--frame-size 'big': expected int"),
    ({"frame_size": 8}, "--frame-size 8: use 16 to 4096"),
    ({"frame_rate": "fast"}, "--frame-rate 'fast': expected float or int"),
    ({"media_workers": 1.5}, "--media-workers 1.5: expected int"),
    ({"image_detail": "huge"}, "--image-detail 'huge': choose one of low, high, auto"),
    ({"media_match": 3}, "--media-match 3: expected str"),
    ({"max_frames": True}, "--max-frames True: expected int"),
])
def test_a_bad_video_option_is_a_rescue_error_naming_it(tmp_path, values, message):
    with pytest.raises(RescueError, match=re.escape(message)):
        rescue.evaluate("baseline/majority", mode="video", media_root=str(tmp_path), **values)


def test_video_options_outside_a_video_mode_or_given_twice_are_refused(tmp_path):
    with pytest.raises(RescueError, match="need --mode video"):
        rescue.evaluate("baseline/majority", frame_size=224)
    with pytest.raises(RescueError, match="needs --media-root"):
        rescue.evaluate("baseline/majority", mode="video", frame_size=224)
    with pytest.raises(RescueError, match="either as video= or by name"):
        rescue.evaluate("baseline/majority", mode="video", media_root=str(tmp_path), video={"frame_size": 224})
