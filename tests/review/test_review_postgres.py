"""The review tool on PostgreSQL as a lab would run it: accounts, assignment and export through the CLI with
``--db URL``, and two ``rescue review serve`` processes sharing one database, written to at once.

Every API flow also runs on PostgreSQL in test_review_api.py (its ``app`` fixture is parametrised over both
backends); this file covers what one process cannot show: the write path stays consistent across processes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from review_helpers import append_tokens

from rescue.data.validation import validate_path
from rescue.testing.review_project import demo_samples, make_review_project

pytestmark = pytest.mark.slow

SRC = str(Path(__file__).parents[2] / "src")
PASSWORD = "correct horse battery"
FIRST = "demo_couple_riley_and_sam/001_session"
ENV = {**os.environ, "PYTHONPATH": SRC}


def _rescue(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rescue", *args], input=stdin, capture_output=True, text=True,
                          check=False, env=ENV, timeout=120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def lab(tmp_path, postgres_url) -> Iterator[tuple[Path, str, list[str]]]:
    """A project with accounts made through the CLI on PostgreSQL, served by two processes on one database."""
    project = make_review_project(tmp_path / "p", demo_samples(), media=False)
    for name, role in (("ann", "annotator"), ("bob", "annotator"), ("ada", "adjudicator")):
        result = _rescue("review", "user", "add", str(project), name, "--role", role, "--password-stdin", "--db",
                         postgres_url, stdin=PASSWORD + "\n")
        assert result.returncode == 0, result.stdout + result.stderr
    assert not (project / "review.db").exists()  # nothing went to the default SQLite file
    ports = [_free_port(), _free_port()]
    servers = [subprocess.Popen([sys.executable, "-m", "rescue", "review", "serve", str(project), "--port", str(port),
                                 "--db", postgres_url], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for port in ports]
    try:
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        deadline = time.monotonic() + 120  # both servers, on a machine that may be loaded
        for base, server in zip(bases, servers, strict=True):
            while True:
                try:
                    if httpx.get(base + "/api/me", timeout=2).status_code == 401:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline and server.poll() is None, "a server did not start"
                time.sleep(0.2)
        yield project, postgres_url, bases
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            server.communicate(timeout=60)


class Api:
    """One logged-in browser: the session lives in the database, so it works on either server."""

    def __init__(self, base: str, name: str, cookies: httpx.Cookies | None = None, csrf: str = ""):
        self.http = httpx.Client(base_url=base, timeout=30, cookies=cookies)
        if cookies is None:
            answer = self.http.post("/api/login", json={"name": name, "password": PASSWORD})
            assert answer.status_code == 200, answer.text
            csrf = answer.json()["csrf"]
        self.csrf = csrf

    def on(self, base: str) -> Api:
        return Api(base, "", self.http.cookies, self.csrf)

    def write(self, method: str, url: str, body: object = None) -> httpx.Response:
        return self.http.request(method, url, json=body, headers={"X-CSRF-Token": self.csrf})

    def row(self, index: int, copy: str = "final") -> dict:  # type: ignore[type-arg]
        answer = self.http.get(_seg(FIRST) + f"?copy={copy}")
        assert answer.status_code == 200, answer.text
        return answer.json()["rows"][index - 1]  # type: ignore[no-any-return]


def _seg(sample_id: str) -> str:
    return "/api/segments/" + quote(sample_id, safe="")


def test_two_server_processes_on_one_database_lose_no_update(lab):
    _, _, bases = lab
    ada = Api(bases[0], "ada")
    clients = [ada.on(bases[i % 2]) for i in range(6)]  # one session, used through both servers
    row_url = _seg(FIRST) + "/rows/5?copy=final"

    # The first save of a never-saved row: exactly one of the processes' INSERTs wins.
    with ThreadPoolExecutor(len(clients)) as pool:
        first = list(pool.map(lambda c: c.write("PUT", row_url, {"version": 0, "fields": {"tone_of_voice": "x"}}).status_code,
                              clients))
    assert sorted(first) == [200] + [409] * (len(clients) - 1)

    # Read-modify-write with retry on 409, through both processes at once: every confirmed change survives.
    def append(job: tuple[int, Api]) -> list[str]:
        number, client = job
        return append_tokens(client, row_url, client.row(5), [f"c{number}-{n}" for n in range(6)])

    with ThreadPoolExecutor(len(clients)) as pool:
        confirmed = [t for tokens in pool.map(append, enumerate(clients)) for t in tokens]
    final = clients[1].row(5)
    assert sorted(final["values"]["tone_of_voice"].split(";")[1:]) == sorted(confirmed)
    assert len(confirmed) == 6 * len(clients) and final["version"] == 1 + len(confirmed)
    edits = [e for e in clients[0].http.get(_seg(FIRST) + "/rows/5/audit").json() if e["action"] == "row.edit"]
    assert len(edits) == 1 + len(confirmed)


def test_two_server_processes_set_segment_states_at_once_without_errors(lab):
    """Discards, verifies and reopens of never-touched segments, racing across both processes: each read-then-
    write of a segment's state must not interleave with another's (no unique-constraint 500s)."""
    _, _, bases = lab
    ada = Api(bases[0], "ada")
    clients = [ada.on(bases[i % 2]) for i in range(8)]
    segments = [s["sample_id"] for s in ada.http.get("/api/segments").json()]
    for sample_id in segments:
        def act(i: int, sample_id: str = sample_id) -> int:
            client = clients[i]
            if i % 3 == 0:
                return client.write("POST", _seg(sample_id) + "/reopen?copy=final").status_code
            if i % 3 == 1:
                return client.write("POST", _seg(sample_id) + "/discard?copy=final",
                                    {"reason": "incomplete_context", "comment": f"try {i}"}).status_code
            return client.write("POST", _seg(sample_id) + "/comments", {"text": f"note {i}"}).status_code

        with ThreadPoolExecutor(len(clients)) as pool:
            codes = list(pool.map(act, range(len(clients))))
        assert all(code in (200, 201) for code in codes), codes
    seg = ada.http.get(_seg(segments[0]) + "?copy=final").json()
    assert len(seg["comments"]) == len([i for i in range(8) if i % 3 == 2])


def test_the_cli_works_on_postgresql_and_its_export_validates(lab, tmp_path):
    project, url, bases = lab
    assert _rescue("review", "assign", str(project), "--k", "2", "--db", url).returncode == 0
    ann, bob = Api(bases[0], "ann"), Api(bases[1], "bob")
    for client in (ann, bob):
        assert client.write("PUT", _seg(FIRST) + "/rows/1", {"version": 0, "fields": {"target": ["Sam"]}}).status_code == 200
        assert client.write("POST", _seg(FIRST) + "/verify").status_code == 200
    out = tmp_path / "out" / "verified.jsonl"
    result = _rescue("review", "export", str(project), "--out", str(out), "--db", url)
    assert result.returncode == 0, result.stdout + result.stderr
    report = validate_path(out)
    assert not report.errors and [s.sample_id for s in report.samples] == [FIRST]
    assert report.samples[0].rows[0].target == ["Sam"]
    result = _rescue("validate", "--data", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
