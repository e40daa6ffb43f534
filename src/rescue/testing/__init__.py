"""Test infrastructure that ships with the package: a scripted OpenAI-compatible server (tests, benchmarks)."""

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
]
