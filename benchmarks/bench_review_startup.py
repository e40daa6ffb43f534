"""(r) How soon `rescue review serve` answers: the import of ``rescue.review.api`` and the first page.

Import: ``python -X importtime -c "import rescue.review.api"``, the cumulative microseconds of that module.
First page: a project folder holding the real samples (or the demo data) as ``draft.jsonl``, one admin
account; ``rescue review serve`` is started and the clock runs until ``GET /login`` answers 200, then until
the logged-in dashboard (``GET /``) does. Each measurement is repeated; min and median are shown (a loaded
machine's noise only ever adds time, so the min is the best estimate of the cost). Beside the wall-clock time
the CPU time (user + system) of the process is shown, which a busy machine disturbs far less.
Run: ``python benchmarks/bench_review_startup.py [--runs 5]``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _support import default_source, print_table, rescue_command

PASSWORD = "benchmark password"


def import_seconds() -> tuple[float, float]:
    """The import's cumulative time as -X importtime reports it, and the CPU seconds of the whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", "import rescue.review.api"],
                            capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # The package is listed twice (once inside rescue.review's own import): the top-level line is the largest.
    found = re.findall(r"\|[ ]*(\d+)[ ]*\|[ ]*rescue\.review\.api[ ]*$", result.stderr, re.MULTILINE)
    assert found, result.stderr[-500:]
    return max(int(value) for value in found) / 1e6, cpu


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def first_page(project: Path) -> tuple[float, float, float]:
    """Seconds from starting the server to the login page, to the logged-in dashboard, and the server's CPU
    seconds until the login page."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    start = time.perf_counter()
    server = subprocess.Popen([*rescue_command(), "review", "serve", str(project), "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(timeout=60) as client:
            while True:
                try:
                    if client.get(base + "/login").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if server.poll() is not None:
                    raise RuntimeError("the server exited")
                time.sleep(0.02)
            login_page = time.perf_counter() - start
            cpu = _cpu_seconds(server.pid)
            client.post(base + "/api/login", json={"name": "lee", "password": PASSWORD}).raise_for_status()
            client.get(base + "/").raise_for_status()
            dashboard = time.perf_counter() - start
    finally:
        server.terminate()
        server.wait(timeout=30)
    return login_page, dashboard, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data", type=Path, default=None, help="release-format .jsonl (default: the real samples)")
    args = parser.parse_args()
    source = default_source(args.data)
    imports = [import_seconds() for _ in range(args.runs)]
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        shutil.copyfile(source, project / "draft.jsonl")
        subprocess.run([*rescue_command(), "review", "user", "add", str(project), "lee", "--role", "admin",
                        "--password-stdin"], input=PASSWORD + "\n", text=True, check=True, capture_output=True,
                       env={**os.environ})
        pages = [first_page(project) for _ in range(args.runs)]
    def shown(values: list[float]) -> str:
        return f"min {min(values):.2f} s, median {statistics.median(values):.2f} s ({len(values)} runs)"

    print_table(f"review start-up ({source.name}, load average {os.getloadavg()[0]:.1f})", [
        ("import rescue.review.api", shown([i[0] for i in imports])),
        ("  CPU of that python -c", shown([i[1] for i in imports])),
        ("serve -> GET /login 200", shown([p[0] for p in pages])),
        ("  CPU of the server until then", shown([p[2] for p in pages])),
        ("serve -> logged-in GET /", shown([p[1] for p in pages])),
    ])


if __name__ == "__main__":
    main()
