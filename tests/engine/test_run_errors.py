"""One error path for `rescue run` (issue #33, item 8): a bad option is one line, exit 2, before any work (no
folder made), and `--dry-run` and the notebook API (`rescue.evaluate`) refuse exactly what the run refuses, with
the run's message: one check, :meth:`rescue.engine.runner.Runner.check`, serves all three."""

from __future__ import annotations

import pytest
from _cli import invoke_main

import rescue
from rescue.errors import RescueError

KEYS = {"OPENAI_API_KEY": "test-key-0123456789", "DASHSCOPE_API_KEY": "test-key-0123456789"}

# (rescue run's arguments, the same in rescue.evaluate's keywords, what the message says)
BAD_OPTIONS = [
    pytest.param(["--tasks", "er", "--judge", "openai/a", "--judge", "openai/a"],
                 {"tasks": ["er"], "judges": ["openai/a", "openai/a"]}, "--judge 'openai/a' is given twice",
                 id="judge-twice"),
    pytest.param(["--tasks", "er", "--judge", "openai/a", "--judge", " openai/a "],
                 {"tasks": ["er"], "judges": ["openai/a", " openai/a "]}, "--judge 'openai/a' is given twice",
                 id="judge-twice-spaced"),
    pytest.param(["--tasks", "er", "--judge", ""], {"tasks": ["er"], "judges": [""]}, "--judge: empty model name",
                 id="judge-empty"),
    pytest.param(["--model", "dashscope/qwen3-8b", "--thinking", "high"],
                 {"models": "dashscope/qwen3-8b", "thinking": "high"}, "--thinking high for 'dashscope/qwen3-8b'",
                 id="thinking-level-the-provider-lacks"),
    pytest.param(["--tasks", "er", "--judge", "dashscope/qwen3-8b", "--thinking", "low"],
                 {"tasks": ["er"], "judges": ["dashscope/qwen3-8b"], "thinking": "low"},
                 "--thinking low for 'dashscope/qwen3-8b'", id="thinking-of-a-judge"),
    pytest.param(["--model", "nosuch/model"], {"models": "nosuch/model"}, "--model 'nosuch/model': give --base-url",
                 id="unknown-preset"),
    pytest.param(["--model", "m", "--base-url", "ftp://example.org/v1"],
                 {"models": "m", "base_url": "ftp://example.org/v1"}, "--base-url 'ftp://example.org/v1'",
                 id="base-url-not-http"),
    pytest.param(["--model", "m", "--base-url", "not a url"], {"models": "m", "base_url": "not a url"},
                 "--base-url 'not a url'", id="base-url-not-a-url"),
    pytest.param(["--tasks", "er", "--judge", "baseline/majority"], {"tasks": ["er"], "judges": ["baseline/majority"]},
                 "a judge must be a model that reads messages", id="baseline-as-judge"),
    pytest.param(["--model", "local/nope"], {"models": "local/nope"}, "unknown local model", id="unknown-local-model"),
    pytest.param(["--media-root", "."], {"video": {"media_root": "."}}, "need --mode video",
                 id="video-options-without-video-mode"),
    pytest.param(["--cache-dir", __file__], {"cache_dir": __file__}, "--cache-dir", id="cache-dir-a-file"),
]


@pytest.mark.parametrize(("args", "keywords", "message"), BAD_OPTIONS)
def test_a_bad_option_is_one_line_exit_2_before_any_folder_is_made(tmp_path, args, keywords, message):
    out = tmp_path / "run"
    result = invoke_main(["run", "--out", str(out), "--quiet", "--no-bertscore", *args], env=KEYS)
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not out.exists()


@pytest.mark.parametrize(("args", "keywords", "message"), BAD_OPTIONS)
def test_dry_run_refuses_what_the_run_refuses(args, keywords, message):
    result = invoke_main(["run", "--dry-run", "--no-bertscore", *args], env={k: "" for k in KEYS})
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.output
    assert "requests" not in result.stdout  # refused before anything is counted


@pytest.mark.parametrize(("args", "keywords", "message"), BAD_OPTIONS)
def test_the_notebook_api_raises_the_same_rescue_error(tmp_path, monkeypatch, args, keywords, message):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(RescueError) as caught:
        rescue.evaluate(out=tmp_path / "run", bertscore=False, quiet=True, **keywords)
    assert message in str(caught.value)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("keywords", "message"), [
    ({"max_tokens": "many"}, "--max-tokens 'many': Input should be a valid integer"),
    ({"temperature": [1]}, "--temperature [1]: Input should be a valid number"),
    ({"no_such_option": 1}, "unknown option 'no_such_option'"),
])
def test_a_value_of_the_wrong_type_in_python_is_a_rescue_error_naming_the_option(tmp_path, keywords, message):
    with pytest.raises(RescueError) as caught:
        rescue.evaluate(out=tmp_path / "run", **keywords)
    assert message in str(caught.value)


def test_a_model_given_twice_is_run_once(tmp_path):
    from rescue.engine.config import RunConfig

    config = RunConfig(out=str(tmp_path / "run"), models=["baseline/majority", "baseline/majority "])
    assert config.models == ["baseline/majority"]
    with pytest.raises(RescueError, match="^--out is required$"):
        RunConfig(models=["baseline/majority"])
