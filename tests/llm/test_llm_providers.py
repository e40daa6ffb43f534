"""Model specs, presets and credentials: keys come from the environment or ./.env and are never echoed."""

from __future__ import annotations

import pytest

from rescue.llm._client import GenerationSettings, OpenAIModel
from rescue.llm._providers import LOCAL_HOSTS, CredentialError, normalize_base_url, redact, resolve_endpoint
from rescue.engine.resolve import LocalModel, resolve_model

SECRET = "sk-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "DASHSCOPE_API_KEY", "MY_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env from the checkout
    monkeypatch.setattr("rescue.llm._providers._DOTENV_LOADED", False)


def test_preset_knows_base_url_and_key_variable(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", SECRET)
    endpoint = resolve_endpoint("deepseek/deepseek-chat")
    assert endpoint.base_url == "https://api.deepseek.com/v1"
    assert endpoint.model_id == "deepseek-chat"
    assert endpoint.api_key == SECRET
    assert SECRET not in repr(endpoint)


def test_openrouter_model_ids_keep_their_slashes(monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", SECRET)
    assert resolve_endpoint("openrouter/meta-llama/llama-3.1-8b-instruct").model_id == "meta-llama/llama-3.1-8b-instruct"


def test_dashscope_preset_disables_thinking(monkeypatch):
    monkeypatch.setenv("DASHSCOPE_API_KEY", SECRET)
    model = resolve_model("dashscope/qwen3-8b")
    assert isinstance(model, OpenAIModel)
    assert model.settings.extra_body == {"enable_thinking": False}
    # The model's own settings win over the preset's.
    own = resolve_model("dashscope/qwen3-8b", extra_body={"enable_thinking": True})
    assert own.settings.extra_body == {"enable_thinking": True}


def test_missing_key_names_the_variable(monkeypatch):
    with pytest.raises(CredentialError, match="DEEPSEEK_API_KEY"):
        resolve_endpoint("deepseek/deepseek-chat")


def test_key_from_dotenv_in_working_directory(tmp_path):
    (tmp_path / ".env").write_text(f"MY_KEY='{SECRET}'\n", encoding="utf-8")
    endpoint = resolve_endpoint("some-model", base_url="https://gateway.example/v1", api_key_env="MY_KEY")
    assert endpoint.api_key == SECRET
    assert endpoint.model_id == "some-model"


def test_environment_wins_over_dotenv(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("OPENAI_API_KEY=from-dotenv\n", encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    assert resolve_endpoint("m", base_url="https://x.example/v1").api_key == SECRET


def test_local_base_url_needs_no_key():
    endpoint = resolve_endpoint("qwen", base_url="http://127.0.0.1:8000/v1/")
    assert endpoint.base_url == "http://127.0.0.1:8000/v1"
    assert endpoint.api_key == "EMPTY"


@pytest.mark.parametrize("host", LOCAL_HOSTS)
def test_every_local_host_needs_no_key_and_the_docs_say_so(host):
    """docs/engine.md said a missing key is an error for --base-url endpoints; on this machine none is needed."""
    from pathlib import Path

    shown = f"[{host}]" if ":" in host else host
    assert resolve_endpoint("m", base_url=f"http://{shown}:8000/v1").api_key == "EMPTY"
    docs = (Path(__file__).resolve().parents[2] / "docs" / "engine.md").read_text(encoding="utf-8")
    (row,) = [line for line in docs.splitlines() if line.startswith("| `ID --base-url URL`")]
    assert "none on this machine" in row and f"`{host}`" in row
    said = " ".join(docs.split("A missing\nkey is an error", 1)[1].split("\n\n", 1)[0].split())
    assert "`--base-url` endpoint on this machine" in said and f"`{host}`" in said


def test_remote_base_url_without_key_is_an_error():
    with pytest.raises(CredentialError, match="OPENAI_API_KEY"):
        resolve_endpoint("m", base_url="https://gateway.example/v1")


def test_unknown_prefix_without_base_url_lists_presets():
    with pytest.raises(CredentialError, match="deepseek/MODEL"):
        resolve_endpoint("nosuch/model")


def test_bad_base_url():
    with pytest.raises(CredentialError, match="http"):
        normalize_base_url("localhost:8000")


def test_rescore_resolves_without_a_key():
    endpoint = resolve_endpoint("deepseek/deepseek-chat", need_key=False)
    assert endpoint.base_url.startswith("https://api.deepseek.com")


def test_redact():
    assert redact(f"Bearer {SECRET} rejected", [SECRET]) == "Bearer *** rejected"


def test_resolve_model_kinds():
    assert resolve_model("baseline/majority").name == "baseline/majority"
    local = resolve_model("local/smollm2")
    assert isinstance(local, LocalModel)
    assert local.cache_identity == "local/smollm2"  # independent of the port the server gets


def test_settings_are_part_of_the_cache_identity():
    a = resolve_model("m", base_url="http://127.0.0.1:1/v1", settings=GenerationSettings(temperature=0.0))
    b = resolve_model("m", base_url="http://127.0.0.1:1/v1", settings=GenerationSettings(temperature=0.7))
    assert a.cache_settings() != b.cache_settings()


def test_a_preset_judge_goes_to_its_provider_not_to_the_models_base_url():
    from rescue.engine.runner import RunConfig, Runner

    config = RunConfig(out="unused", models=["Qwen/Qwen3-8B"], base_url="http://127.0.0.1:8000/v1",
                       judges=["openai/gpt-5.4", "my-judge"])
    runner = Runner(config, offline=True)  # offline: resolves without reading keys
    assert runner._resolve("Qwen/Qwen3-8B").endpoint.base_url == "http://127.0.0.1:8000/v1"
    assert runner._resolve("openai/gpt-5.4", judge=True).endpoint.base_url == "https://api.openai.com/v1"
    assert runner._resolve("my-judge", judge=True).endpoint.base_url == "http://127.0.0.1:8000/v1"
