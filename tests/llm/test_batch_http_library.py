"""rescue's files and batches routes (rescue.llm._batch_http, over httpx) against the openai package's own client
(issue 47 item 3): the layer is kept because it is faster on a user's path (benchmarks/README.md); this holds it
equal to the library on the same scripted server: what is uploaded, the batch created and its status, the pages
listed and the output downloaded."""

from __future__ import annotations

import asyncio
import json

import pytest

from rescue.llm import resolve_model
from rescue.llm._batch_http import BatchEndpoint
from rescue.testing.openai_server import serve

openai = pytest.importorskip("openai")

LINES = b"".join(json.dumps({"custom_id": f"r{k}", "method": "POST", "url": "/v1/chat/completions",
                             "body": {"model": "m", "messages": [{"role": "user", "content": f"question {k} é"}]}},
                            ensure_ascii=False).encode() + b"\n" for k in range(5))


async def _ours(base_url: str) -> dict[str, object]:
    model = resolve_model("m", base_url=base_url, api_key_env="RESCUE_TEST_KEY")
    endpoint = BatchEndpoint(model)
    try:
        file_id = await endpoint.upload(LINES, "requests.jsonl")
        created = await endpoint.create(file_id, {"run": "ours"})
        batch = created
        while batch.status != "completed":
            batch = await endpoint.status(created.id)
        content = b"".join([chunk async for chunk in endpoint.content(str(batch.output_file_id))])
        uploaded = b"".join([chunk async for chunk in endpoint.content(file_id)])
        listed = await endpoint.page("batches", None)
        return {"uploaded": uploaded, "created": (created.status, created.input_file_id, created.metadata), "done": batch.request_counts and
                batch.request_counts.model_dump(), "content": content, "listed": [b["id"] for b in listed.data]}
    finally:
        await endpoint.aclose()
        await model.aclose()


async def _library(base_url: str) -> dict[str, object]:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="key", max_retries=0)
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
        counts = batch.request_counts
        return {"uploaded": uploaded, "created": (created.status, created.input_file_id, created.metadata),
                "done": counts and {"total": counts.total, "completed": counts.completed, "failed": counts.failed},
                "content": content, "listed": [b.id for b in listed.data]}
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
    monkeypatch.setenv("RESCUE_TEST_KEY", "key")
    with serve("yes") as server:
        ours = asyncio.run(_ours(server.base_url))
        library = asyncio.run(_library(server.base_url))
    assert ours["uploaded"] == library["uploaded"] == LINES  # the file the server holds: the bytes given
    assert ours["created"][0] == library["created"][0] and ours["done"] == library["done"]
    assert ours["created"][2] == {"run": "ours"} and library["created"][2] == {"run": "library"}
    assert _without_ids(ours["content"]) == _without_ids(library["content"])  # type: ignore[arg-type]
    assert ours["listed"][-1] == library["listed"][-1] and len(library["listed"]) == 2  # both batches, newest first
