"""A batch's output is untrusted, paid-for input (issue #33 item 1): each line of its output and error files is
read on its own, a bad line is a failure of that one request (with its reason; the online pass asks it), every
good answer is stored as it is read, the first line of a custom_id wins, and the batch object, the answers of
the batch routes and ``batches.json`` are checked when read. Against the scripted server's batch API."""

from __future__ import annotations

import json

import pytest
from batch_support import answer_of, batch_model, cached, log_events, question, run_batches

from rescue.llm._batch import LEDGER, BatchError, BatchLedger
from rescue.testing.openai_server import BatchFault, serve

N = 6
HUGE = "9" * 5000
EVERY = 10**6


def _lines(content: bytes) -> list[dict]:
    return [json.loads(line) for line in content.splitlines()]


def _joined(lines: list) -> bytes:
    return b"".join((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n" for line in lines)


def _first(change):
    """An output rewrite: the first line replaced by what ``change`` makes of it (bytes, or a JSON value)."""
    def rewrite(content: bytes) -> bytes:
        lines: list = _lines(content)
        lines[0] = change(lines[0])
        return _joined(lines)
    return rewrite


def _set(path: tuple[str, ...], value):
    def change(line: dict) -> dict:
        target = line
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        return line
    return change


# Each rewrite spoils exactly the first line's request; the other five answers are good.
ONE_BAD_LINE = {
    "not JSON": _first(lambda line: b"this is not JSON"),
    "a JSON list": _first(lambda line: b"[1, 2, 3]"),
    "response a string": _first(_set(("response",), "oops")),
    "response null": _first(_set(("response",), None)),
    "status_code text": _first(_set(("response", "status_code"), "200")),
    "status_code 5000 digits": _first(lambda line: json.dumps(line).replace('"status_code": 200',
                                                                          f'"status_code": {HUGE}').encode()),
    "body a list": _first(_set(("response", "body"), [1])),
    "no choices": _first(_set(("response", "body", "choices"), [])),
    "content a number": _first(lambda line: _set(("response", "body", "choices"), [{"message": {"content": 5}}])(line)),
    "empty content": _first(lambda line: _set(("response", "body", "choices"),
                                              [{"message": {"content": ""}, "finish_reason": "stop"}])(line)),
    "not UTF-8": _first(lambda line: b"\xff\xfe" + json.dumps(line).encode()),
    "nested too deeply": _first(lambda line: b"[" * 100_000 + b"]" * 100_000),
    "custom_id missing": _first(lambda line: {k: v for k, v in line.items() if k != "custom_id"}),
    "custom_id a number": _first(_set(("custom_id",), 7)),
    "HTTP 500 in the output file": _first(_set(("response", "status_code"), 500)),
}


@pytest.mark.parametrize("variant", list(ONE_BAD_LINE))
def test_one_bad_output_line_fails_only_its_request(tmp_path, variant):
    requests = [question(n) for n in range(N)]
    with serve(answer_of) as server:
        server.batch_behaviour.output = ONE_BAD_LINE[variant]
        model = batch_model(server, tmp_path)
        warnings: list[str] = []
        outcome = run_batches(model, requests, tmp_path, warnings)
    stored = cached(model, requests)
    assert stored == {0: None, **{n: f"answer {n}" for n in range(1, N)}}
    assert outcome.answered == N - 1 and outcome.failed == 1
    assert any("left to the online pass" in w for w in warnings), warnings
    [entry] = BatchLedger(tmp_path / LEDGER).entries
    assert entry.collected and entry.answered == N - 1 and entry.failed == 1
    # The reason is in run.log, per line, naming the batch.
    reasons = log_events(tmp_path, "batch_line")
    assert reasons and all(r["batch_id"] == entry.batch_id and r["reason"] for r in reasons)


def test_a_usage_of_5000_digits_keeps_the_answer_with_its_usage_unknown(tmp_path):
    requests = [question(n) for n in range(N)]
    huge = _first(lambda line: json.dumps(line).replace('"prompt_tokens": ', f'"prompt_tokens": {HUGE}, "x": ',
                                                        1).encode())
    with serve(answer_of) as server:
        server.batch_behaviour.output = huge
        model = batch_model(server, tmp_path)
        outcome = run_batches(model, requests, tmp_path)
    assert outcome.answered == N and all(cached(model, requests).values())


def test_a_truncated_last_line_fails_only_its_request(tmp_path):
    requests = [question(n) for n in range(N)]
    with serve(answer_of) as server:
        server.batch_behaviour.output = lambda content: content[:-40]
        model = batch_model(server, tmp_path)
        outcome = run_batches(model, requests, tmp_path)
    stored = cached(model, requests)
    assert sum(v is not None for v in stored.values()) == N - 1 and outcome.failed == 1


def test_duplicate_custom_ids_the_first_line_wins_with_a_warning(tmp_path):
    requests = [question(n) for n in range(N)]

    def twice(content: bytes) -> bytes:
        lines = _lines(content)
        other = json.loads(json.dumps(lines[0]))
        other["response"]["body"]["choices"][0]["message"]["content"] = "the second line"
        return _joined([*lines, other, lines[1]])

    with serve(answer_of) as server:
        server.batch_behaviour.output = twice
        model = batch_model(server, tmp_path)
        warnings: list[str] = []
        outcome = run_batches(model, requests, tmp_path, warnings)
    stored = cached(model, requests)
    assert stored == {n: f"answer {n}" for n in range(N)} and outcome.answered == N
    assert any("2 lines repeat a custom_id" in w and "the first line of each is kept" in w for w in warnings), warnings


def test_unknown_custom_ids_blank_and_crlf_lines_are_passed_over(tmp_path):
    requests = [question(n) for n in range(N)]

    def noisy(content: bytes) -> bytes:
        lines = _lines(content)
        stranger = json.loads(json.dumps(lines[0]))
        stranger["custom_id"] = "not-one-of-ours"
        return b"\r\n\n".join(json.dumps(line).encode() for line in [stranger, *lines]) + b"\r\n"

    with serve(answer_of) as server:
        server.batch_behaviour.output = noisy
        model = batch_model(server, tmp_path)
        warnings: list[str] = []
        outcome = run_batches(model, requests, tmp_path, warnings)
    assert outcome.answered == N and all(cached(model, requests).values())
    assert any("1 line names a custom_id not in this batch" in w for w in warnings), warnings


@pytest.mark.slow
def test_a_line_over_the_limit_fails_without_holding_it(tmp_path):
    from rescue.llm._batch_output import MAX_LINE_BYTES

    requests = [question(n) for n in range(N)]
    huge = _first(_set(("response", "body", "choices"), [{"message": {"content": "x" * (MAX_LINE_BYTES + 10)}}]))
    with serve(answer_of) as server:
        server.batch_behaviour.output = huge
        model = batch_model(server, tmp_path, timeout=60)
        warnings: list[str] = []
        outcome = run_batches(model, requests, tmp_path, warnings)
    assert cached(model, requests)[0] is None and outcome.answered == N - 1
    assert any("longer than" in r["reason"] for r in log_events(tmp_path, "batch_line"))


ERROR_FILE = {
    "not JSON": lambda content: b"garbage\n" + content,
    "not UTF-8": lambda content: b"\xff\n" + content,
    "a line of an unknown request": lambda content: _joined([{"custom_id": "nobody", "error": {"message": "x"}},
                                                             *_lines(content)]),
    "error a string": lambda content: _joined([{**line, "error": "broken", "response": "x"}
                                               for line in _lines(content)]),
}


@pytest.mark.parametrize("variant", list(ERROR_FILE))
def test_an_unreadable_error_file_leaves_its_requests_to_the_online_pass(tmp_path, variant):
    requests = [question(n) for n in range(N)]
    with serve(answer_of) as server:
        server.batch_behaviour.outcome, server.batch_behaviour.expire_after = "expired", 4
        server.batch_behaviour.errors = ERROR_FILE[variant]
        model = batch_model(server, tmp_path)
        outcome = run_batches(model, requests, tmp_path)
    assert outcome.answered == 4 and outcome.failed == 2
    assert [v is not None for v in cached(model, requests).values()] == [True] * 4 + [False] * 2


def test_the_error_files_reasons_are_logged(tmp_path):
    requests = [question(n) for n in range(N)]
    with serve(answer_of) as server:
        server.batch_behaviour.outcome, server.batch_behaviour.expire_after = "expired", 4
        model = batch_model(server, tmp_path)
        run_batches(model, requests, tmp_path)
    reasons = [r["reason"] for r in log_events(tmp_path, "batch_line")]
    assert len(reasons) == 2 and all("batch_expired" in r for r in reasons)


STATUS_ANSWERS = {
    "request_counts not numbers": lambda real: json.dumps({**json.loads(real), "request_counts": {
        "completed": "many", "failed": None, "total": [1]}}).encode(),
    "request_counts of 5000 digits": lambda real: real.replace(b'"completed":', f'"completed":{HUGE},"x":'.encode()),
    "request_counts a list": lambda real: json.dumps({**json.loads(real), "request_counts": [1, 2]}).encode(),
    "metadata a string": lambda real: json.dumps({**json.loads(real), "metadata": "x"}).encode(),
}


@pytest.mark.parametrize("variant", list(STATUS_ANSWERS))
def test_an_unreadable_count_in_the_batch_object_is_only_not_shown(tmp_path, variant):
    requests = [question(n) for n in range(N)]
    with serve(answer_of) as server:
        server.batch_behaviour.faults.append(BatchFault("status", times=EVERY, body=STATUS_ANSWERS[variant]))
        model = batch_model(server, tmp_path)
        outcome = run_batches(model, requests, tmp_path)
    assert outcome.answered == N


BROKEN_BATCH_OBJECTS = {
    "a list": b"[]",
    "not JSON": b"<html>gateway</html>",
    "no status": b'{"id": "x", "object": "batch"}',
    "status a number": b'{"id": "x", "status": 5}',
    "output_file_id a number": None,  # set below: the real object with output_file_id 5
}


@pytest.mark.parametrize("variant", list(BROKEN_BATCH_OBJECTS))
def test_a_batch_object_that_stays_unreadable_leaves_the_batch_to_the_online_pass(tmp_path, variant):
    requests = [question(n) for n in range(N)]
    body = BROKEN_BATCH_OBJECTS[variant]
    rewrite = body if body is not None else (
        lambda real: json.dumps({**json.loads(real), "output_file_id": 5, "status": "completed"}).encode())
    with serve(answer_of) as server:
        server.batch_behaviour.faults.append(BatchFault("status", times=EVERY, body=rewrite))
        model = batch_model(server, tmp_path)
        warnings: list[str] = []
        outcome = run_batches(model, requests, tmp_path, warnings)
    assert outcome.answered == 0 and outcome.failed == N
    assert any("cannot be read" in w and "online" in w for w in warnings), warnings
    # Not marked collected: a rerun polls it again and reads what it answered then.
    [entry] = BatchLedger(tmp_path / LEDGER).entries
    assert not entry.collected


def test_a_batch_the_endpoint_no_longer_knows_is_left_to_the_online_pass(tmp_path):
    requests = [question(n) for n in range(N)]
    with serve(answer_of) as server:
        server.batch_behaviour.faults.append(BatchFault("status", times=EVERY, status=404))
        model = batch_model(server, tmp_path)
        warnings: list[str] = []
        outcome = run_batches(model, requests, tmp_path, warnings)
    assert outcome.failed == N and any("404" in w for w in warnings)


def test_a_dropped_connection_while_reading_the_output_keeps_what_was_read(tmp_path):
    requests = [question(n) for n in range(N)]
    with serve(answer_of) as server:
        server.batch_behaviour.faults.append(BatchFault("content", times=10**6, cut=700, drop=True))
        model = batch_model(server, tmp_path)
        outcome = run_batches(model, requests, tmp_path)
    stored = cached(model, requests)
    # The line(s) whole before the break are stored, once, however often the read is tried again.
    assert stored[0] == "answer 0" and outcome.answered == sum(v is not None for v in stored.values()) < N


LEDGERS = {
    "keys null": ({"batches": [{"model": "m", "purpose": "predict", "batch_id": "b", "input_file_id": "f",
                                "keys": None}]}, "batches[0].keys"),
    "batches a dict": ({"batches": {}}, "batches"),
    "a list": ([], "batches.json"),
    "batch_id missing": ({"batches": [{"model": "m", "purpose": "predict", "input_file_id": "f", "keys": []}]},
                         "batches[0].batch_id"),
    "answered negative": ({"batches": [{"model": "m", "purpose": "predict", "batch_id": "b", "input_file_id": "f",
                                        "keys": [], "answered": -1}]}, "batches[0].answered"),
    "collected a string": ({"batches": [{"model": "m", "purpose": "predict", "batch_id": "b", "input_file_id": "f",
                                         "keys": [], "collected": "yes"}]}, "batches[0].collected"),
    "run a number": ({"run": 5, "batches": []}, "run"),
}


@pytest.mark.parametrize("variant", list(LEDGERS))
def test_a_ledger_rescue_did_not_write_is_a_clear_error_naming_the_field(tmp_path, variant):
    data, field = LEDGERS[variant]
    (tmp_path / LEDGER).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(BatchError) as caught:
        BatchLedger(tmp_path / LEDGER)
    assert str(tmp_path / LEDGER) in str(caught.value) and field in str(caught.value)


@pytest.mark.parametrize("content", [b"\xff\xfe{}", b'{"batches": [', ('{"batches": [], "x": ' + HUGE + "}").encode(),
                                     b"[" * 100_000])
def test_an_unreadable_ledger_file_is_a_clear_error(tmp_path, content):
    (tmp_path / LEDGER).write_bytes(content)
    with pytest.raises(BatchError, match="batches.json"):
        BatchLedger(tmp_path / LEDGER)


def test_a_ledger_of_the_earlier_format_is_read(tmp_path):
    old = {"batches": [{"model": "m", "purpose": "predict", "batch_id": "b", "input_file_id": "f", "keys": ["k"],
                        "status": "completed", "collected": True, "answered": 1, "failed": 0}]}
    (tmp_path / LEDGER).write_text(json.dumps(old), encoding="utf-8")
    ledger = BatchLedger(tmp_path / LEDGER)
    assert [e.batch_id for e in ledger.entries] == ["b"] and ledger.run


# --- whole runs: the bad lines are asked online, the good ones never again -------------------------------------


def test_a_run_whose_batch_output_is_spoilt_completes_asking_only_the_spoilt_requests_online(tmp_path, capfd):
    from batch_support import oracle, run_config

    from rescue.engine.runner import run

    answers, script = oracle()

    def spoilt(content: bytes) -> bytes:
        lines = content.splitlines()
        # Line 1 not JSON, line 2 twice (the copy is wrong), the last one cut off.
        copy = json.loads(lines[1])
        copy["response"]["body"]["choices"][0]["message"]["content"] = "{}"
        return b"\n".join([b"{not json", *lines[1:-1], json.dumps(copy).encode(), lines[-1][:-10]])

    with serve(script) as server:
        server.batch_behaviour.output = spoilt
        outcome = run(run_config(tmp_path, server))
        assert server.request_count == 2 and len(server.batches) == 1
        again = run(run_config(tmp_path, server))  # everything is in the cache now: nothing sent
        assert server.request_count == 2 and len(server.batches) == 1
    assert outcome.complete and again.complete
    assert outcome.results["models"]["m"]["itp"]["all"]["f1"] == 1.0
    assert outcome.results["models"]["m"]["usage"]["itp"]["batch_answers"] == len(answers) - 2
    err = " ".join(capfd.readouterr().err.split())
    assert "2 requests have no answer in it" in err and "1 line repeats a custom_id" in err


def test_a_spoilt_line_in_the_judges_batch_is_asked_online(tmp_path):
    from batch_support import run_config

    from rescue.engine.runner import run
    from rescue.testing.openai_server import Reply, message_text

    def script(body):
        text = message_text(body)
        if "You are grading" in text:
            return Reply.json({"emotion_score": 4, "score": 3})
        checkpoints = json.loads(text.rsplit("Checkpoints: ", 1)[1])
        return Reply.json({"predictions": [{"checkpoint_id": c["checkpoint_id"], "emotion": "uneasy",
                                            "intensity": 5} for c in checkpoints]})

    def judge_spoilt(content: bytes) -> bytes:
        lines = _lines(content)
        if lines[0]["response"]["body"]["model"] == "judge-a":
            lines[0]["response"] = "the judge's line, spoilt"
            lines.append({"custom_id": 5, "response": {"status_code": 200, "body": HUGE}})
        return _joined(lines)

    with serve(script) as server:
        server.batch_behaviour.output = judge_spoilt
        outcome = run(run_config(tmp_path, server, tasks=["er"], judges=["judge-a"]))
        assert len(server.batches) == 2 and server.request_count == 1
        assert message_text(server.bodies[0]).count("You are grading") == 1
    assert outcome.complete and outcome.results["models"]["m"]["er"]["all"]["judge_emotion"] == 4.0


def test_rescue_run_names_the_file_and_field_of_a_bad_ledger_and_exits_2(tmp_path):
    from _cli import invoke_main
    from batch_support import prices

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / LEDGER).write_text(json.dumps(LEDGERS["keys null"][0]), encoding="utf-8")
    with serve(answer_of) as server:
        result = invoke_main(["run", "--model", "m", "--base-url", server.base_url, "--tasks", "itp",
                              "--limit-samples", "1", "--out", str(run_dir), "--no-bertscore", "--batch",
                              "--quiet", "--prices", prices(tmp_path)], env={"OPENAI_API_KEY": "test"})
        assert server.batches == {} and server.request_count == 0
    assert result.exit_code == 2, result.output
    assert "batches[0].keys" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("variant", ["request_counts not numbers", "request_counts of 5000 digits"])
def test_a_run_whose_batch_object_has_unreadable_counts_completes(tmp_path, variant):
    from batch_support import oracle, run_config

    from rescue.engine.runner import run

    answers, script = oracle()
    with serve(script) as server:
        server.batch_behaviour.faults.append(BatchFault("status", times=EVERY, body=STATUS_ANSWERS[variant]))
        outcome = run(run_config(tmp_path, server))
        assert server.request_count == 0
    assert outcome.complete and outcome.results["models"]["m"]["usage"]["itp"]["batch_answers"] == len(answers)


def test_lines_split_anywhere_across_chunks_are_read_whole():
    import asyncio

    from rescue.llm._batch_output import lines

    content = b'{"a": 1}\n\n{"b": "\xc3\xa9"}\r\nlast without newline'
    expected = [(1, b'{"a": 1}'), (2, b""), (3, b'{"b": "\xc3\xa9"}\r'), (4, b"last without newline")]

    async def read(chunks):
        async def stream():
            for chunk in chunks:
                yield chunk
        return [item async for item in lines(stream())]

    for cut in range(len(content) + 1):
        assert asyncio.run(read([content[:cut], content[cut:]])) == expected
    assert asyncio.run(read([bytes([b]) for b in content])) == expected


def test_a_ledger_of_the_earlier_format_is_named_before_anything_is_sent(tmp_path):
    (tmp_path / LEDGER).write_text(json.dumps({"batches": []}), encoding="utf-8")
    named_at_upload = []

    def look(real: bytes) -> bytes:  # runs in the server as the upload arrives
        named_at_upload.append(json.loads((tmp_path / LEDGER).read_text()).get("run"))
        return real

    with serve(answer_of) as server:
        server.batch_behaviour.faults.append(BatchFault("upload", body=look))
        run_batches(batch_model(server, tmp_path), [question(0)], tmp_path)
        [upload] = server.uploads.values()
    [run] = named_at_upload
    assert run and upload["filename"].startswith(f"rescue-{run[:16]}-")


def test_a_key_quoted_in_a_lines_error_is_masked_in_run_log(tmp_path):
    from rescue.llm import _secrets as secrets

    key = "sk-batch-test-key-0123456789abcdef"
    secrets.register(key)
    requests = [question(n) for n in range(N)]
    quoting = _first(lambda line: {**line, "response": {"status_code": 401, "body": {
        "error": {"message": f"Incorrect API key provided: {key}"}}}})
    with serve(answer_of) as server:
        server.batch_behaviour.output = quoting
        model = batch_model(server, tmp_path)
        warnings: list[str] = []
        run_batches(model, requests, tmp_path, warnings)
    assert key not in (tmp_path / "run.log").read_text() and not any(key in w for w in warnings)
    assert any("Incorrect API key" in r["reason"] for r in log_events(tmp_path, "batch_line"))
