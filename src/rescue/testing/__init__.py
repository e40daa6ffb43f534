"""Test infrastructure that ships with the package: a scripted OpenAI-compatible server (chat and
audio transcription; tests, benchmarks)."""

from rescue.testing.openai_server import (
    LoggedRequest,
    Reply,
    Script,
    Server,
    constant,
    fail_first,
    message_text,
    request_key,
    sequence,
    serve,
    verbose_json,
)

__all__ = [
    "LoggedRequest",
    "Reply",
    "Script",
    "Server",
    "constant",
    "fail_first",
    "message_text",
    "request_key",
    "sequence",
    "serve",
    "verbose_json",
]
