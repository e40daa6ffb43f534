"""Speech to text through the same layer as chat: an OpenAI-compatible ``POST {base_url}/audio/transcriptions``
(OpenAI, Groq, vLLM's Whisper serving, speaches / faster-whisper-server) as a :class:`~rescue.llm.Model`,
so a :class:`~rescue.llm.ModelSession` gives it the response cache (the audio keyed by content), retries,
the limiter, the failure and cost budgets exactly as it gives them to chat models.

A request is one :class:`~rescue.llm._types.AudioPart` (a WAV); the answer's text is the server's
``verbose_json`` (segments, and words with ``timestamp_granularities[]=word``; diarizing servers add
``speaker``), checked to be that shape before it is cached. ``local/faster-whisper`` runs faster-whisper
in-process on weights on disk (the ``transcribe`` extra).
"""

from __future__ import annotations

import asyncio
import io
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

# JsonObject is open here: a provider's verbose_json (only its segments and words checked), a model's settings
from rescue.data.shapes import JsonObject
from rescue.llm import _secrets as secrets
from rescue.llm._limits import DEFAULT_MAX_ANSWER_BYTES
from rescue.llm._client import GenerationSettings, MalformedAnswer, OpenAIModel, TransientError
from rescue.llm._providers import CredentialError, resolve_endpoint
from rescue.llm._types import AudioPart, ChatAnswer, ChatRequest, Message, ModelBase, Usage

if TYPE_CHECKING:
    import httpx

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


# Servers round a chunk's last timestamps up (Whisper's 20 ms steps, a decoder's window): this much past the
# audio's end is taken for its end; more is an answer about other audio.
PAST_END_TOLERANCE = 1.0


def read_transcription(text: str, seconds: float | None = None) -> JsonObject:
    """A ``verbose_json`` answer as a dict with ``segments`` (objects with finite ``start`` <= ``end`` from 0,
    within ``seconds`` of audio where given, ``text`` a string, ``speaker`` a label) and optionally ``words``;
    :class:`MalformedAnswer` naming the first item that is not."""
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
            _check_item(f"{field}[{n}]", item, seconds)
    if data.get("segments") is None:
        if not isinstance(data.get("text"), str):
            raise MalformedAnswer("the transcription has neither segments nor text")
        raise MalformedAnswer("the transcription has no segments (no timestamps): the server must answer "
                              "response_format=verbose_json")
    return data


def _check_item(where: str, item: Any, seconds: float | None) -> None:
    """A segment or word: its times seconds into the audio it answers, its text and speaker what they say."""
    if not isinstance(item, dict):
        raise MalformedAnswer(f"{where} is not an object")
    times = []
    for key in ("start", "end"):
        value = item.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise MalformedAnswer(f"{where}.{key} is {_shown(value)}, not seconds")
        if not math.isfinite(value) or value < 0:
            raise MalformedAnswer(f"{where}.{key} is {_shown(value)}: not a time in the audio")
        if seconds is not None and value > seconds + PAST_END_TOLERANCE:
            raise MalformedAnswer(f"{where}.{key} is {value:g} s, past the end of the {seconds:g} s of audio sent")
        times.append(float(value))
    if times[1] < times[0]:
        raise MalformedAnswer(f"{where} ends ({times[1]:g} s) before it starts ({times[0]:g} s)")
    for key in ("text", "word"):
        if item.get(key) is not None and not isinstance(item[key], str):
            raise MalformedAnswer(f"{where}.{key} is a {type(item[key]).__name__}, not text")
    speaker = item.get("speaker")
    if speaker is not None and (isinstance(speaker, bool) or not isinstance(speaker, (str, int))):
        raise MalformedAnswer(f"{where}.speaker is a {type(speaker).__name__}, not a label")


def _shown(value: Any) -> str:
    """A value for a message, cut short (an answer can hold anything)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class TranscriptionModel(OpenAIModel):
    """A transcription model behind an OpenAI-compatible ``/audio/transcriptions`` endpoint."""

    def __init__(self, endpoint: Any, *, language: str | None = None, timeout: float = 600.0,
                 name: str | None = None, max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES):
        super().__init__(endpoint, GenerationSettings(json_mode=False, timeout=timeout,
                                                      max_answer_bytes=max_answer_bytes), name=name)
        self.language = language

    def cache_settings(self) -> JsonObject:
        return {"model": self.endpoint.model_id, "task": "transcription", "response_format": "verbose_json",
                "timestamp_granularities": list(GRANULARITIES), "language": self.language}

    async def _complete_with(self, client: httpx.AsyncClient, request: ChatRequest) -> ChatAnswer:
        import httpx

        audio = audio_of(request)
        form: dict[str, Any] = {"model": self.endpoint.model_id, "response_format": "verbose_json",
                                "timestamp_granularities[]": list(GRANULARITIES)}
        if self.language:
            form["language"] = self.language
        try:
            async with asyncio.timeout(self.settings.timeout):
                async with client.stream("POST", "audio/transcriptions", data=form,
                                         files={"file": ("audio.wav", audio.data, audio.mime)}) as response:
                    status, headers = response.status_code, response.headers
                    raw = await self._read_upload_answer(response)
        except (TimeoutError, httpx.HTTPError) as exc:
            return self._transport_failure(exc)
        if isinstance(raw, ChatAnswer):
            return raw
        assert isinstance(raw, bytes)
        if status != 200:
            return self._status_error(status, raw, headers)
        text = raw.decode("utf-8", errors="replace")
        try:
            data = read_transcription(text, wav_seconds(audio.data) or None)
        except MalformedAnswer as exc:
            if not text.strip():
                raise TransientError("empty_answer", "the transcription is empty") from None
            return self._malformed(exc)
        seconds = data.get("duration")
        usage = Usage(audio_seconds=float(seconds) if isinstance(seconds, (int, float)) else wav_seconds(audio.data))
        return ChatAnswer(secrets.scrub(json.dumps(data, ensure_ascii=False)), "ok", "", usage, {})


    async def _read_upload_answer(self, response: httpx.Response) -> ChatAnswer | bytes:
        """The (httpx) response's body within --max-answer-bytes: never all of a huge body in memory."""
        limit = self.settings.max_answer_bytes
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return self._too_large(int(declared))
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                return self._too_large(size, more=True)
            chunks.append(chunk)
        return b"".join(chunks)


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

    def cache_settings(self) -> JsonObject:
        return {"model": self.weights, "task": "transcription", "language": self.language}

    def _transcribe(self, data: bytes) -> str:
        if self._model is None:
            from faster_whisper import WhisperModel

            self._model = WhisperModel(str(Path(self.weights).expanduser()) if self.weights.startswith("~")
                                       else self.weights, device="auto", compute_type="default")
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
        seconds = wav_seconds(data)
        try:
            read_transcription(text, seconds or None)  # the same checks as a server's answer, before it is cached
        except MalformedAnswer as exc:
            return OpenAIModel._malformed(exc)
        return ChatAnswer(text, "ok", "", Usage(audio_seconds=seconds), {})


def resolve_transcriber(spec: str, *, weights: str | None = None, base_url: str | None = None,
                        api_key_env: str | None = None, language: str | None = None, timeout: float = 600.0,
                        need_key: bool = True,
                        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES) -> ModelBase | TranscriptionModel:
    """The transcription model ``--transcribe SPEC`` names: a preset (``openai/whisper-1``,
    ``groq/whisper-large-v3``), any id with ``base_url``, or ``local/faster-whisper`` with ``weights``."""
    if spec == LOCAL_WHISPER:
        if not weights:
            raise CredentialError(f"--transcribe {LOCAL_WHISPER}: give the weights' folder with --transcribe-model PATH")
        if weights.startswith(("/", "./", "../", "~")) and not Path(weights).expanduser().is_dir():
            # A path that is not there would be taken for a model name and fetched from a hub.
            raise CredentialError(f"--transcribe-model {weights}: no such folder (the faster-whisper weights: "
                                  "model.bin, config.json, tokenizer.json, vocabulary.json)")
        try:
            import faster_whisper  # noqa: F401
        except ImportError:
            raise CredentialError(f"--transcribe {LOCAL_WHISPER}: faster-whisper is not installed "
                                  "(pip install 'rescue-bench[transcribe]')") from None
        return LocalWhisper(weights, language=language)
    endpoint = resolve_endpoint(spec, base_url=base_url, api_key_env=api_key_env, need_key=need_key)
    return TranscriptionModel(endpoint, language=language, timeout=timeout, max_answer_bytes=max_answer_bytes)
