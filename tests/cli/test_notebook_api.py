"""The notebook API (`import rescue`): the README's snippet as written, Jupyter's running loop, nothing written
without `out=`, typed results with `.to_pandas()`, and a Python model of one's own."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import rescue

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
    from rescue.llm.types import ChatAnswer, ModelBase

    class AlwaysYes(ModelBase):
        name = "my/always-yes"

        async def complete(self, request):
            return ChatAnswer('{"answer": "yes"}', "ok")

    samples = rescue.load()[:1]
    result = rescue.evaluate(AlwaysYes(), tasks=["itp"], data=samples)
    frame = result.to_pandas()
    row = frame[(frame.model == "my/always-yes") & (frame.scope == "all")].iloc[0]
    assert row["instances"] == len(rescue.get_task("itp").build(samples))
