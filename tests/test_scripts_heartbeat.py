"""scripts/test.sh talks while a long step runs: a heartbeat line (elapsed time and the step) at least every 30 s."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def _beat(command: str, interval: str = "1") -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", f"source {SCRIPTS / 'heartbeat.sh'}; {command}"], capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "HEARTBEAT_S": interval}, timeout=60)


def test_beat_prints_the_step_and_elapsed_time_while_a_command_runs() -> None:
    done = _beat('beat "compiling llama.cpp" sleep 3.5; echo finished')
    assert done.returncode == 0
    beats = [line for line in done.stderr.splitlines() if "compiling llama.cpp" in line]
    assert beats, done.stderr
    assert all(re.search(r"\d+m\d{2}s elapsed", line) for line in beats)
    assert done.stdout.strip() == "finished"


def test_beat_returns_the_command_status_and_stops_ticking() -> None:
    done = _beat('beat "failing step" bash -c "exit 7"; echo "status $?"; sleep 2.5', interval="1")
    assert "status 7" in done.stdout
    # The ticker ended with the command: nothing is printed during the 2.5 s after it.
    assert "failing step" not in done.stderr


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
