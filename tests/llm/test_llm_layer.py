"""The task-free model layer: multimodal messages over real HTTP, media keyed by content, sessions, and a
researcher's own Python model evaluated by the runner without any server."""

from __future__ import annotations

import asyncio
import base64
import json

from _engine_support import until_in_flight

from rescue.llm import (
    ChatAnswer,
    ChatRequest,
    ImagePart,
    Message,
    Model,
    ModelBase,
    ModelSession,
    TextPart,
    VideoPart,
    resolve_model,
)
from rescue.testing.openai_server import Reply, serve

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
MP4 = b"\x00\x00\x00\x18ftypmp42" + b"\x01" * 32


def _ask(session: ModelSession, model, request: ChatRequest) -> ChatAnswer:
    async def go():
        try:
            return await model.complete(request)
        finally:
            await session.aclose()

    return asyncio.run(go())


def test_image_and_video_parts_go_out_as_data_urls(tmp_path):
    image = tmp_path / "frame.png"
    image.write_bytes(PNG)
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(MP4)
    request = ChatRequest([Message("system", "Describe."), Message("user", [
        TextPart("What happens?"), ImagePart.from_file(image, detail="low"), VideoPart.from_file(clip)])],
        max_tokens=30)
    with serve(Reply.text("two people talk")) as server:
        session = ModelSession(cache=tmp_path / "cache.sqlite", backoff_base=0.01)
        answer = _ask(session, session.wrap(resolve_model("vl-model", base_url=server.base_url)), request)
        [body] = server.bodies
    assert answer.status == "ok" and answer.text == "two people talk"
    assert body["messages"][0] == {"role": "system", "content": "Describe."}
    text, picture, video = body["messages"][1]["content"]
    assert text == {"type": "text", "text": "What happens?"}
    assert picture["type"] == "image_url" and picture["image_url"]["detail"] == "low"
    assert picture["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert video == {"type": "video_url", "video_url": {"url": "data:video/mp4;base64," + base64.b64encode(MP4).decode()}}


def test_a_cached_multimodal_answer_is_found_by_content_not_path(tmp_path):
    first, second = tmp_path / "a.png", tmp_path / "copy" / "b.png"
    second.parent.mkdir()
    first.write_bytes(PNG)
    second.write_bytes(PNG)

    def request(path):
        return ChatRequest([Message("user", [TextPart("Who speaks?"), ImagePart.from_file(path)])], max_tokens=10)

    with serve(Reply.text("the mother")) as server:
        for path in (first, second):
            session = ModelSession(cache=tmp_path / "cache.sqlite")
            answer = _ask(session, session.wrap(resolve_model("vl-model", base_url=server.base_url)), request(path))
            assert answer.text == "the mother"
        assert server.request_count == 1  # the copy at another path was answered from the cache
    stored = json.loads(__import__("sqlite3").connect(tmp_path / "cache.sqlite")
                        .execute("SELECT request FROM answers").fetchone()[0])
    part = stored["messages"][0]["content"][1]
    assert part["type"] == "image" and len(part["sha256"]) == 64 and "url" not in part  # no bytes, no path


class EchoModel(ModelBase):
    """A researcher's own model: plain Python, no server (it answers ITP with 'no' for every instance)."""

    name = "my/echo"

    def __init__(self):
        self.seen: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatAnswer:
        self.seen.append(request)
        prompt = request.messages[-1]["content"]
        ids = [line.split('"')[3] for line in prompt.splitlines() if line.strip().startswith('{"id"')]
        return ChatAnswer(json.dumps({"predictions": [{"id": i, "answer": "no"} for i in ids]}))


def test_the_runner_evaluates_a_python_model_without_http(tmp_path):
    from rescue.engine.runner import RunConfig, run

    model = EchoModel()
    assert isinstance(model, Model)
    outcome = run(RunConfig(out=str(tmp_path / "run"), tasks=["itp"], quiet=True, bertscore=False, limit_samples=1),
                  models=[model])
    assert outcome.complete
    assert set(outcome.results["models"]) == {"my/echo"}
    scores = outcome.results["models"]["my/echo"]["itp"]["all"]
    assert scores["instances"] == len(model.seen) > 0
    # The model saw messages and settings only: no task, no batch.
    assert all(not hasattr(r, "task") and not hasattr(r, "batch") for r in model.seen)
    assert {r.tag for r in model.seen} == {"itp"}


def test_session_counts_cost_and_closes_what_it_wrapped(tmp_path):
    prices = tmp_path / "prices.toml"
    prices.write_text('["priced"]\ninput = 1000000\noutput = 0\n')
    usage = {"prompt_tokens": 3, "completion_tokens": 1}
    with serve(Reply(content="ok", usage=usage)) as server:
        session = ModelSession(prices=prices, max_cost=5.0)
        model = session.wrap(resolve_model("priced", base_url=server.base_url))
        answers = []

        async def go():
            for n in range(4):
                answers.append(await model.complete(ChatRequest([Message("user", f"q{n}")], max_tokens=5)))
            await session.aclose()

        asyncio.run(go())
        assert server.request_count == 2  # $3 each: the budget of $5 stops the third request
    assert session.spent == 6.0
    assert [a.status for a in answers] == ["ok", "ok", "request_error", "request_error"]
    assert session.models == []


def test_a_model_missing_part_of_the_protocol_is_refused_before_any_work(tmp_path):
    import pytest

    from rescue.engine.runner import RunConfig, Runner

    class Bare:
        name = "bare"

        async def complete(self, request):
            return ChatAnswer("{}")

    with pytest.raises(TypeError, match="lacks cache_identity, max_concurrency, cache_settings, aclose.*ModelBase"):
        Runner(RunConfig(out=str(tmp_path / "run"), tasks=["itp"]), models=[Bare()])
    assert not (tmp_path / "run").exists()


def test_a_python_model_that_raises_fails_its_request_not_the_session(tmp_path):
    class Flaky(ModelBase):
        name = "flaky"

        async def complete(self, request):
            if "boom" in request.messages[0]["content"]:
                raise RuntimeError("CUDA out of memory")
            if "text" in request.messages[0]["content"]:
                return "not an answer object"
            return ChatAnswer("fine")

    session = ModelSession()
    model = session.wrap(Flaky())

    async def go():
        return [await model.complete(ChatRequest([{"role": "user", "content": c}], max_tokens=5))
                for c in ("boom", "text", "ok")]

    boom, text, ok = asyncio.run(go())
    assert boom.status == "request_error" and boom.error == "model_error: RuntimeError: CUDA out of memory"
    assert text.status == "request_error" and "returned a str" in text.error
    assert ok.status == "ok" and ok.text == "fine"


def test_requests_in_flight_each_have_a_connection_and_reuse_it(tmp_path):
    # One single-connection client per request in flight (rescue.llm._client): the limiter's slots, no more
    # connections than that, and each kept alive for the requests after it.
    requests = [ChatRequest([Message("user", f"question {n}")], max_tokens=5) for n in range(24)]

    async def go(session, model):
        try:
            return await asyncio.gather(*(model.complete(r) for r in requests))
        finally:
            await session.aclose()

    async def four_at_once(body):  # four meet however slowly a loaded machine sends them (0.05 s left it to chance)
        await until_in_flight(server, 4)
        return Reply.text("yes")

    with serve(four_at_once, latency=0.05) as server:
        session = ModelSession(cache=tmp_path / "cache.sqlite", concurrency=4)
        answers = asyncio.run(go(session, session.wrap(resolve_model("m", base_url=server.base_url))))
        peers = [r.peer for r in server.requests]
        in_flight = server.max_in_flight
    assert [a.text for a in answers] == ["yes"] * len(requests)
    assert in_flight == 4
    assert len(set(peers)) == 4 and len(peers) == len(requests)
