"""The benchmarks measure a child's own peak memory (issue 34 item 7): Linux carries ru_maxrss across fork and
execve, so a child that subprocess starts from the benchmark's memory map (vfork) reported at least the
benchmark's own peak. ``benchmarks/_support.run_child`` starts it through ``_peak.py``, a fresh fork."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

# A parent that has peaked at 400 MB, then measures two children: one that holds 100 MB and one that does nothing.
PARENT = f"""import sys
sys.path.insert(0, {str(BENCHMARKS)!r})
from _support import run_child
big = bytearray(400 << 20)
for i in range(0, len(big), 4096):
    big[i] = 1
del big
held = run_child([sys.executable, "-c", "x = bytearray(100 << 20)\\nfor i in range(0, len(x), 4096): x[i] = 1"])
idle = run_child([sys.executable, "-c", "pass"])
failed = run_child([sys.executable, "-c", "raise SystemExit(3)"], check=False)
print(held.peak_rss_mb, idle.peak_rss_mb, held.cpu_s, failed.returncode)
"""


def test_run_child_reports_the_childs_own_peak_not_the_benchmarks():
    done = subprocess.run([sys.executable, "-c", PARENT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    held, idle, cpu, code = done.stdout.split()
    assert 100 <= float(held) < 200  # its 100 MB and the interpreter, not the parent's 400
    assert float(idle) < 60
    assert 0 < float(cpu) < 5 and int(code) == 3
