"""SIGTERM ends every command as Ctrl-C does (issue #33, item 8): a real ``rescue data fetch`` child,
mid-download from a server that trickles its body, is sent SIGTERM: one line, exit 143, no traceback, and the
download's temporary file is removed (a file is written whole or not at all)."""

from __future__ import annotations

import http.server
import os
import signal
import subprocess
import sys
import threading
import time

import pytest


class _Trickle(http.server.BaseHTTPRequestHandler):
    stop = threading.Event()

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Length", str(10_000_000))
        self.end_headers()
        self.wfile.write(b'{"sample_id": "s1"' + b" " * 4096)
        self.wfile.flush()
        self.stop.wait(60)  # the rest never comes while the test runs

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.mark.slow
def test_sigterm_mid_download_exits_143_and_leaves_no_partial_file(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    dest = tmp_path / "data"
    try:
        process = subprocess.Popen([sys.executable, "-m", "rescue", "data", "fetch", "--dest", str(dest), "--url",
                                    f"http://127.0.0.1:{server.server_address[1]}/release.jsonl"],
                                   env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not (dest.exists() and any(dest.iterdir())):  # the temporary file is being written
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    finally:
        _Trickle.stop.set()
        server.shutdown()
    assert process.returncode == 143, stderr
    assert "terminated (SIGTERM)." in stderr and "Traceback" not in stderr
    assert list(dest.iterdir()) == []
