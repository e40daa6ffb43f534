"""Keys in endpoint URLs and encoded keys (issue #22.3): a key in ``--base-url`` (user info, query) is a secret
like any other, never written to results.json, run.log, predictions, the cache or the terminal; the base64 and
percent-encoded forms of every key are masked; a key too short to mask safely is refused for masking with a
warning and never corrupts answers.

Every run goes through the real CLI and the real scripted HTTP server.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest
from _cli import invoke_main
from _engine_support import itp_instances, oracle_answers, oracle_script

from rescue.llm import _secrets as secrets
from rescue.testing.openai_server import Reply, serve

KEY = "sk-url-Qw3rTy7uIo9pAs2dFg4hJk6lZx8c"
OTHER = "sk-env-Mn5bVc7xZl9kJh1gFd3sAp0oIu2y"  # OPENAI_API_KEY: the Bearer key


def _forms(key: str) -> list[str]:
    """What must never be written: the key, its 8-character runs, base64 of user:KEY at every alignment."""
    forms = [key[i : i + 8] for i in range(len(key) - 7)]
    for user in ("u", "us", "use", "user"):
        encoded = base64.b64encode(f"{user}:{key}".encode()).decode()
        forms += [encoded, encoded.replace("+", "-").replace("/", "_")]
    forms.append(base64.b64encode(key.encode()).decode())
    forms.append(quote(key, safe=""))
    return forms


def _leaks(text: str, key: str = KEY) -> list[str]:
    return [f for f in _forms(key) if f in text]


def _everything_written(folder, result) -> str:
    texts = [result.output]
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(texts)


def _run(tmp_path, url, *extra, env=None):
    return invoke_main(["run", "--out", str(tmp_path / "run"), "--model", "m", "--base-url", url, "--tasks", "itp",
                        "--limit-samples", "1", "--no-bertscore", "--max-retries", "0", *extra],
                       env={"OPENAI_API_KEY": OTHER, **(env or {})})


def _with_userinfo(base_url: str, userinfo: str) -> str:
    return base_url.replace("http://", f"http://{userinfo}@")


URLS = {
    "userinfo_password": lambda u: _with_userinfo(u, f"user:{KEY}"),
    "userinfo_user_only": lambda u: _with_userinfo(u, KEY),
    "query_api_key": lambda u: f"{u}?api_key={KEY}",
    "query_key_and_version": lambda u: f"{u}?api-version=2024-02-01&key={KEY}",
    "query_token_percent_encoded": lambda u: f"{u}?access_token={quote(KEY + '/+=', safe='')}",
}


@pytest.mark.parametrize("kind", list(URLS))
def test_a_key_in_the_endpoint_url_is_never_written(tmp_path, kind):
    instances = itp_instances(1)
    with serve(oracle_script(oracle_answers("itp", instances))) as server:
        url = URLS[kind](server.base_url)
        result = _run(tmp_path, url)
        again = _run(tmp_path, url)  # resuming compares the stored (redacted) URL with the given one
    assert result.exit_code in (0, 3), result.output
    assert again.exit_code in (0, 3) and "another configuration" not in again.output, again.output
    written = _everything_written(tmp_path, result) + again.output
    secret = KEY + "/+=" if kind.endswith("percent_encoded") else KEY
    assert not _leaks(written, secret), _leaks(written, secret)
    stored = json.loads((tmp_path / "run" / "results.json").read_text())["config"]["base_url"]
    assert "***" in stored and "127.0.0.1" in stored


def test_a_key_in_the_judge_url_is_never_written(tmp_path):
    with serve(Reply.json({"emotion_score": 4})) as server:
        result = invoke_main(["run", "--out", str(tmp_path / "run"), "--model", "baseline/majority", "--tasks", "er",
                              "--limit-samples", "1", "--no-bertscore", "--judge", "j",
                              "--judge-base-url", _with_userinfo(server.base_url, f"judge:{KEY}")],
                             env={"OPENAI_API_KEY": OTHER})
    assert result.exit_code == 0, result.output
    assert not _leaks(_everything_written(tmp_path, result))
    assert json.loads((tmp_path / "run" / "results.json").read_text())["config"]["judge_base_url"].startswith(
        "http://***@127.0.0.1")


ECHOES = {
    # The case, then alignments and encodings the fix was not written against.
    "basic_user_key": lambda k: "Authorization: Basic " + base64.b64encode(f"user:{k}".encode()).decode(),
    "basic_one_char_user": lambda k: "Basic " + base64.b64encode(f"u:{k}".encode()).decode(),
    "basic_two_char_user": lambda k: "Basic " + base64.b64encode(f"us:{k}".encode()).decode(),
    "bare_base64": lambda k: base64.b64encode(k.encode()).decode(),
    "urlsafe_base64": lambda k: base64.urlsafe_b64encode(f"user:{k}".encode()).decode(),
    "percent_encoded": lambda k: quote(k, safe=""),
}


@pytest.mark.parametrize("kind", list(ECHOES))
@pytest.mark.parametrize("where", ["answer", "error"])
def test_an_endpoint_echoing_an_encoded_key_is_masked(tmp_path, kind, where):
    echoed = ECHOES[kind](OTHER)
    reply = (Reply.text(f'{{"answer": "yes", "note": "{echoed}"}}') if where == "answer"
             else Reply.error(400, f"bad credentials {echoed}"))
    with serve(reply) as server:
        result = _run(tmp_path, server.base_url)
    assert result.exit_code in (0, 3), result.output
    written = _everything_written(tmp_path, result)
    assert echoed not in written and not _leaks(written, OTHER)
    assert "***" in written


def test_base64_forms_are_masked_by_scrub_at_every_alignment():
    secrets.register(KEY)
    for prefix in ("", "a", "ab", "abc", "user:", "Bearer x:"):
        encoded = base64.b64encode(f"{prefix}{KEY}tail".encode()).decode()
        masked = secrets.scrub(f"header {encoded} end")
        assert encoded not in masked and "***" in masked, (prefix, masked)


@pytest.mark.parametrize("key", ["after", "row1x", "yes", "sk-1234567890ab"])  # 5, 5, 3 and 15 characters
def test_a_short_key_is_refused_for_masking_with_a_warning_and_answers_stay_whole(tmp_path, key):
    # "after" is in every ITP id (after_row7): masked, no answer would match its instance.
    instances = itp_instances(1)
    with serve(oracle_script(oracle_answers("itp", instances))) as server:
        result = invoke_main(["run", "--out", str(tmp_path / "run"), "--model", "m", "--base-url", server.base_url,
                              "--tasks", "itp", "--limit-samples", "1", "--no-bertscore"],
                             env={"OPENAI_API_KEY": key})
    assert result.exit_code == 0, result.output
    assert "is not masked" in result.output and key not in result.output.split("warning:")[1].split("\n")[0]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["models"]["m"]["itp"]["all"]["accuracy"] == 1.0
    assert "***" not in (tmp_path / "run" / "predictions.jsonl").read_text()


def test_a_key_of_sixteen_characters_is_masked():
    key = "sk-16-Aa1Bb2Cc3D"
    assert len(key) == 16 and secrets.register(key)
    assert secrets.scrub(f"echo {key}") == "echo ***"


def test_redact_url_keeps_what_is_not_secret():
    assert secrets.redact_url("https://api.example.com/v1?api-version=2024-02-01") == \
        "https://api.example.com/v1?api-version=2024-02-01"
    assert secrets.redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert secrets.redact_url(f"https://u:{KEY}@h.example/v1?sig=abc&x=1") == "https://***@h.example/v1?sig=***&x=1"
