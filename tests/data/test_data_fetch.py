"""`rescue data fetch` against a real HTTP server on 127.0.0.1, and against a port where nothing listens."""

from __future__ import annotations

import hashlib
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from data_helpers import couple_record, run_cli, write_jsonl

from rescue.data import fetch
from rescue.data.loading import demo_path


class _TruncatingHandler(http.server.BaseHTTPRequestHandler):
    """Promises 10,000 bytes and sends 10, as a dropped connection would."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "10000")
        self.end_headers()
        self.wfile.write(b'{"sample_')

    def log_message(self, *args: object) -> None:
        pass


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _serve(handler) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def served(tmp_path) -> Iterator[tuple[str, Path]]:
    """A folder served over HTTP on 127.0.0.1: (base URL, folder)."""
    root = tmp_path / "www"
    root.mkdir()
    (root / "demo.jsonl").write_bytes(demo_path().read_bytes())
    yield from ((base, root) for base in _serve(partial(_QuietFiles, directory=str(root))))


@pytest.fixture
def refused_url() -> str:
    # A port that was just free: nothing listens there, so connecting is refused at once.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/benchmark_191.jsonl"


def test_the_release_url_is_pinned_to_the_commit_named_in_the_data_readme():
    assert fetch.RELEASE_URL == (
        "https://raw.githubusercontent.com/Tomsawyerhu/RESCUE-bench/"
        "0d0b0793e23157c7af76d1d301e63fc705b27f2a/data/benchmark_191.jsonl"
    )


def test_fetch_downloads_checks_and_validates(served, tmp_path, capsys, monkeypatch):
    base, root = served
    dest = tmp_path / "data"
    expected_sha = hashlib.sha256((root / "demo.jsonl").read_bytes()).hexdigest()

    code, out, _ = run_cli(
        ["data", "fetch", "--url", f"{base}/demo.jsonl", "--dest", str(dest), "--sha256", expected_sha],
        capsys,
        monkeypatch,
    )

    assert code == 0
    assert (dest / "demo.jsonl").read_bytes() == (root / "demo.jsonl").read_bytes()
    assert f"sha256 {expected_sha}" in out.splitlines()
    assert "4 samples valid, 0 warning(s)" in out
    assert sorted(p.name for p in dest.iterdir()) == ["demo.jsonl"]  # no temporary file left behind


def test_progress_is_reported_in_bytes(served, tmp_path):
    base, root = served
    seen: list[tuple[int, int | None]] = []
    result = fetch.fetch_release(
        tmp_path, url=f"{base}/demo.jsonl", expected_samples=4, progress=lambda done, total: seen.append((done, total))
    )
    size = (root / "demo.jsonl").stat().st_size
    assert result.size == size and seen[-1] == (size, size)
    assert result.report.samples[0].sample_id == "demo_couple_riley_and_sam/001_session"


class _AnyPath(http.server.BaseHTTPRequestHandler):
    """The demo data at every path, whatever the URL spells (issue 33 item 5: the URL's last part names the file)."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook's name
        body = demo_path().read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("tail", ["a/%2e%2e", "%2e%2e", "con", "a%0ab.jsonl", "%1b%5b2J.jsonl", "", "x" * 300])
def test_a_url_whose_last_part_cannot_be_a_file_name_gets_the_default_name(tmp_path, tail):
    dest = tmp_path / "data" / "release"
    for base in _serve(_AnyPath):
        result = fetch.fetch_release(dest, url=f"{base}/{tail}", expected_samples=4)
    assert result.path == dest / fetch.DEFAULT_NAME and result.path.is_file()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["data", "release", fetch.DEFAULT_NAME]


def test_the_official_url_must_hold_191_samples(served, tmp_path):
    base, _ = served
    with pytest.raises(fetch.FetchError, match=r"holds 4 valid samples, expected 191"):
        fetch.fetch_release(tmp_path, url=f"{base}/demo.jsonl")


def test_no_network_says_so_plainly(refused_url, tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(["data", "fetch", "--url", refused_url, "--dest", str(tmp_path)], capsys, monkeypatch)
    assert code == 2
    assert "error: cannot reach 127.0.0.1" in err
    assert "There seems to be no network here" in err
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(fetch.NoNetworkError):
        fetch.download(refused_url, tmp_path / "x.jsonl")


def test_a_checksum_mismatch_keeps_nothing(served, tmp_path, capsys, monkeypatch):
    base, _ = served
    code, _, err = run_cli(
        ["data", "fetch", "--url", f"{base}/demo.jsonl", "--dest", str(tmp_path / "d"), "--sha256", "0" * 64],
        capsys,
        monkeypatch,
    )
    assert code == 2
    assert f"checksum mismatch: expected sha256 {'0' * 64}, got " in err
    assert list((tmp_path / "d").iterdir()) == []


def test_http_errors_are_reported(served, tmp_path, capsys, monkeypatch):
    base, _ = served
    code, _, err = run_cli(
        ["data", "fetch", "--url", f"{base}/missing.jsonl", "--dest", str(tmp_path)], capsys, monkeypatch
    )
    assert code == 2
    assert f"error: {base}/missing.jsonl: the server answered HTTP 404 File not found" in err


def test_an_interrupted_download_leaves_no_file(tmp_path):
    for base in _serve(_TruncatingHandler):
        with pytest.raises(fetch.FetchError, match="the download failed"):
            fetch.download(f"{base}/benchmark_191.jsonl", tmp_path / "benchmark_191.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_a_download_that_does_not_validate_is_kept_for_inspection(served, tmp_path):
    base, root = served
    bad = couple_record()
    bad["rows"][0]["internal_emotion"][0]["intensity"] = 42
    write_jsonl(root / "bad.jsonl", [bad])
    with pytest.raises(fetch.FetchError, match=r"has 1 validation error\(s\); run `rescue validate --data"):
        fetch.fetch_release(tmp_path, url=f"{base}/bad.jsonl", expected_samples=None)
    assert json.loads((tmp_path / "bad.jsonl").read_text(encoding="utf-8"))["sample_id"] == bad["sample_id"]
