"""What the benchmarks share: a release-sized dataset, the oracle test server in its own process, and
timing of child processes (wall clock, CPU and their own peak memory, start-up included)."""

from __future__ import annotations

import argparse

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The real samples live next to the repository (../shared), outside a fresh clone.
REAL_DATA = REPO.parent / "shared" / "data" / "rescue" / "rescue_subset.jsonl"
RELEASE_SAMPLES = 191  # the full RESCUE-Bench release: 174 couple + 17 family samples
CLOSED_TASKS = ("itp", "rpp", "stp", "ssp")


def run_arguments(description: str, *, samples: int, tasks: str, batch_size: str) -> argparse.ArgumentParser:
    """The options every run benchmark shares; each adds its own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=Path, default=None, help="release-format .jsonl (default: the real samples)")
    parser.add_argument("--samples", type=int, default=samples, help="scale the data to this many samples (0: as is)")
    parser.add_argument("--tasks", default=tasks)
    parser.add_argument("--batch-size", default=batch_size, help="rescue's --batch-size")
    parser.add_argument("--concurrency", type=int, default=32)
    return parser


def default_source(data: Path | None = None) -> Path:
    """The data a benchmark measures, said on stderr: ``data`` (--data) when given, else the real samples beside the
    checkout, else the bundled demo data, with a line saying the figures are then the demo's."""
    if data is not None:
        if not data.is_file():
            raise SystemExit(f"--data {data}: no such file")
        print(f"benchmark data: {data} (--data)", file=sys.stderr)
        return data
    if REAL_DATA.exists():
        print(f"benchmark data: the real samples, {REAL_DATA}", file=sys.stderr)
        return REAL_DATA
    from rescue.data.loading import demo_path

    print(f"benchmark data: the bundled DEMO data ({demo_path()}): the real samples are not at {REAL_DATA}, so "
          "these figures are not the real samples'; pass --data FILE to measure other data", file=sys.stderr)
    return demo_path()


def write_scaled(source: Path, count: int, dest: Path) -> Path:
    """``count`` samples in release format: the source samples repeated, copies renamed ``<id>_copyN``
    (the group folder, which decides couple/family, is kept)."""
    records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not records:
        raise SystemExit(f"{source}: no samples")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w", encoding="utf-8") as out:
        for n in range(count):
            record = dict(records[n % len(records)])
            copy = n // len(records)
            if copy:
                record["sample_id"] = f"{record['sample_id']}_copy{copy}"
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return dest


def rescue_command() -> list[str]:
    """The installed ``rescue`` console script next to this interpreter (what a user runs)."""
    script = Path(sys.executable).with_name("rescue")
    return [str(script)] if script.exists() else [sys.executable, "-m", "rescue"]


@dataclass
class ChildRun:
    seconds: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    stderr: str
    cpu_s: float = 0.0  # user + system CPU seconds of the process


def run_child(command: list[str], env: dict[str, str] | None = None, check: bool = True) -> ChildRun:
    """Run a process to completion: wall time from spawn to exit, its CPU and its own peak resident memory.

    The command runs under ``_peak.py``, which forks it afresh and reaps it with ``wait4``: the rusage of
    that one process (with any children it reaped), where ru_maxrss is its own peak rather than one carried
    over from this benchmark's memory (see ``_peak.py``). Output goes to temporary files, which cannot fill
    up like pipes.
    """
    launcher = [sys.executable, "-S", str(Path(__file__).with_name("_peak.py"))]
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        report = Path(folder) / "rusage.json"
        subprocess.run([*launcher, str(report), *command], stdout=out, stderr=err,
                       env={**os.environ, **(env or {})}, cwd=REPO, check=True)
        usage = json.loads(report.read_text(encoding="utf-8"))
        out.seek(0)
        err.seek(0)
        result = ChildRun(
            usage["seconds"], usage["peak_rss_kib"] / 1024, usage["returncode"],
            out.read().decode(errors="replace"), err.read().decode(errors="replace"), usage["cpu_s"],
        )
    if check and result.returncode != 0:
        raise SystemExit(
            f"command failed ({result.returncode}): {' '.join(command)}\n{result.stderr[-3000:]}{result.stdout[-2000:]}"
        )
    return result


@dataclass
class OracleServer:
    base_url: str
    process: subprocess.Popen[str]
    log_path: Path
    stats_path: Path

    def bodies(self) -> list[dict]:
        return [json.loads(line) for line in self.log_path.read_text(encoding="utf-8").splitlines()]

    def stats(self) -> dict:
        return json.loads(self.stats_path.read_text(encoding="utf-8"))

    def dump(self) -> None:
        """Ask the server to write its request log and counters (SIGUSR1), and wait until it has."""
        import signal

        self.stats_path.unlink(missing_ok=True)
        self.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 30
        while not self.stats_path.exists():
            if time.monotonic() > deadline:
                raise SystemExit("the oracle server did not write its log")
            time.sleep(0.05)


@contextmanager
def oracle_server(
    data: Path, tasks: list[str], workdir: Path, *, latency: float, mode: str = "dialogue", batch_size: str = "1"
) -> Iterator[OracleServer]:
    """The scripted server (``_server.py``) in its own process, so that it never shares a CPU core's
    interpreter lock with a client being measured."""
    workdir.mkdir(parents=True, exist_ok=True)
    log_path, stats_path = workdir / "requests.jsonl", workdir / "server-stats.json"
    command = [
        sys.executable, str(Path(__file__).with_name("_server.py")), "--data", str(data), "--tasks", ",".join(tasks),
        "--latency", str(latency), "--mode", mode, "--batch-size", batch_size, "--log", str(log_path), "--stats", str(stats_path),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("READY "):
        process.kill()
        raise SystemExit(f"the oracle server did not start: {line!r}")
    try:
        yield OracleServer(line.split(" ", 1)[1], process, log_path, stats_path)
    finally:
        process.terminate()
        process.wait(timeout=30)


def fresh_dir(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def print_table(title: str, rows: list[tuple[str, str]]) -> None:
    width = max(len(name) for name, _ in rows)
    print(f"\n{title}")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
