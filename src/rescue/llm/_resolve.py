"""``resolve_model(spec)``: the :class:`~rescue.llm.Model` a model spec names.

- ``local/NAME``: the packaged llama.cpp model, its server started on first request and stopped by ``aclose``;
- ``PRESET/MODEL_ID`` (``openai/gpt-4o-mini``, ``deepseek/deepseek-chat`` ...) or any id with ``base_url``:
  an OpenAI-compatible endpoint.

The returned model is raw: :meth:`rescue.llm.ModelSession.wrap` gives it cache, retries and limits.
(``baseline/NAME`` specs are evaluation baselines: :func:`rescue.engine.resolve.resolve_model` knows them.)
"""

from __future__ import annotations

import contextlib
from typing import Any

from rescue.data.shapes import JsonObject  # open here: a model's cache settings, whose keys the model chooses
from rescue.llm._client import GenerationSettings, OpenAIModel
from rescue.llm._providers import Endpoint, resolve_endpoint
from rescue.llm._types import ChatAnswer, ChatRequest, Model


class LocalModel:
    """``local/NAME``: llama.cpp's OpenAI-compatible server on 127.0.0.1, started lazily, one per process."""

    # The server answers one request at a time: more in flight would only queue there and use up the
    # request timeout while waiting.
    max_concurrency = 1

    def __init__(self, name: str, settings: GenerationSettings):
        self.name = f"local/{name}"
        self.local_name = name
        self.settings = settings
        self._stack: contextlib.ExitStack | None = None
        self._client: OpenAIModel | None = None

    @property
    def cache_identity(self) -> str:
        # The server's port changes from run to run; the model does not.
        """The model's name: the server's port changes from run to run, the model does not."""
        return self.name

    def cache_settings(self) -> JsonObject:
        """The local model and its generation settings, as the cache key sees them."""
        return {"model": self.local_name, **self.settings.key_fields()}

    def start(self) -> OpenAIModel:
        """Start the server now (it is otherwise started by the first request)."""
        if self._client is None:
            from rescue.llm.local import local_server

            stack = contextlib.ExitStack()
            base_url = stack.enter_context(local_server(self.local_name))
            self._stack = stack
            endpoint = Endpoint(self.name, self.local_name, base_url, None, thinking="chat_template")
            self._client = OpenAIModel(endpoint, self.settings, name=self.name)
        return self._client

    async def complete(self, request: ChatRequest) -> ChatAnswer:
        """Answer through the local server, starting it first if needed."""
        return await self.start().complete(request)

    async def aclose(self) -> None:
        """Close the client and stop the server."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._stack is not None:
            self._stack.close()
            self._stack = None


def settings_with(settings: GenerationSettings | None, **overrides: Any) -> GenerationSettings:
    """``settings`` (or the defaults) with ``overrides`` applied."""
    base = settings or GenerationSettings()
    return GenerationSettings(**{**base.__dict__, **overrides}) if overrides else base


def resolve_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    settings: GenerationSettings | None = None,
    need_key: bool = True,
    **overrides: Any,
) -> Model:
    """The model ``spec`` names. ``overrides`` are :class:`GenerationSettings` fields (temperature, max_tokens,
    json_mode, extra_body, seed, timeout, max_answer_bytes) applied on top of ``settings``."""
    base = settings_with(settings, **overrides)
    prefix, _, rest = spec.partition("/")
    if prefix == "local":
        from rescue.llm.local import LOCAL_MODELS, LocalModelError

        name = rest or "smollm2"
        if name not in LOCAL_MODELS:
            known = ", ".join(f"local/{n}" for n in LOCAL_MODELS)
            raise LocalModelError(f"--model {spec!r}: unknown local model {name!r}; known: {known}")
        return LocalModel(name, base)
    endpoint = resolve_endpoint(spec, base_url=base_url, api_key_env=api_key_env, need_key=need_key)
    return OpenAIModel(endpoint, base)
