"""Shared by the review tool's tests: a project folder with clips, accounts, and logged-in clients."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any, NotRequired, get_origin, get_type_hints
from urllib.parse import quote

from fastapi.testclient import TestClient

from rescue.human.app import create_app as create_benchmark_app
from rescue.review import crud, security
from rescue.review.app import create_app
from rescue.review.project import is_benchmark

PASSWORD = "correct horse battery"
USERS = {"ann": "annotator", "bob": "annotator", "cat": "annotator", "ada": "adjudicator", "root": "admin"}
FIRST = "demo_couple_riley_and_sam/001_session"

# Accounts are made by the dozen here; the server's default argon2 cost would dominate the run time.
security.set_hash_cost(1, 1024)


def make_app(project_dir: Path, database: Path | str, users: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    """An app on ``db``: a SQLite file's path, or any SQLAlchemy URL."""
    url = database if isinstance(database, str) else f"sqlite:///{database}"
    app = create_benchmark_app(project_dir, url) if is_benchmark(project_dir) else create_app(project_dir, url)
    with app.state.sessions() as db:
        for name, role in (users or USERS).items():
            crud.create_user(db, "test", name, role, PASSWORD)
    return app


class Client:
    """A TestClient logged in as one user, sending the CSRF header on writes."""

    def __init__(self, app: Any, name: str):
        self.http = TestClient(app)
        answer = self.http.post("/api/login", json={"name": name, "password": PASSWORD})
        assert answer.status_code == 200, answer.text
        self.csrf = answer.json()["csrf"]
        self.name = name

    def get(self, url: str, **kw: Any):  # type: ignore[no-untyped-def]
        return self.http.get(url, **kw)

    def write(self, method: str, url: str, body: Any = None, **kw: Any):  # type: ignore[no-untyped-def]
        return self.http.request(method, url, json=body, headers={"X-CSRF-Token": self.csrf}, **kw)

    def segment(self, sample_id: str = FIRST, copy: str | None = None) -> dict[str, Any]:
        answer = self.get(seg_url(sample_id) + (f"?copy={copy}" if copy else ""))
        assert answer.status_code == 200, answer.text
        return answer.json()  # type: ignore[no-any-return]

    def save(self, row: int, fields: dict[str, Any], version: int | None = None, sample_id: str = FIRST,
             copy: str | None = None, accepted: list[str] | None = None):  # type: ignore[no-untyped-def]
        if version is None:
            version = self.segment(sample_id, copy)["rows"][row - 1]["version"]
        url = seg_url(sample_id) + f"/rows/{row}" + (f"?copy={copy}" if copy else "")
        return self.write("PUT", url, {"version": version, "fields": fields, "accepted": accepted or []})

    def verify(self, sample_id: str = FIRST, copy: str | None = None):  # type: ignore[no-untyped-def]
        return self.write("POST", seg_url(sample_id) + "/verify" + (f"?copy={copy}" if copy else ""))


def seg_url(sample_id: str) -> str:
    return "/api/segments/" + quote(sample_id, safe="")


def append_tokens(client: Any, url: str, row: dict[str, Any], tokens: list[str]) -> list[str]:
    """Read-modify-write of one row's tone_of_voice, as a careful client does it: append each token, and on a
    409 take the newer version from the answer and try again. Returns the tokens the server confirmed.
    ``client`` is anything with ``write(method, url, body)`` (a TestClient or a real HTTP client)."""
    version, tone, done = row["version"], row["values"]["tone_of_voice"], []
    for token in tokens:
        while True:
            answer = client.write("PUT", url, {"version": version, "fields": {"tone_of_voice": f"{tone};{token}"}})
            if answer.status_code == 200:
                version, tone = answer.json()["version"], f"{tone};{token}"
                done.append(token)
                break
            assert answer.status_code == 409, answer.text
            current = answer.json()["current"]
            version, tone = current["version"], current["values"]["tone_of_voice"]
    return done


class Server:
    """uvicorn in a thread, on a port of 127.0.0.1 the OS chose, stopped at the end of the test."""

    def __init__(self, app: Any):
        import uvicorn

        # The socket is bound here and handed to uvicorn still open: a port found free, closed and bound again
        # could be taken in between by another process on a busy machine.
        self.socket = socket.socket()
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("127.0.0.1", 0))
        self.port = int(self.socket.getsockname()[1])
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.socket.close()


def check_keys(value: Any, shape: type) -> None:
    """``value`` holds every required key of the TypedDict ``shape`` and no key it does not declare."""
    # Read through get_type_hints: under postponed annotations Python 3.11 counts NotRequired keys as required.
    hints = get_type_hints(shape, include_extras=True)
    required = {key for key, hint in hints.items() if get_origin(hint) is not NotRequired}
    assert isinstance(value, dict), (shape.__name__, value)
    assert required <= set(value) <= set(hints), (shape.__name__, sorted(value), sorted(hints))


def check_each(values: Any, shape: type) -> None:
    """:func:`check_keys` on each of ``values``."""
    for value in values:
        check_keys(value, shape)
