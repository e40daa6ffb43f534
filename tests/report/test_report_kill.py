"""A report killed while it writes leaves no empty or half-written file, and the next report cleans up after it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue.cli import app

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def _hidden_temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob(".*.tmp") if p.is_file()]


def _visible_files(folder: Path) -> list[Path]:
    # Files inside a hidden folder (a killed report's staging folder, .report.PID.tmp/) are not the report's.
    return [p for p in folder.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "majority"
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--model", "baseline/majority", "--quiet",
                                      "--tasks", "itp,rpp,stp,ssp", "--no-bertscore"])
    assert result.exit_code == 0, result.output
    return out


def _report_command(run_dir: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "rescue", "report", str(run_dir), "--out", str(out), "--bootstrap", "300", "-q"]


def test_a_report_killed_while_writing_leaves_only_whole_files(run_dir, tmp_path):
    out = tmp_path / "report"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    kills = 0
    seen: dict[Path, set[bytes]] = {}
    for delay in (0.0, 0.1, 0.3, 0.6, 1.0, 1.5):
        # Kill at a spread of moments after the report has begun writing (its folder holds a first file).
        process = subprocess.Popen(_report_command(run_dir, out), env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            if out.exists() and any(out.iterdir()):
                time.sleep(delay)
                process.send_signal(signal.SIGKILL)
                kills += 1
                break
            time.sleep(0.005)
        process.wait(timeout=60)
        for path in _visible_files(out) if out.exists() else []:
            assert path.stat().st_size > 0, f"{path.name} is empty after a kill"
            seen.setdefault(path.relative_to(out), set()).add(path.read_bytes())
    assert kills >= 1, "the report finished before it could be killed mid-write"

    done = subprocess.run(_report_command(run_dir, out), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert _hidden_temporaries(out) == [], "a finished report leaves no temporary file of a killed one"
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [], "a killed report's staging folder is left"
    # The report is deterministic (seeded bootstrap), so a whole file left by a killed report is byte for byte
    # the finished report's; anything else was cut. Files carrying the time they were made are checked by shape.
    for name, versions in seen.items():
        final = (out / name).read_bytes()
        for version in versions:
            if version != final:
                assert name.suffix in {".html", ".png", ".svg", ".pdf"}, f"{name} was left half-written"
                if name.suffix == ".html":
                    assert version.rstrip().endswith(b"</html>"), f"{name} was left half-written"
                if name.suffix == ".svg":
                    assert version.rstrip().endswith(b"</svg>"), f"{name} was left half-written"
                if name.suffix == ".png":
                    assert version.endswith(b"IEND\xaeB`\x82"), f"{name} was left half-written"
                if name.suffix == ".pdf":
                    assert b"%%EOF" in version[-64:], f"{name} was left half-written"
