"""The review server under load it should refuse (issue #22.6): bodies over a route's limit are 413 before they
are read, field values over the release format's needs are refused, login throttling works per address and per
name without locking out a correct password from a clean address, atomically, and a draft holding a lone
surrogate renders.

Against the real app over real HTTP (uvicorn on 127.0.0.1; a second client address is 127.0.0.2, which Linux
routes over the loopback too).
"""

from __future__ import annotations

import json
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from review_helpers import FIRST, PASSWORD, Server, make_app, seg_url

from rescue.review.security import BODY_BYTES, LOGIN_BODY_BYTES, MAX_TEXT_CHARS
from rescue.testing.review_project import make_review_project




def _client(server, address: str = "127.0.0.1") -> httpx.Client:
    return httpx.Client(base_url=server.url, transport=httpx.HTTPTransport(local_address=address), timeout=30)


def _logged_in(server, name: str = "ann") -> tuple[httpx.Client, dict[str, str]]:
    client = _client(server)
    answer = client.post("/api/login", json={"name": name, "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    return client, {"X-CSRF-Token": answer.json()["csrf"]}


def _raw(server, head: str, body_chunks, *, cookie: str = "") -> tuple[int, int]:
    """Send a request over a plain socket, as much of the body as the server takes; its status, bytes sent."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sent = 0
    with sock:
        sock.sendall((head + (f"Cookie: {cookie}\r\n" if cookie else "") + "\r\n").encode())
        try:
            for chunk in body_chunks:
                sock.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        try:
            while b"\r\n" not in data:
                more = sock.recv(4096)
                if not more:
                    break
                data += more
        except ConnectionResetError:
            pass
    return int(data.split(b" ", 2)[1]), sent


MB = 1024 * 1024


def _declared(method: str, path: str, size: int) -> str:
    return (f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {size}\r\n")


def _chunked(method: str, path: str) -> str:
    return f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"


def _chunks(total: int, size: int = 64 * 1024):
    piece = b"a" * size
    for _ in range(total // size):
        yield f"{size:x}\r\n".encode() + piece + b"\r\n"
    yield b"0\r\n\r\n"


ROW = seg_url(FIRST) + "/rows/1"


@pytest.mark.parametrize("method,path,how", [
    ("PUT", ROW, "declared"),  # the case: anonymous, 200 MB declared
    ("POST", "/api/login", "declared"),  # the 200 MB login
    ("PUT", ROW, "chunked"),  # variants: no Content-Length, the body streamed
    ("POST", "/api/login", "chunked"),
    ("POST", seg_url(FIRST) + "/comments", "declared"),
    ("POST", "/api/users", "chunked"),
    ("DELETE", ROW, "declared"),
])
def test_a_body_over_the_routes_limit_is_413_before_it_is_read(server, method, path, how):
    if how == "declared":
        # Nothing of the body is sent at all: the answer must come from the headers alone.
        status, _ = _raw(server, _declared(method, path, 200 * MB), [])
    else:
        status, sent = _raw(server, _chunked(method, path), _chunks(20 * MB))
    assert status == 413


def test_the_login_limit_is_a_few_kb_and_a_save_a_few_hundred(server):
    client = _client(server)
    assert client.post("/api/login", content=json.dumps({"name": "ann", "password": "x" * (LOGIN_BODY_BYTES + 10)}),
                       headers={"content-type": "application/json"}).status_code == 413
    assert client.post("/api/login", json={"name": "ann", "password": PASSWORD}).status_code == 200
    assert LOGIN_BODY_BYTES <= 8 * 1024 and 100 * 1024 <= BODY_BYTES <= 512 * 1024


def test_an_annotator_cannot_store_a_huge_field(server, tmp_path):
    client, csrf = _logged_in(server)
    version = client.get(seg_url(FIRST)).json()["rows"][0]["version"]
    db = tmp_path / "review.db"
    before = db.stat().st_size
    # The 20 MB value: over the body limit.
    big = client.put(ROW, json={"version": version, "fields": {"tone_of_voice": "x" * 20 * MB}}, headers=csrf)
    assert big.status_code == 413
    # Variants under the body limit but over a field's: a text, a text in a list entry, too many entries.
    for fields in ({"tone_of_voice": "x" * (MAX_TEXT_CHARS + 1)},
                   {"dialogue_cleaned": "y" * (MAX_TEXT_CHARS + 1)},
                   {"body_posture": [{"person": "Riley", "description": "z" * (MAX_TEXT_CHARS + 1)}]},
                   {"target": ["Sam"] * 500}):
        answer = client.put(ROW, json={"version": version, "fields": fields}, headers=csrf)
        assert answer.status_code == 422, (fields.keys(), answer.text)
    comment = client.post(seg_url(FIRST) + "/comments", json={"text": "c" * (MAX_TEXT_CHARS + 1)}, headers=csrf)
    assert comment.status_code in (413, 422)
    grown = sum(p.stat().st_size for p in tmp_path.glob("review.db*")) - before
    assert grown < 2 * MB


# --- login throttling ------------------------------------------------------------------------------------------


def test_an_attackers_failures_never_lock_out_the_right_password_from_a_clean_address(server):
    attacker = _client(server, "127.0.0.2")
    for _ in range(10):
        assert attacker.post("/api/login", json={"name": "ann", "password": "guess"}).status_code == 401
    # The attacker is stopped, even with the right password ...
    assert attacker.post("/api/login", json={"name": "ann", "password": PASSWORD}).status_code == 429
    # ... and the real user, from an address with no failures, is not.
    assert _client(server).post("/api/login", json={"name": "ann", "password": PASSWORD}).status_code == 200


def test_parallel_guesses_are_counted_before_they_are_checked(server):
    attacker = _client(server, "127.0.0.2")

    def guess(_):
        return attacker.post("/api/login", json={"name": "bob", "password": "guess"}).status_code

    with ThreadPoolExecutor(40) as pool:
        statuses = list(pool.map(guess, range(40)))
    assert statuses.count(401) <= 10 and statuses.count(429) >= 30, statuses


def test_spraying_names_from_one_address_meets_a_limit(server):
    attacker = _client(server, "127.0.0.2")
    statuses = [attacker.post("/api/login", json={"name": f"user{i}", "password": "guess"}).status_code
                for i in range(30)]
    assert 429 in statuses and statuses.count(401) <= 20, statuses
    assert _client(server).post("/api/login", json={"name": "ann", "password": PASSWORD}).status_code == 200


def test_parallel_sprays_from_one_address_are_counted_atomically(server):
    attacker = _client(server, "127.0.0.2")
    lock = threading.Lock()
    names = iter(range(60))

    def guess(_):
        with lock:
            i = next(names)
        return attacker.post("/api/login", json={"name": f"spray{i}", "password": "guess"}).status_code

    with ThreadPoolExecutor(30) as pool:
        statuses = list(pool.map(guess, range(60)))
    assert statuses.count(401) <= 20, statuses


# --- drafts with lone surrogates ---------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["dialogue_cleaned", "tone_of_voice", "emotion", "sample_id"])
def test_a_draft_holding_a_lone_surrogate_renders(tmp_path, where):
    proj = make_review_project(tmp_path / "proj", max_seconds=30, media=False)
    draft = proj / "draft.jsonl"
    samples = [json.loads(line) for line in draft.read_text(encoding="utf-8").splitlines()]
    row = samples[0]["rows"][0]
    if where == "emotion":
        row["internal_emotion"] = [{"person": row["primary_speaker"], "emotion_description": "calm \ud800",
                                    "intensity": 3}]
    elif where == "sample_id":
        samples[0]["sample_id"] += "\udfff"
    else:
        row[where] = row[where] + " \ud800 end"
    draft.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")  # \ud800 as a JSON escape
    running = Server(make_app(proj, tmp_path / "review.db"))
    try:
        client = _client(running)
        assert client.post("/api/login", json={"name": "ann", "password": PASSWORD}).status_code == 200
        segments = client.get("/api/segments")
        assert segments.status_code == 200
        sample_id = segments.json()["segments"][0]["sample_id"] if isinstance(segments.json(), dict) else \
            segments.json()[0]["sample_id"]
        answer = client.get(seg_url(sample_id))
        assert answer.status_code == 200, answer.text
        assert "\ufffd" in answer.text or "\\ufffd" in answer.text
        page = client.get("/segments/" + sample_id.replace("/", "%2F"))
        assert page.status_code in (200, 303) and "Traceback" not in page.text
        assert client.get("/").status_code == 200
    finally:
        running.stop()
