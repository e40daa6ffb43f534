"""Where a model lives and how to authenticate: provider presets, ``--base-url`` endpoints and credentials.

A model spec is what the user types after ``--model``:

- ``deepseek/deepseek-chat``: a preset (``deepseek``) that knows its base URL and key variable, then the
  provider's own model id (which may itself contain slashes: ``openrouter/meta-llama/llama-3.1-8b-instruct``);
- any id together with ``--base-url URL``: an OpenAI-compatible endpoint (vLLM, SGLang, llama.cpp, a gateway),
  keyed by ``OPENAI_API_KEY`` or the variable named by ``--api-key-env``.

Keys come from the environment or a ``.env`` file in the working directory (never overriding a variable
that is already set). A key is never part of a message, a log line or a result: errors name the variable.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from rescue.data.shapes import JsonObject  # open here: a provider's extras for the request body, its own keys
from rescue.data.choices import THINKING_LEVELS as THINKING_LEVELS
from rescue.llm import _secrets as secrets
from rescue.errors import CredentialError as CredentialError, ThinkingError as ThinkingError


@dataclass(frozen=True)
class Provider:
    """A provider preset: base URL, the key's environment variable, request defaults and what it accepts."""

    name: str
    base_url: str
    key_env: str | None  # None: the endpoint needs no key (a local server)
    # Sent with every request to this provider unless the model's own settings say otherwise.
    extra_body: JsonObject = field(default_factory=dict)
    json_mode: bool = True  # whether response_format={"type": "json_object"} is accepted
    # How --thinking is said to this provider (a key of THINKING_STYLES); "" : it has no documented switch.
    thinking: str = ""
    # Why requests to this provider are streamed by default when it thinks ("": they are not).
    stream_when_thinking: str = ""
    # Whether it takes OpenAI-style batches (/files + /batches, rescue.llm._batch; --batch).
    batch: bool = False
    # Whether its chat API takes a "seed" (rescue run sends one by default where it does, and records it).
    seed: bool = True


DASHSCOPE_STREAM = ("Model Studio answers its thinking models (enable_thinking true, QwQ, DeepSeek-R1) only or best "
                    "as streams (\"Deep thinking\" page)")

PRESETS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", thinking="reasoning_effort", batch=True),
        # DeepSeek's own API chooses thinking by model: deepseek-reasoner thinks, deepseek-chat does not.
        # Not in DeepSeek's, Moonshot's or MiniMax's chat API reference: no seed is sent to them.
        Provider("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", seed=False),
        # DashScope's Qwen3 models think by default, which non-streaming calls reject; the paper's runs
        # disable it too (protocol 1.2, --disable-thinking).
        Provider(
            "dashscope",
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "DASHSCOPE_API_KEY",
            extra_body={"enable_thinking": False},
            thinking="enable_thinking",
            stream_when_thinking=DASHSCOPE_STREAM,
            batch=True,
        ),
        Provider("dashscope-intl", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY",
                 extra_body={"enable_thinking": False}, thinking="enable_thinking",
                 stream_when_thinking=DASHSCOPE_STREAM, batch=True),
        # Moonshot documents thinking={"type": "disabled"} for Kimi K2.5 (platform.moonshot.cn, "使用思考模型").
        Provider("kimi", "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY", thinking="thinking_type", seed=False),
        # MiniMax's OpenAI-compatible endpoint (the paper's MiniMax M2.5). JSON mode is not documented there:
        # the prompts ask for JSON and the parsers read it from plain text.
        Provider("minimax", "https://api.minimax.io/v1", "MINIMAX_API_KEY", json_mode=False, seed=False),
        Provider("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", thinking="openrouter"),
        Provider("together", "https://api.together.xyz/v1", "TOGETHER_API_KEY", thinking="reasoning_effort",
                 batch=True),
        Provider("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", thinking="reasoning_effort", batch=True),
        # Gemini's OpenAI-compatible endpoint takes batches too.
        Provider("gemini", "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY",
                 thinking="reasoning_effort", batch=True),
        Provider("ollama", "http://127.0.0.1:11434/v1", None, thinking="reasoning_effort"),
        Provider("vllm", "http://127.0.0.1:8000/v1", None, thinking="chat_template"),
        Provider("sglang", "http://127.0.0.1:30000/v1", None, thinking="chat_template"),
        Provider("llamacpp", "http://127.0.0.1:8080/v1", None, thinking="chat_template"),
    )
}

# Local servers accept any key; the SDK insists on a non-empty one.
PLACEHOLDER_KEY = "EMPTY"


@dataclass(frozen=True)
class Endpoint:
    """A resolved model: what to call and with which key. ``repr`` never shows the key."""

    spec: str  # as the user typed it; the model's name in results
    model_id: str  # what is sent as "model"
    base_url: str
    key_env: str | None
    api_key: str = field(repr=False, default=PLACEHOLDER_KEY)
    provider: str = ""
    extra_body: JsonObject = field(default_factory=dict)
    json_mode: bool = True
    thinking: str = ""  # the provider's thinking style (THINKING_STYLES); "": none known
    stream_when_thinking: str = ""  # why its thinking requests are streamed by default
    batch: bool = True  # takes OpenAI-style batches (a preset says; any --base-url endpoint is trusted to)
    seed: bool = True  # takes a "seed" (a preset says; any --base-url endpoint is trusted to: vLLM, SGLang ...)


# --thinking, one portable option, and what each provider style sends for it (merged into the body's extras).
# None: the provider cannot say that level; the run stops with a message naming the preset.
THINKING_STYLES: dict[str, dict[str, JsonObject | None]] = {
    # DashScope / Model Studio: hybrid models switch with enable_thinking (no effort levels).
    "enable_thinking": {"on": {"enable_thinking": True}, "off": {"enable_thinking": False},
                        "low": None, "medium": None, "high": None},
    # Moonshot (Kimi K2.5) and others of that form: thinking={"type": ...}.
    "thinking_type": {"on": {"thinking": {"type": "enabled"}}, "off": {"thinking": {"type": "disabled"}},
                      "low": None, "medium": None, "high": None},
    # OpenAI, Groq, Together, Ollama: reasoning_effort; "on" leaves the model's default effort.
    "reasoning_effort": {"on": {}, "off": {"reasoning_effort": "none"}, "low": {"reasoning_effort": "low"},
                         "medium": {"reasoning_effort": "medium"}, "high": {"reasoning_effort": "high"}},
    # OpenRouter's unified reasoning object.
    "openrouter": {"on": {"reasoning": {"enabled": True}}, "off": {"reasoning": {"enabled": False}},
                   "low": {"reasoning": {"effort": "low"}}, "medium": {"reasoning": {"effort": "medium"}},
                   "high": {"reasoning": {"effort": "high"}}},
    # vLLM / SGLang / llama.cpp serving hybrid models (Qwen3): the chat template's enable_thinking switch;
    # effort levels go as reasoning_effort (gpt-oss on vLLM).
    "chat_template": {"on": {"chat_template_kwargs": {"enable_thinking": True}},
                      "off": {"chat_template_kwargs": {"enable_thinking": False}},
                      "low": {"reasoning_effort": "low"}, "medium": {"reasoning_effort": "medium"},
                      "high": {"reasoning_effort": "high"}},
}


def thinking_extra(endpoint: Endpoint, level: str) -> JsonObject:
    """The body extras that ask ``endpoint`` for thinking ``level`` (on, off, low, medium, high)."""
    if level not in THINKING_LEVELS:
        raise ThinkingError(f"--thinking {level!r}: choose one of {', '.join(THINKING_LEVELS)}")
    style = endpoint.thinking
    if not style:
        where = f"the {endpoint.provider} preset" if endpoint.provider else "this endpoint"
        raise ThinkingError(f"--thinking {level} for {endpoint.spec!r}: {where} has no documented thinking switch "
                            "(choose a thinking or non-thinking model id, or send the provider's own switch with "
                            "--extra or --model-settings)")
    extra = THINKING_STYLES[style][level]
    if extra is None:
        allowed = [name for name, value in THINKING_STYLES[style].items() if value is not None]
        raise ThinkingError(f"--thinking {level} for {endpoint.spec!r}: the {endpoint.provider or style} preset "
                            f"takes only {', '.join(allowed)}")
    return dict(extra)


# Model ids known to think before they answer (with their provider's defaults), for --dry-run's budget warning.
THINKING_MODEL_PATTERNS = ("*deepseek-r1*", "*reasoner*", "*kimi-k2*", "*minimax-m2*", "*qwq*", "*thinking*",
                           "*/o1*", "*/o3*", "*/o4*", "*gpt-5*", "*gpt-oss*", "*glm-4.5*", "*glm-4.6*")


def known_to_think(spec: str, extra_body: JsonObject, thinking: str | None) -> bool:
    """Whether requests of ``spec`` with these extras will think: --thinking decides when given, else a
    disabling extra (enable_thinking false ...), else the model id."""
    import fnmatch

    if thinking is not None:
        return thinking != "off"
    if extra_body.get("enable_thinking") is True or extra_body.get("thinking", {}) == {"type": "enabled"}:
        return True
    if extra_body.get("enable_thinking") is False or extra_body.get("thinking") == {"type": "disabled"}:
        # DashScope's deepseek-r1 thinks whatever enable_thinking says.
        return fnmatch.fnmatch(spec.lower(), "*deepseek-r1*")
    return any(fnmatch.fnmatch(spec.lower(), pattern) for pattern in THINKING_MODEL_PATTERNS)


def load_dotenv_once() -> None:
    """Fill unset variables from ``./.env`` (the working directory), once per process."""
    global _DOTENV_LOADED
    if _DOTENV_LOADED:
        return
    _DOTENV_LOADED = True
    from dotenv import find_dotenv, load_dotenv

    path = find_dotenv(usecwd=True)
    if path:
        load_dotenv(path, override=False)


_DOTENV_LOADED = False


def normalize_base_url(url: str) -> str:
    """Trim whitespace and trailing slashes; an empty or scheme-less URL is an error naming the value."""
    cleaned = url.strip().rstrip("/")
    parsed = urlparse(cleaned)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise CredentialError(f"--base-url {url!r}: expected an http(s) URL such as http://127.0.0.1:8000/v1")
    return cleaned


# Hosts of this machine: an endpoint on one needs no key (a local server mostly checks none); PLACEHOLDER_KEY is sent
# where the key's variable is unset.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def _is_local(url: str) -> bool:
    host = urlparse(url).hostname or ""
    return host in LOCAL_HOSTS


def resolve_endpoint(
    spec: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    need_key: bool = True,
) -> Endpoint:
    """Turn a ``--model`` spec into an :class:`Endpoint`.

    ``need_key=False`` resolves without reading a key (``rescue rescore`` answers from the cache only).
    """
    spec = spec.strip()
    if not spec:
        raise CredentialError("--model: empty model name")
    prefix, _, rest = spec.partition("/")
    key_env: str | None
    if base_url:
        url = normalize_base_url(base_url)
        secrets.register_url(url)
        # An explicit endpoint takes the spec as the model id verbatim, unless it names a preset, whose
        # prefix is then dropped (``--model openai/gpt-4o --base-url <proxy>``).
        preset = PRESETS.get(prefix) if rest else None
        model_id = rest if preset else spec
        key_env = api_key_env or (preset.key_env if preset else None) or "OPENAI_API_KEY"
        provider = preset.name if preset else ""
        extra = dict(preset.extra_body) if preset else {}
        json_mode = preset.json_mode if preset else True
        key_optional = _is_local(url)
        # Any other OpenAI-compatible server is most often vLLM or SGLang.
        thinking = preset.thinking if preset else "chat_template"
        stream_reason = preset.stream_when_thinking if preset else ""
        batch = preset.batch if preset else True
        seed = preset.seed if preset else True
    else:
        preset = PRESETS.get(prefix)
        if preset is None or not rest:
            known = ", ".join(f"{name}/MODEL" for name in PRESETS)
            raise CredentialError(
                f"--model {spec!r}: give --base-url URL for an OpenAI-compatible endpoint, or use a provider "
                f"preset ({known}), 'baseline/NAME' or 'local/NAME'"
            )
        url = preset.base_url
        model_id = rest
        key_env = api_key_env or preset.key_env
        provider = preset.name
        extra = dict(preset.extra_body)
        json_mode = preset.json_mode
        key_optional = preset.key_env is None or _is_local(url)
        thinking, stream_reason, batch = preset.thinking, preset.stream_when_thinking, preset.batch
        seed = preset.seed
    api_key = PLACEHOLDER_KEY
    if need_key and key_env:
        load_dotenv_once()
        value = os.environ.get(key_env, "").strip()
        if value:
            api_key = value
        elif not key_optional:
            raise CredentialError(
                f"--model {spec!r}: no API key: set {key_env} in the environment or in ./.env"
                + ("" if api_key_env else " (or name another variable with --api-key-env)")
            )
    secrets.register(api_key)
    return Endpoint(spec, model_id, url, key_env, api_key, provider, extra, json_mode, thinking, stream_reason, batch,
                    seed)


@functools.cache
def tls_context() -> Any:
    """The certificates every HTTP client of this process verifies servers with (certifi, or SSL_CERT_FILE /
    SSL_CERT_DIR as they were when first asked), loaded once: each httpx client would load them again for itself
    otherwise (benchmarks/README.md), and a run makes a client per model and per connection."""
    import httpx

    return httpx.create_ssl_context()


def check_endpoint(endpoint: Endpoint, *, timeout: float = 15.0) -> None:
    """Ask the endpoint's ``/models`` with the key before any work that needs it: a refused key (401/403) or
    an endpoint nobody answers at raises :class:`CredentialError`; an endpoint without ``/models`` (404 and
    the like) passes, as there is nothing to ask."""
    import httpx

    headers = {} if endpoint.api_key == PLACEHOLDER_KEY else {"Authorization": f"Bearer {endpoint.api_key}"}
    where = f"--model {endpoint.spec!r} at {secrets.scrub(endpoint.base_url, [])}"
    try:
        status = httpx.get(f"{endpoint.base_url.rstrip('/')}/models", headers=headers, timeout=timeout,
                           verify=tls_context()).status_code
    except httpx.HTTPError as exc:
        raise CredentialError(f"{where}: the endpoint does not answer ({type(exc).__name__}: "
                              f"{secrets.scrub(str(exc), [endpoint.api_key])})") from None
    if status in (401, 403):
        source = f"the key in {endpoint.key_env}" if endpoint.key_env else "no key"
        raise CredentialError(f"{where}: the endpoint refuses {source} (HTTP {status} on /models)")


def redact(text: str, keys: list[str]) -> str:
    """``text`` with ``keys`` (and every key configured in this process) masked: :func:`rescue.llm.scrub`."""
    return secrets.scrub(text, keys)
