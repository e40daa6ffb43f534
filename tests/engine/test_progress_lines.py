"""A run in a log file is not silent (#42 item 10): where stderr is no terminal, the bars' counters are printed as
plain lines at a steady interval (``--progress-interval``) while the run works, not every bar at once at its end;
and the judge's bar counts the re-asks results.json counts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

from _cli import invoke_main
from _engine_support import held_script

from rescue.engine.progress import DEFAULT_PROGRESS_INTERVAL
from rescue.engine.run_options import option
from rescue.testing.openai_server import Reply, serve

ITP_ANSWER = Reply.json({"predictions": [{"id": "x", "answer": "no"}]})  # parsed or not, an answer


def test_the_default_interval_is_the_options_default():
    assert DEFAULT_PROGRESS_INTERVAL == option("progress_interval").default == 30.0


def test_a_run_piped_to_a_file_prints_progress_lines_while_it_works(tmp_path):
    release = threading.Event()
    log = tmp_path / "stderr.log"
    with serve(held_script(lambda body: ITP_ANSWER, release, after=2)) as server, log.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "rescue", "run", "--model", "m", "--base-url", server.base_url, "--tasks", "itp",
             "--limit-samples", "1", "--out", str(tmp_path / "run"), "--no-bertscore", "--concurrency", "1",
             "--progress-interval", "0.2"],
            env={**os.environ, "OPENAI_API_KEY": "k"}, stdout=subprocess.DEVNULL, stderr=err, text=True)
        try:
            # The run is held after two answers: lines must come while it waits, not only at its end.
            deadline = time.monotonic() + 120
            while not re.search(r"m · itp: 2/\d+ \(\d+%\), [^,]+, [^,]+, fail \d+ retry 0", log.read_text()):
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            while log.read_text().count("progress after") < 2:  # a steady interval: again while still held
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
        finally:
            release.set()
        assert process.wait(timeout=120) == 0, log.read_text()
    text = log.read_text()
    assert "\x1b[" not in text and "\r" not in text  # plain lines, no redrawn bars
    total = json.loads((tmp_path / "run" / "results.json").read_text())["models"]["m"]["itp"]["all"]["instances"]
    last = text.rsplit("progress after", 1)[1]
    assert f"m · itp: {total}/{total} (100%)" in last and ", done, " in last


def test_the_judge_bar_counts_the_re_asks_results_json_counts(tmp_path):
    def judge(body):
        if len(body["messages"]) == 1:  # a first attempt: not a grade, so it is asked again with the error
            return Reply.text("I would rather not say.")
        return Reply.json({"emotion_score": 4, "notes": "close"})

    with serve(judge) as server:
        result = invoke_main(["run", "--out", str(tmp_path / "run"), "--model", "baseline/majority", "--tasks", "er",
                              "--judge", "j", "--judge-base-url", server.base_url, "--no-bertscore",
                              "--limit-samples", "1", "--progress-interval", "600"], env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.output
    usage = json.loads((tmp_path / "run" / "results.json").read_text())["models"]["baseline/majority"]["usage"]
    reasked = usage["judge"]["er"][0]["retries"]
    assert reasked > 0
    lines = [line for line in result.stderr.splitlines() if "er judge:" in line]
    assert lines and lines[-1].endswith(f"fail 0 retry {reasked}"), result.stderr


def test_the_media_bar_of_a_video_run_is_told_in_plain_lines_too(capsys):
    # Video mode makes every frame and clip before the first request, under a bar of its own: in a log file it
    # is told as plain lines too, with no failure or retry counts it does not keep.
    from rescue.video._context import _progress

    with _progress(True, 4, 2) as tick:
        tick()
        tick()
    err = capsys.readouterr().err
    assert "media · 2 files: 2/4 (50%)" in err and "progress after" in err and "fail" not in err, err
