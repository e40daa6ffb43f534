"""``resolve_model(spec)``: the :class:`~rescue.engine.types.Model` a ``--model`` spec names.

- ``baseline/NAME``: an offline baseline (:mod:`rescue.engine.baselines`);
- ``local/NAME``: the packaged llama.cpp model, its server started on first use and stopped by ``aclose``;
- ``PRESET/MODEL_ID`` (``openai/gpt-4o-mini``, ``deepseek/deepseek-chat`` ...) or any id with ``base_url``:
  an OpenAI-compatible endpoint.

The returned model is raw: wrap it in :class:`~rescue.engine.reliable.ReliableModel` for cache and retries.
"""

from __future__ import annotations

import contextlib
from typing import Any

from rescue.engine.client import GenerationSettings, OpenAIModel
from rescue.engine.providers import Endpoint, resolve_endpoint
from rescue.engine.types import ChatAnswer, ChatRequest, Model
from rescue.tasks.base import Instance, Task


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
        return self.name

    def cache_settings(self) -> dict[str, Any]:
        return {"model": self.local_name, **self.settings.key_fields()}

    def _start(self) -> OpenAIModel:
        if self._client is None:
            from rescue.engine.local import local_server

            stack = contextlib.ExitStack()
            base_url = stack.enter_context(local_server(self.local_name))
            self._stack = stack
            endpoint = Endpoint(self.name, self.local_name, base_url, None)
            self._client = OpenAIModel(endpoint, self.settings, name=self.name)
        return self._client

    def prepare(self, task: Task, instances: list[Instance]) -> None:
        self._start()

    async def complete(self, request: ChatRequest) -> ChatAnswer:
        return await self._start().complete(request)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._stack is not None:
            self._stack.close()
            self._stack = None


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
    json_mode, extra_body, seed, timeout) applied on top of ``settings``."""
    base = settings or GenerationSettings()
    if overrides:
        fields = {**base.__dict__, **overrides}
        base = GenerationSettings(**fields)
    prefix, _, rest = spec.partition("/")
    if prefix == "baseline":
        from rescue.engine.baselines import make_baseline

        return make_baseline(spec, seed=base.seed or 0)
    if prefix == "local":
        return LocalModel(rest or "smollm2", base)
    endpoint = resolve_endpoint(spec, base_url=base_url, api_key_env=api_key_env, need_key=need_key)
    return OpenAIModel(endpoint, base)
