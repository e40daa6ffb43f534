"""An inspect run is a rescue run (issue 35 item 3): the requests ``inspect eval rescue/<task>`` causes carry
rescue's generate config (temperature, answer budget) whatever the model's name, the log records what was sent,
and ``rescue report`` refuses (or with ``--allow-mixed`` marks) a log whose config differs from a ``rescue run``'s.

inspect's ``openai/`` provider takes every model name it does not know for a reasoning model and drops
``temperature``; a local server reached as ``openai/NAME -M responses_api=false`` was asked with none. The request
bodies are captured by the scripted OpenAI-compatible server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _cli import invoke_main
from extras import requires_extra
from test_inspect_tasks import inspect_env, mixed_answers, script_for

from rescue.engine.runner import RunConfig, run
from rescue.runs.inspect_logs import GENERATE_KEY
from rescue.tasks import get_task
from rescue.testing.openai_server import request_key, serve

pytestmark = [pytest.mark.slow, requires_extra("inspect"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

NAME = "my-local-model"  # a name inspect does not know: a "reasoning model" to its openai/ provider
SETTINGS = ("temperature", "max_tokens")


def _inspect(tmp_path: Path, server, monkeypatch, model: str, model_args: dict[str, Any] | None = None,
             **config: Any) -> Any:
    from inspect_ai import eval as inspect_eval

    from rescue.inspect_tasks.bench import rescue_task

    for name, value in {**inspect_env(server), "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.base_url}.items():
        monkeypatch.setenv(name, value)
    (log,) = inspect_eval([rescue_task("itp", limit_samples=1)], model=model, model_args=model_args or {},
                          model_base_url=server.base_url, log_dir=str(tmp_path / "logs"), display="none",
                          max_retries=0, **config)
    assert log.status == "success", log.error
    return log


def _rescue_run(tmp_path: Path, server) -> None:
    run(RunConfig(out=str(tmp_path / "run"), models=[NAME], tasks=["itp"], base_url=server.base_url, quiet=True,
                  bertscore=False, max_retries=0, timeout=30.0, limit_samples=1))


@pytest.mark.parametrize(("model", "model_args"), [
    (f"openai/{NAME}", {"responses_api": False}),  # inspect took it for a reasoning model: no temperature
    (f"openai-api/scripted/{NAME}", {}),
])
def test_inspect_requests_carry_rescues_generate_config_whatever_the_model_name(tmp_path, monkeypatch, model,
                                                                                   model_args):
    answers = mixed_answers("itp", limit=1)
    with serve(script_for(answers)) as server:
        _rescue_run(tmp_path, server)
        by_rescue = {request_key(b): b for b in server.bodies}
        log = _inspect(tmp_path, server, monkeypatch, model, model_args)
        by_inspect = {request_key(b): b for b in server.bodies[len(by_rescue):]}
    assert by_inspect.keys() == by_rescue.keys()  # the same prompts
    budget = int(get_task("itp").max_tokens)
    for key, body in by_inspect.items():
        assert {k: body.get(k) for k in SETTINGS} == {k: by_rescue[key][k] for k in SETTINGS} == \
               {"temperature": 0.0, "max_tokens": budget}
    recorded = [s.scores["rescue_itp"].metadata[GENERATE_KEY] for s in log.samples]
    assert recorded == [{"temperature": 0.0, "max_tokens": budget}] * len(log.samples)
    # Sent as rescue sends it, it shares a leaderboard with the rescue run.
    done = invoke_main(["report", str(tmp_path / "run"), str(tmp_path / "logs"), "--out", str(tmp_path / "report"),
                        "--bootstrap", "0", "--no-html", "--no-figures", "--quiet"])
    assert done.exit_code == 0, done.output


def test_an_eval_temperature_is_sent_recorded_and_refused_beside_a_rescue_run(tmp_path, monkeypatch):
    answers = mixed_answers("itp", limit=1)
    with serve(script_for(answers)) as server:
        _rescue_run(tmp_path, server)
        asked = server.request_count
        _inspect(tmp_path, server, monkeypatch, f"openai/{NAME}", {"responses_api": False}, temperature=0.7)
        assert {b["temperature"] for b in server.bodies[asked:]} == {0.7}  # --temperature overrides, as documented
    args = [str(tmp_path / "run"), str(tmp_path / "logs"), "--bootstrap", "0", "--no-html", "--no-figures", "--quiet"]
    refused = invoke_main(["report", *args, "--out", str(tmp_path / "refused")])
    assert refused.exit_code == 2 and "temperature differs" in refused.output
    assert f"{NAME}: 0" in refused.output and "0.7" in refused.output
    mixed = invoke_main(["report", *args, "--out", str(tmp_path / "mixed"), "--allow-mixed"])
    assert mixed.exit_code == 0 and "temperature differs" in mixed.output


def test_a_log_that_records_no_generate_config_is_refused_beside_a_rescue_run_and_noted_alone(tmp_path,
                                                                                             monkeypatch):
    from inspect_ai.log import read_eval_log, write_eval_log

    answers = mixed_answers("itp", limit=1)
    with serve(script_for(answers)) as server:
        _rescue_run(tmp_path, server)
        log = _inspect(tmp_path, server, monkeypatch, f"openai-api/scripted/{NAME}")
    # A log as rescue wrote it before it recorded the generate config.
    old = read_eval_log(log.location)
    for sample in old.samples:
        for score in sample.scores.values():
            score.metadata.pop(GENERATE_KEY)
    write_eval_log(old, log.location)
    refused = invoke_main(["report", str(tmp_path / "run"), str(tmp_path / "logs"), "--out", str(tmp_path / "r1"),
                           "--bootstrap", "0", "--no-html", "--no-figures", "--quiet"])
    assert refused.exit_code == 2 and "temperature differs" in refused.output and "not recorded" in refused.output
    alone = invoke_main(["report", str(tmp_path / "logs"), "--out", str(tmp_path / "r2"), "--bootstrap", "0",
                         "--no-html", "--no-figures", "--quiet"])
    assert alone.exit_code == 0 and "records no generate config" in alone.output
