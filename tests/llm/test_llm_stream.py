"""Thinking models and streamed answers (issue #23 item 1), against the real scripted server: every fault class
of the non-streaming path on the streaming path too, reasoning kept apart from the answer and counted, and an
answer budget spent thinking as its own outcome, paid once."""

from __future__ import annotations

import pytest
from _engine_support import complete_all

from rescue.llm import ChatRequest, GenerationSettings, OpenAIModel, ResponseCache
from rescue.llm._providers import Endpoint
from rescue.llm._reliable import ReliableModel
from rescue.testing.openai_server import Reply, fail_first, serve

KEY = "sk-proj-Zq8vL2mN4pR6tX0yB3dF5hJ7kW9cE1gA"
BOTH = pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])


def _request(n: int = 0, max_tokens: int = 20) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": f"question {n}"}], max_tokens=max_tokens,
                       ids=(f"item{n}",))


def _reliable(server, tmp_path, *, stream: bool, timeout: float = 30.0, key: str = "EMPTY", store_reasoning=True,
              max_answer_bytes: int | None = None, **options) -> ReliableModel:
    endpoint = Endpoint("test/model", "test-model", server.base_url, None, key)
    extra = {} if max_answer_bytes is None else {"max_answer_bytes": max_answer_bytes}
    settings = GenerationSettings(timeout=timeout, stream=stream, store_reasoning=store_reasoning, **extra)
    options.setdefault("cache", ResponseCache(tmp_path / "cache.sqlite"))
    options.setdefault("backoff_base", 0.01)
    return ReliableModel(OpenAIModel(endpoint, settings), **options)


def _one(model: ReliableModel, request: ChatRequest | None = None):
    [answer] = complete_all(model, [request or _request()])
    return answer


# --- the stream itself ------------------------------------------------------------------------------------


def test_a_streamed_answer_is_assembled_with_usage_from_the_final_chunk(tmp_path):
    content = '{"predictions": [{"id": "a", "answer": "yes"}]}' * 3
    with serve(Reply.text(content)) as server:
        answer = _one(_reliable(server, tmp_path, stream=True))
        body = server.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert answer.status == "ok" and answer.text == content
    assert answer.usage.input_tokens > 0 and answer.usage.output_tokens == len(content) // 4
    assert answer.meta["finish_reason"] == "stop"


def test_without_stream_the_request_body_is_unchanged(tmp_path):
    with serve(Reply.text("{}")) as server:
        _one(_reliable(server, tmp_path, stream=False))
        assert "stream" not in server.bodies[0] and "stream_options" not in server.bodies[0]


def test_an_endpoint_that_ignores_stream_is_read_as_a_plain_completion(tmp_path):
    reply = Reply.text('{"a": 1}')
    reply.ignore_stream = True
    with serve(reply) as server:
        answer = _one(_reliable(server, tmp_path, stream=True))
    assert answer.status == "ok" and answer.text == '{"a": 1}'


# --- reasoning --------------------------------------------------------------------------------------------


@BOTH
@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_is_kept_apart_from_the_answer_and_counted(tmp_path, stream, field):
    thoughts = "The speaker sounds upset, so the therapist should respond. " * 4
    with serve(Reply.thinking('{"answer": "yes"}', thoughts, field=field)) as server:
        model = _reliable(server, tmp_path, stream=stream)
        answer = _one(model)
    assert answer.text == '{"answer": "yes"}'  # never the thoughts
    assert answer.meta["reasoning"] == thoughts
    assert answer.usage.reasoning_tokens == len(thoughts) // 4
    assert answer.usage.output_tokens >= answer.usage.reasoning_tokens
    [stats] = model.stats.values()
    assert stats.as_dict()["reasoning_tokens"] == answer.usage.reasoning_tokens


@BOTH
def test_no_store_reasoning_drops_the_text_but_counts_the_tokens(tmp_path, stream):
    with serve(Reply.thinking("{}", "secret thoughts " * 10)) as server:
        answer = _one(_reliable(server, tmp_path, stream=stream, store_reasoning=False))
    assert "reasoning" not in answer.meta
    assert answer.usage.reasoning_tokens > 0


def test_reasoning_tokens_are_priced_as_output():
    from rescue.llm import Price, Usage

    price = Price(input=1.0, output=10.0)
    thinking = Usage(input_tokens=1000, output_tokens=3000, reasoning_tokens=2500)
    assert price.cost(thinking) == pytest.approx((1000 * 1.0 + 3000 * 10.0) / 1e6)


def test_reasoning_counted_apart_from_completion_tokens_is_still_priced(tmp_path):
    # An endpoint that reports reasoning tokens beside (not inside) completion_tokens.
    reply = Reply.thinking("{}", "hmm")
    reply.usage = {"prompt_tokens": 10, "completion_tokens": 5, "completion_tokens_details": {"reasoning_tokens": 400}}
    with serve(reply) as server:
        answer = _one(_reliable(server, tmp_path, stream=False))
    assert answer.usage.output_tokens == 400 and answer.usage.reasoning_tokens == 400


# --- a budget spent thinking -------------------------------------------------------------------------------


@BOTH
def test_a_budget_spent_thinking_is_budget_exhausted_asked_once_and_paid_once(tmp_path, stream):
    with serve(Reply.budget_spent()) as server:
        model = _reliable(server, tmp_path, stream=stream, max_retries=5)
        answer = _one(model)
        assert server.request_count == 1  # not retried at the same budget
        # A rerun does not pay for it again: the outcome is recorded.
        again = _one(_reliable(server, tmp_path, stream=stream, cache=ResponseCache(tmp_path / "cache.sqlite")))
        assert server.request_count == 1
    assert answer.status == "budget_exhausted"
    assert answer.error.startswith("budget_exhausted:") and "finish_reason=length" in answer.error
    [stats] = model.stats.values()
    assert stats.requests == 1 and stats.retries == 0 and stats.failures == 1 and stats.budget_exhausted == 1
    assert stats.usage.output_tokens > 0  # what was spent counts in the cost
    assert again.status == "budget_exhausted"


@BOTH
def test_budget_retry_asks_once_more_with_the_budget_multiplied(tmp_path, stream):
    def script(body):
        return Reply.budget_spent() if body["max_tokens"] < 100 else Reply.thinking('{"ok": 1}', "long thoughts")

    with serve(script) as server:
        model = _reliable(server, tmp_path, stream=stream)
        first = _one(model, _request(max_tokens=40))
        bigger = ChatRequest(messages=_request().messages, max_tokens=40, budget_factor=3.0, ids=("item0",))
        second = _one(_reliable(server, tmp_path / "b", stream=stream), bigger)
        assert [b["max_tokens"] for b in server.bodies] == [40, 120]
    assert first.status == "budget_exhausted" and second.status == "ok"


@BOTH
def test_a_thinking_only_answer_is_a_failure_not_retried(tmp_path, stream):
    with serve(Reply.thinking(None, "I thought and then stopped.")) as server:
        answer = _one(_reliable(server, tmp_path, stream=stream, max_retries=3))
        assert server.request_count == 1
    assert answer.status == "request_error" and answer.meta["error_class"] == "thinking_only"


@BOTH
def test_an_empty_answer_without_thoughts_is_still_retried(tmp_path, stream):
    with serve(fail_first(1, Reply.text(""), Reply.text("{}"))) as server:
        answer = _one(_reliable(server, tmp_path, stream=stream))
        assert server.request_count == 2
    assert answer.status == "ok"


# --- every fault class, streamed --------------------------------------------------------------------------


@pytest.mark.parametrize("failure", [Reply.rate_limited(0.0), Reply.server_error(500), Reply.server_error(503)],
                         ids=["429", "500", "503"])
def test_429_and_5xx_on_a_streamed_request_are_retried(tmp_path, failure):
    with serve(fail_first(2, failure, Reply.text("{}"))) as server:
        model = _reliable(server, tmp_path, stream=True)
        answer = _one(model)
        assert server.request_count == 3
    assert answer.status == "ok"
    assert next(iter(model.stats.values())).retries == 2


@pytest.mark.parametrize("reset", [True, False], ids=["reset", "clean-close"])
def test_a_stream_cut_mid_answer_is_retried_never_taken_as_the_answer(tmp_path, reset):
    cut = Reply.text('{"predictions": ["a long answer that is cut in the middle"]}')
    cut.cut_after, cut.reset = 3, reset
    with serve(fail_first(1, cut, Reply.text("{}"))) as server:
        answer = _one(_reliable(server, tmp_path, stream=True))
        assert server.request_count == 2
    assert answer.status == "ok" and answer.text == "{}"


def test_a_stream_that_is_always_cut_fails_with_its_class(tmp_path):
    cut = Reply.text("x" * 100)
    cut.cut_after = 2
    with serve(cut) as server:
        answer = _one(_reliable(server, tmp_path, stream=True, max_retries=1))
        assert server.request_count == 2
    assert answer.status == "request_error" and answer.meta["error_class"] == "connection"


def test_a_malformed_chunk_is_retried(tmp_path):
    bad = Reply.text("{}")
    bad.bad_chunk = True
    with serve(fail_first(1, bad, Reply.text("{}"))) as server:
        answer = _one(_reliable(server, tmp_path, stream=True))
        assert server.request_count == 2
    assert answer.status == "ok"


def test_an_error_event_inside_the_stream_is_retried(tmp_path):
    broken = Reply.text("{}")
    broken.stream_error = "upstream overloaded"
    with serve(fail_first(1, broken, Reply.text("{}"))) as server:
        model = _reliable(server, tmp_path, stream=True)
        answer = _one(model)
        assert server.request_count == 2
    assert answer.status == "ok"


def test_a_content_filter_error_inside_the_stream_is_a_refusal(tmp_path):
    filtered = Reply.text("{}")
    filtered.stream_error = "Output data may contain inappropriate content."
    with serve(filtered) as server:
        answer = _one(_reliable(server, tmp_path, stream=True))
        assert server.request_count == 1
    assert answer.status == "refused"


def test_a_trickling_stream_is_bounded_as_a_whole_not_per_chunk(tmp_path):
    # Every event comes well within the timeout, but the stream as a whole does not.
    slow = Reply.text("y" * 400)
    slow.chunk_delay = 0.1
    with serve(slow) as server:
        answer = _one(_reliable(server, tmp_path, stream=True, timeout=0.5, max_retries=0))
        assert server.request_count == 1
    assert answer.status == "request_error" and answer.meta["error_class"] == "timeout"


def test_a_huge_streamed_answer_stops_being_read_at_the_limit(tmp_path):
    with serve(Reply.huge(200_000)) as server:
        answer = _one(_reliable(server, tmp_path, stream=True, max_answer_bytes=50_000))
    assert answer.status == "request_error" and answer.meta["error_class"] == "answer_too_large"


@pytest.mark.parametrize("where", ["content", "reasoning", "error"])
def test_a_key_quoted_in_a_stream_is_masked(tmp_path, where):
    if where == "content":
        reply = Reply.quoting_key("the key is {api_key} ok")
    elif where == "reasoning":
        reply = Reply.thinking("{}", "I see Bearer {api_key} here")
        reply.echo_key = True
    else:
        reply = Reply.text("{}")
        reply.stream_error, reply.echo_key = "bad key {api_key}", True
    with serve(reply, api_key=KEY) as server:
        answer = _one(_reliable(server, tmp_path, stream=True, key=KEY, max_retries=0))
    shown = f"{answer.text} {answer.error} {answer.meta.get('reasoning', '')}"
    assert KEY[:12] not in shown and KEY[-12:] not in shown


@pytest.mark.parametrize("chunk", ['[1, 2]', '{"choices": "none"}', '{"choices": [{"delta": "hi"}]}',
                                   '{"choices": [{"delta": {"content": 42}}]}',
                                   '{"choices": [{"delta": {"reasoning_content": [1]}}]}',
                                   '{"choices": [{"delta": {}, "finish_reason": 3}]}'])
def test_a_stream_chunk_of_the_wrong_shape_is_a_malformed_answer(tmp_path, chunk):
    import json

    raw = Reply.raw_body(200, f"data: {chunk}\n\ndata: " + json.dumps(
        {"choices": [{"delta": {}, "finish_reason": "stop"}]}) + "\n\ndata: [DONE]\n\n",
        content_type="text/event-stream")
    with serve(raw) as server:
        answer = _one(_reliable(server, tmp_path, stream=True))
        assert server.request_count == 1
    assert answer.status == "request_error" and answer.meta["error_class"] == "malformed_answer"


def test_an_unreadable_usage_chunk_keeps_the_answer_with_its_usage_unknown(tmp_path):
    import json

    raw = Reply.raw_body(200, "data: " + json.dumps({"choices": [{"delta": {"content": "{}"}}]}) + "\n\ndata: "
                         + json.dumps({"choices": [{"delta": {}, "finish_reason": "stop"}]}) + "\n\ndata: "
                         + json.dumps({"choices": [], "usage": {"prompt_tokens": "many"}}) + "\n\ndata: [DONE]\n\n",
                         content_type="text/event-stream")
    with serve(raw) as server:
        answer = _one(_reliable(server, tmp_path, stream=True))
    assert answer.status == "ok" and answer.text == "{}"
    assert answer.usage.unknown == 1 and "usage_unknown" in answer.meta


# --- a stream is read like an answer (issue #33 item 3) ----------------------------------------------------

ANSWER = '{"predictions": [{"id": "a", "answer": "yes"}]}'


def _streamed(tmp_path, reply: Reply, **options):
    with serve(reply) as server:
        answer = _one(_reliable(server, tmp_path, stream=True, **options))
        return answer, server.request_count


def _varied(**fields) -> Reply:
    reply = Reply.text(ANSWER)
    for name, value in fields.items():
        setattr(reply, name, value)
    return reply


@pytest.mark.parametrize("fields", [
    {"other_choice": '{"predictions": [{"id": "a", "answer": "no"}]}'},
    {"other_choice": "x" * 300},  # the other choice longer than choice 0
    {"other_choice": '{"predictions": []}', "multiline_data": True, "newline": "\r\n"},
], ids=["n2", "longer-other", "n2-multiline-crlf"])
def test_only_choice_0_of_a_stream_is_the_answer(tmp_path, fields):
    answer, sent = _streamed(tmp_path, _varied(**fields))
    assert sent == 1
    assert answer.status == "ok" and answer.text == ANSWER


@pytest.mark.parametrize("fields", [
    {"multiline_data": True},
    {"multiline_data": True, "newline": "\r\n"},
    {"multiline_data": True, "newline": "\r"},
    {"newline": "\r\n"},
    {"newline": "\r"},
    {"comments": True},
    {"comments": True, "multiline_data": True, "newline": "\r\n"},
    {"no_done": True},
    {"no_done": True, "multiline_data": True},
    {"chunk_delay": 0.001},  # each event in a write of its own
    {"trickle": 0.0005, "multiline_data": True, "newline": "\r\n"},  # every CRLF split across two reads
], ids=["multiline", "multiline-crlf", "multiline-cr", "crlf", "cr", "comments", "comments-multiline-crlf",
        "no-done", "no-done-multiline", "event-per-write", "byte-per-write-crlf"])
def test_valid_sse_in_every_form_gives_the_same_answer_and_usage(tmp_path, fields):
    answer, sent = _streamed(tmp_path, _varied(**fields), timeout=30.0)
    assert sent == 1
    assert answer.status == "ok" and answer.text == ANSWER
    assert answer.usage.input_tokens > 0 and answer.meta["finish_reason"] == "stop"


@pytest.mark.parametrize("fields", [{}, {"multiline_data": True}, {"no_done": True}],
                         ids=["plain", "multiline", "no-done"])
def test_content_after_finish_reason_is_not_part_of_the_answer(tmp_path, fields):
    answer, _ = _streamed(tmp_path, _varied(after_finish="<junk after the end>", **fields))
    assert answer.status == "ok" and answer.text == ANSWER


def test_reasoning_after_finish_reason_is_not_kept_either(tmp_path):
    import json

    events = [{"choices": [{"index": 0, "delta": {"content": "{}"}, "finish_reason": "stop"}]},
              {"choices": [{"index": 0, "delta": {"reasoning_content": "late thoughts", "content": "more"}}]},
              {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    answer, _ = _streamed(tmp_path, Reply.raw_body(200, body, content_type="text/event-stream"))
    assert answer.text == "{}" and "reasoning" not in answer.meta
    assert answer.usage.input_tokens == 3  # the usage chunk after the finish is still read


def test_a_huge_multiline_event_is_joined(tmp_path):
    content = "y" * 300_000
    answer, _ = _streamed(tmp_path, _varied(content=content, multiline_data=True), timeout=60.0)
    assert answer.status == "ok" and answer.text == content


def test_events_ended_by_one_newline_each_are_still_read_one_by_one(tmp_path):
    import json

    events = [{"choices": [{"index": 0, "delta": {"content": '{"a"'}}]},
              {"choices": [{"index": 0, "delta": {"content": ": 1}"}, "finish_reason": "stop"}]}]
    body = "".join(f"data: {json.dumps(e)}\n" for e in events) + "data: [DONE]\n"
    answer, _ = _streamed(tmp_path, Reply.raw_body(200, body, content_type="text/event-stream"))
    assert answer.status == "ok" and answer.text == '{"a": 1}'


@pytest.mark.parametrize("index", ['"0"', "true", "1.5", "[0]"])
def test_a_choice_index_that_is_not_a_number_is_a_malformed_answer(tmp_path, index):
    body = (f'data: {{"choices": [{{"index": {index}, "delta": {{"content": "{{}}"}}, "finish_reason": "stop"}}]}}'
            "\n\ndata: [DONE]\n\n")
    answer, sent = _streamed(tmp_path, Reply.raw_body(200, body, content_type="text/event-stream"))
    assert sent == 1
    assert answer.status == "request_error" and answer.meta["error_class"] == "malformed_answer"


@pytest.mark.parametrize("status", [200, 400, 429, 500])
@pytest.mark.parametrize("form", ["json", "pretty-json", "sse"])
def test_a_json_error_sent_with_the_stream_content_type_keeps_the_providers_message(tmp_path, status, form):
    import json

    error = {"error": {"message": "Model overloaded: try model-b instead", "type": "server_error", "code": None}}
    text = {"json": json.dumps(error), "pretty-json": json.dumps(error, indent=2),
            "sse": f"data: {json.dumps(error)}\n\n"}[form]
    answer, _ = _streamed(tmp_path, Reply.raw_body(status, text, content_type="text/event-stream"), max_retries=0)
    assert answer.status == "request_error"
    assert "Model overloaded: try model-b instead" in answer.error
    assert "data:" not in answer.error


def test_a_content_filter_error_sent_with_the_stream_content_type_is_a_refusal(tmp_path):
    import json

    error = {"error": {"message": "Input data may contain inappropriate content.", "code": "data_inspection_failed"}}
    answer, sent = _streamed(tmp_path, Reply.raw_body(200, json.dumps(error), content_type="text/event-stream"))
    assert sent == 1 and answer.status == "refused"


def test_a_plain_completion_sent_with_the_stream_content_type_is_read_as_one(tmp_path):
    import json

    completion = {"choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER},
                               "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}
    answer, _ = _streamed(tmp_path, Reply.raw_body(200, json.dumps(completion), content_type="text/event-stream"))
    assert answer.status == "ok" and answer.text == ANSWER and answer.usage.input_tokens == 5


@pytest.mark.parametrize("body", ["<html>Bad gateway</html>", "", ": only a comment\n\n", "data:\n\ndata: \n\n"],
                         ids=["html", "empty", "comment-only", "empty-data-only"])
def test_a_stream_with_no_event_is_retried_and_says_what_came(tmp_path, body):
    answer, sent = _streamed(tmp_path, Reply.raw_body(200, body, content_type="text/event-stream"), max_retries=1)
    assert sent == 2 and answer.status == "request_error"
    assert answer.meta["error_class"] in ("bad_response", "connection")
    if body.startswith("<html>"):
        assert "Bad gateway" in answer.error
