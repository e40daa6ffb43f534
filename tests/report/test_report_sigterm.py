"""Every SIGTERM ends ``rescue report`` with rescue's message and exit 143 (#42 item 9): a real ``python -m rescue
report`` process, signalled at a spread of moments from its start (its imports, which Python's default handler
ended without a word, exit -15) to its end (the interpreter exiting; a collector's weakref callback, where the
handler's exception was only printed and the report went on to exit 0; Python's finalization, which resets every
handler to the default first).

Where the signal finds no handler of rescue's (read from /proc at that moment), the process must still be in the
interpreter's own start: below the memory of importing what the launcher imports, far below the command's."""

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
from rescue.errors import EXIT_TERMINATED, TERMINATED_MESSAGE

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")]

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "majority"
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--model", "baseline/majority", "--quiet",
                                      "--tasks", "itp,rpp", "--no-bertscore"])
    assert result.exit_code == 0, result.output
    return out


def _status(pid: int) -> tuple[bool, int]:
    """Whether the process has a SIGTERM handler (SigCgt), and its resident memory in KiB (0 once gone)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return True, 0
    fields = {line.split(":")[0]: line.split(":", 1)[1].split() for line in lines if ":" in line}
    caught = int(fields.get("SigCgt", ["0"])[0], 16)
    return bool(caught & (1 << (signal.SIGTERM - 1))), int(fields.get("VmRSS", ["0"])[0])


def _rss_after(statement: str) -> int:
    code = f"{statement}\nprint([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1])"
    return int(subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True,
                              check=True).stdout)


def _signalled(command: list[str], delay: float) -> tuple[int, str, bool, int]:
    process = subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    handled, rss = _status(process.pid)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    return process.returncode, err, handled, rss


def test_every_sigterm_ends_a_report_with_rescues_message(run_dir, tmp_path):
    command = [sys.executable, "-m", "rescue", "report", str(run_dir), "--out", str(tmp_path / "r"), "-q",
               "--bootstrap", "100"]
    # The memory of the interpreter with what the launcher imports, and with the whole command's imports.
    launcher, imported = _rss_after("import rescue._launch"), _rss_after("import rescue.cli")
    start = time.monotonic()
    _rss_after("import rescue._launch")
    started = time.monotonic() - start  # the interpreter's start and the launcher's imports, at this load
    start = time.monotonic()
    whole = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=300)
    took = time.monotonic() - start
    assert whole.returncode == 0, whole.stderr
    # The interpreter's start, the command's imports (the window Python's default handler had) and its end.
    delays = [0.0, started / 2, *(started + d for d in (0.0, 0.03, 0.06, 0.1, 0.15, 0.2, 0.3, 0.45)), took / 2,
              *(took * f for f in (0.85, 0.9, 0.95, 0.98, 1.0, 1.02))]
    outcomes = []
    for delay in delays:
        code, err, handled, rss = _signalled(command, delay)
        outcomes.append((round(delay, 3), code, handled, rss))
        lines = err.strip().splitlines()
        if code == -signal.SIGTERM:
            # Only the interpreter's own start is left to the default handler: before the launcher's first line
            # (below the memory of its imports). Its exit was not: Python resets every handler as it begins to
            # finalize, then tears down the report's modules (2.3 s at load 13, where the signal ended it silently).
            assert not handled and rss < (launcher + imported) / 2, (delay, took, rss, launcher, imported, err)
        elif code == 0:
            assert "Terminated" not in err and "Traceback" not in err, err  # the signal came after the end
        else:
            assert code == EXIT_TERMINATED and lines and lines[-1] == TERMINATED_MESSAGE, (delay, code, err)
            assert "Traceback" not in err, err
    print("\n(delay s, exit, handler installed, RSS KiB):", outcomes, f"launcher {launcher} KiB, command {imported} KiB")
    assert sum(code == EXIT_TERMINATED for _d, code, _h, _r in outcomes) >= 5  # the signal met the command


def test_rescues_handler_holds_from_the_launchers_first_line_to_the_exit(run_dir, tmp_path):
    """Watched over a whole report (every millisecond): once rescue's SIGTERM handler is in place it stays until
    the process is gone. Python's finalization dropped it for the last seconds of every report."""
    process = subprocess.Popen([sys.executable, "-m", "rescue", "report", str(run_dir), "--out", str(tmp_path / "r"),
                                "-q", "--bootstrap", "100"], env=ENV, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    first = lost = None
    while process.poll() is None:
        try:
            status = Path(f"/proc/{process.pid}/status").read_text()
        except OSError:
            break
        if "State:\tZ" in status:  # exited, not yet reaped: its handlers are gone with it
            break
        handled, _rss = _status(process.pid)
        now = time.monotonic() - start
        if handled and first is None:
            first = now
        if first is not None and not handled and lost is None:
            lost = now
        time.sleep(0.001)
    _, err = process.communicate(timeout=120)
    took = time.monotonic() - start
    assert process.returncode == 0, err
    assert first is not None and lost is None, f"handler from {first} s, lost at {lost} s of {took:.2f} s"
