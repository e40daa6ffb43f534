"""The one private name of inspect_ai rescue uses (issue #47 item 1), bounded, tested and loud.

inspect_ai has no public reader of the eval's generate config inside a solver, so rescue reads it through
``inspect_ai.model._generate_config.active_generate_config``: pyproject's ``inspect`` extra is bounded to the
version it was verified on, a test here fails on any other version, an eval given a Model object (the case where
``get_model().config`` does not hold the eval's ``--temperature``) sends the eval's temperature, and an inspect_ai
without the reader stops with an error rather than sending a request without it (it used to fall back silently
to the model's own config). The task names come from inspect's public ``registry_info``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from extras import requires_extra
from test_inspect_tasks import inspect_env, mixed_answers, script_for

from rescue.testing.openai_server import serve

pytestmark = [requires_extra("inspect"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_inspect_is_the_verified_one_and_the_extra_is_bounded_to_it():
    from rescue.inspect_tasks.bench import VERIFIED_INSPECT_VERSION

    assert version("inspect-ai") == VERIFIED_INSPECT_VERSION, (
        f"inspect-ai {version('inspect-ai')} is installed, rescue's use of its private generate-config reader was "
        f"verified on {VERIFIED_INSPECT_VERSION}: check it on this version (this file's tests), then raise "
        "VERIFIED_INSPECT_VERSION and pyproject's bound together")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    (spec,) = [s for s in extras["inspect"] if s.startswith("inspect-ai")]
    major, minor, patch = (int(p) for p in VERIFIED_INSPECT_VERSION.split("."))
    assert f"<{major}.{minor}.{patch + 1}" in spec.replace(" ", ""), spec
    assert "inspect_ai.model._generate_config" in (ROOT / "docs/architecture.md").read_text(encoding="utf-8")


def test_the_task_names_are_rescues_whatever_the_install():
    from inspect_ai.util import registry_info

    from rescue.inspect_tasks import bench
    from rescue.tasks import TASKS

    assert {name: registry_info(getattr(bench, name)).name for name in TASKS} == {n: f"rescue/{n}" for n in TASKS}


@pytest.mark.slow
def test_an_eval_temperature_reaches_the_request_when_eval_is_given_a_model_object(tmp_path, monkeypatch):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from rescue.inspect_tasks.bench import rescue_task

    answers = mixed_answers("itp", limit=1)
    with serve(script_for(answers)) as server:
        for name, value in {**inspect_env(server), "OPENAI_API_KEY": "test"}.items():
            monkeypatch.setenv(name, value)
        model = get_model("openai-api/scripted/my-local-model", base_url=server.base_url)
        assert model.config.temperature is None  # the eval's --temperature is not in the model's own config
        (log,) = inspect_eval([rescue_task("itp", limit_samples=1)], model=model, log_dir=str(tmp_path / "logs"),
                              display="none", max_retries=0, temperature=0.7)
        assert log.status == "success", log.error
        assert server.bodies and {b["temperature"] for b in server.bodies} == {0.7}


def test_an_inspect_without_the_reader_stops_loudly_and_sends_nothing(tmp_path):
    """inspect_ai's next version may drop the private reader: simulated in a process of its own, where the name is
    gone as it would be there. The solver's config reader raises the error a user sees in the log."""
    code = """
import inspect_ai.model._generate_config as private
del private.active_generate_config  # inspect_ai as a version that renamed or dropped it would be
from inspect_ai.model import get_model
from rescue.errors import RescueError
from rescue.inspect_tasks.bench import _active_config
try:
    _active_config(get_model("mockllm/model"))
except RescueError as exc:
    print("ERROR", exc)
else:
    print("NO ERROR")
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path)
    assert done.stdout.startswith("ERROR"), done.stdout + done.stderr
    assert re.search(r"inspect_ai [\d.]+ has no inspect_ai\.model\._generate_config\.active_generate_config",
                     done.stdout)
    assert "inspect-ai==" in done.stdout
