"""Speech to text through the same layer as chat: an OpenAI-compatible ``POST {base_url}/audio/transcriptions``
(OpenAI, Groq, vLLM's Whisper serving, speaches / faster-whisper-server) as a :class:`~rescue.llm.types.Model`,
so a :class:`~rescue.llm.session.ModelSession` gives it the response cache (the audio keyed by content), retries,
the limiter, the failure and cost budgets exactly as it gives them to chat models.

A request is one :class:`~rescue.llm.types.AudioPart` (a WAV); the answer's text is the server's
``verbose_json`` (segments, and words with ``timestamp_granularities[]=word``; diarizing servers add
``speaker``), checked to be that shape before it is cached. ``local/faster-whisper`` runs faster-whisper
in-process on weights on disk (the ``transcribe`` extra).
"""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

from rescue.llm import secrets
from rescue.llm.client import GenerationSettings, MalformedAnswer, OpenAIModel, TransientError
from rescue.llm.providers import CredentialError, resolve_endpoint
from rescue.llm.types import AudioPart, ChatAnswer, ChatRequest, Message, ModelBase, Usage

LOCAL_WHISPER = "local/faster-whisper"
GRANULARITIES = ("word", "segment")


def audio_of(request: ChatRequest) -> AudioPart:
    """The audio part of a transcription request (ValueError when it holds none)."""
    for message in request.messages:
        content = message.content if isinstance(message, Message) else message.get("content")
        for part in content if isinstance(content, (list, tuple)) else []:
            if isinstance(part, AudioPart):
                return part
    raise ValueError("a transcription request holds one AudioPart")


def transcription_request(audio: bytes, *, ids: tuple[str, ...] = ()) -> ChatRequest:
    """The request that transcribes ``audio`` (WAV bytes)."""
    return ChatRequest([Message("user", [AudioPart(audio, "audio/wav")])], max_tokens=0, purpose="transcribe",
                       tag="transcribe", ids=ids)


def read_transcription(text: str) -> dict[str, Any]:
    """A ``verbose_json`` answer as a dict with ``segments`` (a list of objects with numeric ``start`` and
    ``end``) and optionally ``words``; :class:`MalformedAnswer` for anything else."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise MalformedAnswer("the transcription is not JSON (ask for response_format=verbose_json)") from None
    if not isinstance(data, dict):
        raise MalformedAnswer(f"the transcription is a JSON {type(data).__name__}, not an object")
    for field in ("segments", "words"):
        items = data.get(field)
        if items is None:
            continue
        if not isinstance(items, list):
            raise MalformedAnswer(f"{field} is a {type(items).__name__}, not a list")
        for n, item in enumerate(items):
            if not isinstance(item, dict):
                raise MalformedAnswer(f"{field}[{n}] is not an object")
            for key in ("start", "end"):
                value = item.get(key)
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise MalformedAnswer(f"{field}[{n}].{key} is {value!r}, not seconds")
    if data.get("segments") is None:
        if not isinstance(data.get("text"), str):
            raise MalformedAnswer("the transcription has neither segments nor text")
        raise MalformedAnswer("the transcription has no segments (no timestamps): the server must answer "
                              "response_format=verbose_json")
    return data


class TranscriptionModel(OpenAIModel):
    """A transcription model behind an OpenAI-compatible ``/audio/transcriptions`` endpoint."""

    def __init__(self, endpoint: Any, *, language: str | None = None, timeout: float = 600.0,
                 name: str | None = None):
        super().__init__(endpoint, GenerationSettings(json_mode=False, timeout=timeout), name=name)
        self.language = language

    def cache_settings(self) -> dict[str, Any]:
        return {"model": self.endpoint.model_id, "task": "transcription", "response_format": "verbose_json",
                "timestamp_granularities": list(GRANULARITIES), "language": self.language}

    async def _complete_with(self, client: Any, request: ChatRequest) -> ChatAnswer:
        import httpx

        audio = audio_of(request)
        form: dict[str, Any] = {"model": self.endpoint.model_id, "response_format": "verbose_json",
                                "timestamp_granularities[]": list(GRANULARITIES)}
        if self.language:
            form["language"] = self.language
        try:
            async with asyncio.timeout(self.settings.timeout):
                response = await client.post("audio/transcriptions", data=form,
                                             files={"file": ("audio.wav", audio.data, audio.mime)})
        except (TimeoutError, httpx.HTTPError) as exc:
            return self._transport_failure(exc)
        raw = response.content
        if len(raw) > self.settings.max_answer_bytes:
            return self._too_large(len(raw))
        if response.status_code != 200:
            return self._status_error(response.status_code, raw, response.headers)
        text = raw.decode("utf-8", errors="replace")
        try:
            data = read_transcription(text)
        except MalformedAnswer as exc:
            if not text.strip():
                raise TransientError("empty_answer", "the transcription is empty") from None
            return self._malformed(exc)
        seconds = data.get("duration")
        usage = Usage(audio_seconds=float(seconds) if isinstance(seconds, (int, float)) else wav_seconds(audio.data))
        return ChatAnswer(secrets.scrub(json.dumps(data, ensure_ascii=False)), "ok", "", usage, {})


def wav_seconds(data: bytes) -> float:
    """Seconds of WAV bytes (0 when they are not a WAV)."""
    import wave

    try:
        with wave.open(io.BytesIO(data)) as reader:
            return float(reader.getnframes()) / float(reader.getframerate())
    except (wave.Error, EOFError):
        return 0.0


class LocalWhisper(ModelBase):
    """``local/faster-whisper``: faster-whisper (CTranslate2) on weights on disk, in this process, one chunk at a
    time; answers in the same ``verbose_json`` shape as a server, so everything after it is the same."""

    max_concurrency = 1

    def __init__(self, weights: str, *, language: str | None = None):
        self.name = LOCAL_WHISPER
        self.cache_identity = LOCAL_WHISPER
        self.weights = weights
        self.language = language
        self._model: Any = None

    def cache_settings(self) -> dict[str, Any]:
        return {"model": self.weights, "task": "transcription", "language": self.language}

    def _transcribe(self, data: bytes) -> str:
        if self._model is None:
            from faster_whisper import WhisperModel

            self._model = WhisperModel(self.weights, device="auto", compute_type="default")
        pieces, info = self._model.transcribe(io.BytesIO(data), language=self.language, word_timestamps=True)
        segments, words = [], []
        for piece in pieces:
            segments.append({"start": round(piece.start, 3), "end": round(piece.end, 3), "text": piece.text.strip()})
            words += [{"word": w.word.strip(), "start": round(w.start, 3), "end": round(w.end, 3)}
                      for w in piece.words or []]
        return json.dumps({"task": "transcribe", "language": info.language, "duration": info.duration,
                           "text": " ".join(s["text"] for s in segments), "segments": segments, "words": words})

    async def complete(self, request: ChatRequest) -> ChatAnswer:
        data = audio_of(request).data
        text = await asyncio.to_thread(self._transcribe, data)
        return ChatAnswer(text, "ok", "", Usage(audio_seconds=wav_seconds(data)), {})


def resolve_transcriber(spec: str, *, weights: str | None = None, base_url: str | None = None,
                        api_key_env: str | None = None, language: str | None = None, timeout: float = 600.0,
                        need_key: bool = True) -> ModelBase | TranscriptionModel:
    """The transcription model ``--transcribe SPEC`` names: a preset (``openai/whisper-1``,
    ``groq/whisper-large-v3``), any id with ``base_url``, or ``local/faster-whisper`` with ``weights``."""
    if spec == LOCAL_WHISPER:
        if not weights:
            raise CredentialError(f"--transcribe {LOCAL_WHISPER}: give the weights' folder with --transcribe-model PATH")
        try:
            import faster_whisper  # noqa: F401
        except ImportError:
            raise CredentialError(f"--transcribe {LOCAL_WHISPER}: faster-whisper is not installed "
                                  "(pip install 'rescue-bench[transcribe]')") from None
        return LocalWhisper(weights, language=language)
    endpoint = resolve_endpoint(spec, base_url=base_url, api_key_env=api_key_env, need_key=need_key)
    return TranscriptionModel(endpoint, language=language, timeout=timeout)
