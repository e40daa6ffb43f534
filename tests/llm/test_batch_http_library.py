"""rescue's files and batches routes (rescue.llm._batch_http) go through the openai package's own client (issue 47
item 3: the hand-written layer over httpx was under 2x faster at 10x, benchmarks/README.md). On the scripted
server: the layer reads what the bare client reads (upload, create, status, pages, the output downloaded);
rescue's own checks still refuse answers the library takes (a hostile id, a 400-digit id, a list) or fails on
with a raw exception; and what the layer sends is the endpoint's key and nothing the client takes from the
environment for OpenAI, once (no retry), following no redirect, through the proxy the environment names."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import openai
import pytest

from rescue.errors import BatchError, TransientError
from rescue.llm import resolve_model
from rescue.llm._batch_http import BatchEndpoint
from rescue.testing.openai_server import BatchFault, serve

KEY = "key-of-the-endpoint"
LINES = b"".join(json.dumps({"custom_id": f"r{k}", "method": "POST", "url": "/v1/chat/completions",
                             "body": {"model": "m", "messages": [{"role": "user", "content": f"question {k} é"}]}},
                            ensure_ascii=False).encode() + b"\n" for k in range(5))


def _endpoint(base_url: str, monkeypatch: pytest.MonkeyPatch) -> BatchEndpoint:
    monkeypatch.setenv("RESCUE_TEST_KEY", KEY)
    return BatchEndpoint(resolve_model("m", base_url=base_url, api_key_env="RESCUE_TEST_KEY"))  # type: ignore[arg-type]


async def _ours(endpoint: BatchEndpoint) -> dict[str, object]:
    try:
        file_id = await endpoint.upload(LINES, "requests.jsonl")
        created = await endpoint.create(file_id, {"run": "ours"})
        batch = created
        while batch.status != "completed":
            batch = await endpoint.status(created.id)
        content = b"".join([chunk async for chunk in endpoint.content(str(batch.output_file_id))])
        uploaded = b"".join([chunk async for chunk in endpoint.content(file_id)])
        listed = await endpoint.page("batches", None)
        files = await endpoint.page("files", None)
        return {"uploaded": uploaded, "created": (created.status, created.input_file_id, created.metadata),
                "done": batch.request_counts and batch.request_counts.model_dump(), "content": content,
                "listed": [b["id"] for b in listed.data], "files": [f["id"] for f in files.data]}
    finally:
        await endpoint.aclose()


async def _library(base_url: str) -> dict[str, object]:
    client = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    try:
        upload = await client.files.create(file=("requests.jsonl", LINES, "application/jsonl"), purpose="batch")
        created = await client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                              completion_window="24h", metadata={"run": "library"})
        batch = created
        while batch.status != "completed":
            batch = await client.batches.retrieve(created.id)
        content = (await client.files.content(str(batch.output_file_id))).content
        uploaded = (await client.files.content(upload.id)).content
        listed = await client.batches.list(limit=100)
        files = await client.files.list(purpose="batch", limit=100)
        counts = batch.request_counts
        return {"uploaded": uploaded, "created": (created.status, created.input_file_id, created.metadata),
                "done": counts and {"total": counts.total, "completed": counts.completed, "failed": counts.failed},
                "content": content, "listed": [b.id for b in listed.data], "files": [f.id for f in files.data]}
    finally:
        await client.close()


def _without_ids(content: bytes) -> list[dict[str, object]]:
    """Output lines with the ids the server numbers per batch left out (each client made its own batch)."""
    lines = [json.loads(line) for line in content.splitlines()]
    for line in lines:
        line.pop("id", None)
        (line.get("response") or {}).get("body", {}).pop("id", None)
        (line.get("response") or {}).get("body", {}).pop("created", None)
    return lines


def test_the_layer_reads_what_the_openai_client_reads(monkeypatch):
    with serve("yes", api_key=KEY) as server:
        ours = asyncio.run(_ours(_endpoint(server.base_url, monkeypatch)))
        library = asyncio.run(_library(server.base_url))
    assert ours["uploaded"] == library["uploaded"] == LINES  # the file the server holds: the bytes given
    assert ours["created"][0] == library["created"][0] and ours["done"] == library["done"]  # type: ignore[index]
    assert ours["created"][2] == {"run": "ours"} and library["created"][2] == {"run": "library"}  # type: ignore[index]
    assert _without_ids(ours["content"]) == _without_ids(library["content"])  # type: ignore[arg-type]
    assert ours["listed"][-1] == library["listed"][-1] and len(library["listed"]) == 2  # type: ignore[index]
    assert ours["files"][-1] == library["files"][-1] and len(library["files"]) == 2  # type: ignore[index]  # uploads


# 200 answers of a status read: what the bare client does with each, and what rescue does.
TAKEN_BY_THE_LIBRARY = {
    "an id that is a path": b'{"id": "../../../etc/passwd", "object": "batch", "status": "completed"}',
    "an id of 400 digits": b'{"id": ' + b"9" * 400 + b', "object": "batch", "status": "completed"}',
    "a list": b"[]",
    "an output file id with a query": b'{"id": "b1", "status": "completed", "output_file_id": "f?purpose=all"}',
}
RAISED_RAW_BY_THE_LIBRARY = {
    "an id of 5,000 digits": b'{"id": ' + b"9" * 5000 + b', "status": "completed"}',
    "not JSON": b"<html>502 Bad Gateway</html>",
    "not UTF-8": b'{"id": "b\xff", "status": "completed"}',
    "nested 100,000 deep": b"[" * 100_000,
}


def _status_of(base_url: str, endpoint: BatchEndpoint | None) -> object:
    async def ask() -> object:
        if endpoint is not None:
            try:
                return await endpoint.status("batch_1")
            finally:
                await endpoint.aclose()
        client = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
        try:
            return await client.batches.retrieve("batch_1")
        finally:
            await client.close()

    return asyncio.run(ask())


@pytest.mark.parametrize("variant", [*TAKEN_BY_THE_LIBRARY, *RAISED_RAW_BY_THE_LIBRARY])
def test_rescue_refuses_a_status_the_library_takes_or_fails_on_raw(monkeypatch, variant):
    body = {**TAKEN_BY_THE_LIBRARY, **RAISED_RAW_BY_THE_LIBRARY}[variant]
    with serve("yes", api_key=KEY) as server:
        server.batch_behaviour.faults.extend([BatchFault("status", body=body, after=False, times=2)])
        if variant in TAKEN_BY_THE_LIBRARY:
            assert _status_of(server.base_url, None) is not None  # the library returns it as an answer
        else:
            with pytest.raises((ValueError, RecursionError)):  # no openai error: not what a caller catches
                _status_of(server.base_url, None)
        with pytest.raises(TransientError) as refused:  # rescue: an answer that is no batch (unreadable)
            _status_of(server.base_url, _endpoint(server.base_url, monkeypatch))
        assert refused.value.kind == "bad_response" and len(str(refused.value)) < 400
        assert [path for _, path in server.paths] == ["/v1/batches/batch_1"] * 2  # nothing else asked


def test_errors_map_to_rescues_and_nothing_is_retried(monkeypatch):
    cases = [(BatchFault("create", status=500, after=False), TransientError, "server_error"),
             (BatchFault("create", status=429, after=False), TransientError, "server_error"),
             (BatchFault("create", status=400, after=False), BatchError, "scripted fault of create"),
             (BatchFault("create", drop=True, after=False), TransientError, "connection")]
    for fault, error, says in cases:
        with serve("yes", api_key=KEY) as server:
            server.batch_behaviour.faults.append(fault)
            endpoint = _endpoint(server.base_url, monkeypatch)

            async def create(endpoint: BatchEndpoint = endpoint) -> None:
                try:
                    await endpoint.create("file-1", {"run": "r"})
                finally:
                    await endpoint.aclose()

            with pytest.raises(error) as raised:
                asyncio.run(create())
            assert says in (raised.value.kind if isinstance(raised.value, TransientError) else str(raised.value))
            assert server.paths == [("POST", "/v1/batches")], (fault, server.paths)  # sent once: never again


def test_the_layer_sends_the_endpoints_key_and_nothing_the_client_takes_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-key-not-for-this-endpoint")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-not-for-this-endpoint")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-not-for-this-endpoint")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "X-Team-Secret: s3cret\nAuthorization: Bearer sk-ambient")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens: a request there fails
    with serve("yes", api_key=KEY) as server:
        asyncio.run(_ours(_endpoint(server.base_url, monkeypatch)))
        ours = server.headers
        with pytest.raises(openai.AuthenticationError):  # the bare client, for contrast: it sent another key
            asyncio.run(_library(server.base_url))
        library = server.headers[len(ours):]
    assert ours and all(h["authorization"] == f"Bearer {KEY}" for h in ours)
    for headers in ours:
        assert not {"openai-organization", "openai-project", "x-team-secret"} & set(headers), headers
        assert headers.get("x-stainless-retry-count", "0") == "0"
    # What the client would have sent of its own accord: the environment's key, organization and headers.
    assert library[0]["authorization"] == "Bearer sk-ambient" and "x-team-secret" in library[0]
    assert library[0]["openai-organization"] == "org-not-for-this-endpoint"


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every request with a redirect to ``target`` (or, as a proxy, 502) and records it."""

    seen: list[tuple[str, dict[str, str]]]
    target = ""

    def _answer(self) -> None:
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        self.send_response(307 if self.target else 502)
        if self.target:
            self.send_header("Location", self.target + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _recorder(target: str = "") -> Iterator[tuple[str, list[tuple[str, dict[str, str]]]]]:
    seen: list[tuple[str, dict[str, str]]] = []
    handler = type("Handler", (_Recorder,), {"seen": seen, "target": target})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_no_redirect_is_followed(monkeypatch):
    with serve("yes", api_key=KEY) as server, _recorder(server.base_url.removesuffix("/v1")) as (url, seen):
        endpoint = _endpoint(url + "/v1", monkeypatch)

        async def ask() -> None:
            try:
                await endpoint.status("batch_1")
            finally:
                await endpoint.aclose()

        with pytest.raises(BatchError, match="HTTP 307"):
            asyncio.run(ask())
        assert [path for path, _ in seen] == ["/v1/batches/batch_1"] and server.paths == []  # the key went nowhere else


def test_the_proxy_is_the_environments_and_no_proxy_is_kept(monkeypatch):
    with serve("yes", api_key=KEY) as server, _recorder() as (proxy, seen):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.setenv("NO_PROXY", "")
        monkeypatch.delenv("no_proxy", raising=False)
        endpoint = _endpoint(server.base_url, monkeypatch)

        async def ask(endpoint: BatchEndpoint) -> None:
            try:
                await endpoint.status("batch_1")
            finally:
                await endpoint.aclose()

        with pytest.raises(TransientError):  # the proxy answered 502
            asyncio.run(ask(endpoint))
        assert len(seen) == 1 and seen[0][0].endswith("/v1/batches/batch_1")  # through the proxy, as httpx goes
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with pytest.raises(BatchError, match="HTTP 404"):  # straight to the server: no such batch
            asyncio.run(ask(_endpoint(server.base_url, monkeypatch)))
        assert len(seen) == 1 and server.paths == [("GET", "/v1/batches/batch_1")]
