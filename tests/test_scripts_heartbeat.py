"""scripts/test.sh talks while a long step runs: a heartbeat line (elapsed time and the step) at least every 30 s."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def _beat(command: str, interval: str = "1") -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", f"source {SCRIPTS / 'heartbeat.sh'}; {command}"], capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "HEARTBEAT_S": interval}, timeout=60)


def test_beat_prints_the_step_and_elapsed_time_while_a_command_runs(tmp_path: Path) -> None:
    log = tmp_path / "beats.txt"
    # The command runs until a beat is out (at most 30 s), not for a fixed 3.5 s a loaded machine could outlast
    # before the ticker's first beat.
    done = _beat(f'beat "compiling llama.cpp" timeout 30 bash -c \'until grep -q elapsed "$1"; do sleep 0.05; done\' '
                 f'_ {log} 2>{log}; cat {log} >&2; echo finished')
    assert done.returncode == 0
    beats = [line for line in done.stderr.splitlines() if "compiling llama.cpp" in line]
    assert beats, done.stderr
    assert all(re.search(r"\d+m\d{2}s elapsed", line) for line in beats)
    assert done.stdout.strip() == "finished"


def test_beat_returns_the_command_status_and_stops_ticking() -> None:
    # Beats and the status on one stream, in the order written: a beat while the command ran (a loaded machine
    # can take a second to start it) is right; one after the command returned is not.
    done = _beat('{ beat "failing step" bash -c "exit 7"; echo "status $?"; sleep 2.5; } 2>&1', interval="1")
    assert "status 7" in done.stdout
    # The ticker ended with the command: nothing is printed during the 2.5 s after it.
    assert "failing step" not in done.stdout.split("status 7", 1)[1]


def test_every_long_step_of_test_sh_runs_under_the_heartbeat() -> None:
    text = (SCRIPTS / "test.sh").read_text(encoding="utf-8")
    assert "source scripts/heartbeat.sh" in text
    default = re.search(r"HEARTBEAT_S:-(\d+)", (SCRIPTS / "heartbeat.sh").read_text(encoding="utf-8"))
    assert default is not None and int(default.group(1)) <= 30
    long_steps = [line for line in text.splitlines()
                  if re.search(r'"\$\{PIP\[@\]\}"|apt_install [a-z]|-m (pytest|mypy|ruff)', line)
                  and not line.lstrip().startswith("#")]
    assert len(long_steps) >= 8
    for line in long_steps:
        assert line.lstrip().startswith("beat "), f"a long step without a heartbeat: {line.strip()}"
