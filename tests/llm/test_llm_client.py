"""The OpenAI-compatible client against real HTTP (the scripted test server): how each fault is classified."""

from __future__ import annotations

import asyncio

import pytest

from rescue.llm._client import FatalError, GenerationSettings, OpenAIModel, TransientError
from rescue.llm._providers import Endpoint
from rescue.llm._types import ChatRequest
from rescue.testing.openai_server import Reply, serve

KEY = "sk-secret-key-for-tests-123"
REQUEST = ChatRequest(messages=[{"role": "user", "content": "Answer in JSON."}], max_tokens=50)


def _model(server, **settings) -> OpenAIModel:
    endpoint = Endpoint("test/model", "test-model", server.base_url, "OPENAI_API_KEY", KEY)
    return OpenAIModel(endpoint, GenerationSettings(**settings))


def _complete(model: OpenAIModel, request: ChatRequest = REQUEST):
    async def go():
        try:
            return await model.complete(request)
        finally:
            await model.aclose()

    return asyncio.run(go())


def test_answer_usage_and_request_body():
    with serve(Reply.json({"ok": True}), api_key=KEY) as server:
        answer = _complete(_model(server, extra_body={"enable_thinking": False}))
        body = server.bodies[0]
    assert answer.status == "ok" and answer.text == '{"ok": true}'
    assert answer.usage.input_tokens > 0 and answer.usage.output_tokens > 0
    assert body["temperature"] == 0.0 and body["max_tokens"] == 50
    assert body["response_format"] == {"type": "json_object"}
    assert body["enable_thinking"] is False  # provider extras go to the top level of the body


def test_rate_limit_carries_retry_after():
    with serve(Reply.rate_limited(2.5)) as server:
        with pytest.raises(TransientError) as caught:
            _complete(_model(server))
    assert caught.value.kind == "rate_limit" and caught.value.retry_after == pytest.approx(2.5)


@pytest.mark.parametrize("reply", [Reply.server_error(500), Reply.server_error(503),
                                   Reply.raw_body(502, "<html>Bad gateway</html>")])
def test_server_errors_are_transient(reply):
    with serve(reply) as server:
        with pytest.raises(TransientError) as caught:
            _complete(_model(server))
    assert caught.value.kind == "server_error"


def test_timeout_is_transient():
    with serve(Reply.hang()) as server:
        with pytest.raises(TransientError) as caught:
            _complete(_model(server, timeout=0.3))
    assert caught.value.kind == "timeout"


@pytest.mark.parametrize("reply", [Reply.content_filter(), Reply.data_inspection_failed(), Reply.filtered("partial")])
def test_content_filter_is_a_refusal(reply):
    with serve(reply) as server:
        answer = _complete(_model(server))
    assert answer.status == "refused"
    assert "refused" in answer.error


def test_bad_key_is_fatal_and_never_echoes_the_key():
    with serve(Reply.json({}), api_key="the-right-key") as server:
        with pytest.raises(FatalError) as caught:
            _complete(_model(server))
    assert caught.value.kind == "http_401"
    assert KEY not in str(caught.value)


def test_endpoint_without_json_mode_is_asked_again_without_it():
    def script(body):
        if "response_format" in body:
            return Reply.error(400, "response_format is not supported by this model", type="invalid_request_error")
        return Reply.json({"ok": 1})

    with serve(script) as server:
        model = _model(server)

        async def go():
            with pytest.raises(TransientError):
                await model.complete(REQUEST)
            answer = await model.complete(REQUEST)
            await model.aclose()
            return answer

        answer = asyncio.run(go())
    assert answer.status == "ok"


def test_truncated_answer_is_returned_with_its_finish_reason():
    with serve(Reply.truncated('{"predictions": [{"id": "row1"}]}')) as server:
        answer = _complete(_model(server))
    assert answer.status == "ok" and answer.meta["finish_reason"] == "length"


def test_cut_off_response_body_is_transient():
    with serve(Reply.raw_body(200, '{"id": "x", "choices": [{"message": {"content": "{\\"a', content_type="application/json")) as server:
        with pytest.raises(TransientError) as caught:
            _complete(_model(server))
    assert caught.value.kind == "bad_response"


def test_deepseek_style_cache_usage_is_read():
    usage = {"prompt_tokens": 100, "completion_tokens": 10, "prompt_cache_hit_tokens": 60}
    with serve(Reply(content="{}", usage=usage)) as server:
        answer = _complete(_model(server))
    assert (answer.usage.input_tokens, answer.usage.output_tokens, answer.usage.cached_input_tokens) == (100, 10, 60)


def test_every_client_verifies_servers_with_one_shared_tls_context():
    # Loaded once per process (each client loading the certificates again cost 20-35 ms); sharing it must not
    # weaken it: servers' certificates and host names are still checked.
    import ssl

    from rescue.llm._providers import tls_context

    context = tls_context()
    assert context is tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # the certificates are loaded, not an empty store
    with serve(Reply(content="{}")) as server:
        models = [_model(server), _model(server)]
        clients = [model._take_client() for model in models]
        try:
            pools = [client._transport._pool for client in clients]
            assert all(pool._ssl_context is context for pool in pools)

            async def chat_sessions():  # the chat requests' aiohttp sessions, made in a running loop
                return [model._session() for model in models]

            sessions = asyncio.run(chat_sessions())
            assert all(session.connector._ssl is context for session in sessions)
        finally:
            for model in models:
                asyncio.run(model.aclose())


# --- the HTTP client (issue #34 item 3): what changed with aiohttp stays as it was ---------------------------


def test_the_environments_proxy_is_used_and_no_proxy_is_obeyed(monkeypatch):
    import socket

    with socket.socket() as closed:  # a port nobody listens on: a proxy there cannot be reached
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
    with serve(Reply.json({"ok": 1})) as server:
        for name in ("HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(name, dead)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        with pytest.raises(TransientError) as caught:
            _complete(_model(server))
        assert caught.value.kind == "connection" and server.request_count == 0
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.setenv(name, "127.0.0.1")
        assert _complete(_model(server)).status == "ok" and server.request_count == 1


def test_a_netrc_entry_for_the_host_does_not_clash_with_the_bearer_key(tmp_path, monkeypatch):
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login someone password other\n", encoding="utf-8")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    with serve(Reply.json({"ok": 1}), api_key=KEY) as server:
        assert _complete(_model(server)).status == "ok"
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_a_redirect_is_an_error_to_see_not_followed():
    reply = Reply.error(307, "moved")
    with serve(reply) as server:
        reply.headers = {"location": server.base_url + "/chat/completions"}
        answer = _complete(_model(server))
        assert server.request_count == 1
    assert answer.status == "request_error" and "HTTP 307" in answer.error


def test_the_base_urls_query_stays_after_the_path_and_user_info_leaves_the_url():
    from rescue.llm._client import _chat_url

    assert _chat_url("https://h.example/openai/v1?api-version=2024-02-01") == \
        "https://h.example/openai/v1/chat/completions?api-version=2024-02-01"
    assert _chat_url("http://user:secret@127.0.0.1:8000/v1/") == "http://127.0.0.1:8000/v1/chat/completions"


def test_a_model_asked_again_from_another_event_loop_still_answers():
    with serve(Reply.json({"ok": 1})) as server:
        model = _model(server)
        first = asyncio.run(model.complete(REQUEST))  # not closed: its session belongs to a loop now gone
        second = asyncio.run(model.complete(REQUEST))
        asyncio.run(model.aclose())
    assert first.status == second.status == "ok"


# --- the environment's proxy through the standard library (#47 item 1: no aiohttp.helpers) ---------------------

PROXY_NAMES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY",
               "no_proxy")


class _Proxy:
    """A forward HTTP proxy on 127.0.0.1 (a real server in a thread): it records the absolute URL of each request
    and the Proxy-Authorization it got, and passes the request on without its Proxy-* headers."""

    def __init__(self) -> None:
        import http.server
        import threading
        import urllib.request

        proxy = self
        self.seen: list[tuple[str, str | None]] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
                proxy.seen.append((self.path, self.headers.get("Proxy-Authorization")))
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k: v for k, v in self.headers.items()
                           if not k.lower().startswith("proxy-") and k.lower() not in ("host", "connection")}
                request = urllib.request.Request(self.path, data=body, headers=headers, method="POST")
                opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # straight to the server
                try:
                    with opener.open(request, timeout=10) as answer:
                        status, payload, kind = answer.status, answer.read(), answer.headers.get("Content-Type")
                except urllib.error.HTTPError as error:
                    status, payload, kind = error.code, error.read(), error.headers.get("Content-Type")
                self.send_response(status)
                self.send_header("Content-Type", kind or "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _Proxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _proxy_env(monkeypatch, **values: str) -> None:
    for name in PROXY_NAMES:
        monkeypatch.delenv(name, raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name.upper(), value)
        monkeypatch.setenv(name.lower(), value)


@pytest.mark.parametrize("variable", ["http_proxy", "all_proxy"])
def test_a_proxy_the_environment_names_carries_the_request(monkeypatch, variable):
    with serve(Reply.json({"ok": 1}), api_key=KEY) as server, _Proxy() as proxy:
        _proxy_env(monkeypatch, **{variable: proxy.url})
        assert _complete(_model(server)).status == "ok"
        assert proxy.seen == [(f"{server.base_url}/chat/completions", None)]
        assert server.request_count == 1 and server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_a_proxys_credentials_go_to_the_proxy_only(monkeypatch):
    import base64

    with serve(Reply.json({"ok": 1}), api_key=KEY) as server, _Proxy() as proxy:
        _proxy_env(monkeypatch, http_proxy=proxy.url.replace("http://", "http://someone:p%40ss@"))
        assert _complete(_model(server)).status == "ok"
        ((_, credentials),) = proxy.seen
        assert credentials == "Basic " + base64.b64encode(b"someone:p@ss").decode()
        assert "proxy-authorization" not in server.requests[0].headers  # the proxy took it; the server never saw it


@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "localhost,127.0.0.1", "*", "127.0.0.1:{port}", ".0.0.1"])
def test_no_proxy_is_obeyed(monkeypatch, no_proxy):
    with serve(Reply.json({"ok": 1}), api_key=KEY) as server, _Proxy() as proxy:
        port = server.base_url.split(":")[2].split("/")[0]
        _proxy_env(monkeypatch, http_proxy=proxy.url, no_proxy=no_proxy.format(port=port))
        assert _complete(_model(server)).status == "ok"
        assert proxy.seen == [] and server.request_count == 1


def test_a_no_proxy_entry_for_another_host_keeps_the_proxy(monkeypatch):
    with serve(Reply.json({"ok": 1}), api_key=KEY) as server, _Proxy() as proxy:
        _proxy_env(monkeypatch, http_proxy=proxy.url, no_proxy="example.com,10.0.0.1")
        assert _complete(_model(server)).status == "ok"
        assert len(proxy.seen) == 1
