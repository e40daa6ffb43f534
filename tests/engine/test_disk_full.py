"""A full disk is a message (issue #22.10): ``run``, ``report`` and ``review export`` say what is full and that
nothing was lost (exit 2, no traceback), and a rerun once space is free completes; ``review serve`` answers
507 with a message the page shows, the edit staying in the browser until it is saved again.

The disk is real: a small tmpfs mounted for the test (root only; skipped, saying why, elsewhere) and filled up.
"""

from __future__ import annotations

import json
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
from _cli import invoke_main
from _engine_support import itp_instances, oracle_answers, oracle_script, settled_count

from rescue.testing.openai_server import serve


@contextmanager
def small_disk(path: Path, size_kb: int):
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({mounted.stderr.strip() or 'not root'})")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path, leave_kb: int = 0) -> Path:
    """Fill ``disk`` until about ``leave_kb`` KiB are left; the filler file, to delete to free the space."""
    import os

    filler = disk / "filler"
    block = b"\0" * 4096
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, block)
    except OSError:
        pass
    finally:
        os.close(fd)
    if leave_kb:
        with filler.open("r+b") as handle:
            handle.truncate(max(0, filler.stat().st_size - leave_kb * 1024))
    return filler


def _assert_disk_message(result) -> None:
    assert result.exit_code == 2, result.output
    assert "disk is full" in result.output and "Nothing was lost" in result.output, result.output
    assert "Traceback" not in result.output


def _run(out: Path, url: str):
    return invoke_main(["run", "--out", str(out), "--model", "m", "--base-url", url, "--tasks", "itp",
                        "--limit-samples", "2", "--no-bertscore", "--quiet", "--max-retries", "0"],
                       env={"OPENAI_API_KEY": "test"})


@pytest.mark.parametrize("leave_kb", [0, 8, 48, 120])
def test_a_run_on_a_full_disk_says_so_and_the_rerun_completes(tmp_path, leave_kb):
    instances = itp_instances(2)
    with small_disk(tmp_path / "disk", 1024) as disk, serve(oracle_script(oracle_answers("itp", instances))) as server:
        filler = fill(disk, leave_kb)
        out = disk / "run"
        first = _run(out, server.base_url)
        asked = settled_count(server)
        if first.exit_code != 0 or leave_kb == 0:  # with no space at all it cannot succeed
            _assert_disk_message(first)
        results = out / "results.json"
        if results.exists():
            json.loads(results.read_text())  # whole, never cut off
        filler.unlink()
        second = _run(out, server.base_url)
        assert second.exit_code == 0, second.output
        assert server.request_count - asked <= len(instances)  # answers stored before the disk filled are reused
    assert second.exit_code == 0


@pytest.mark.parametrize("leave_kb", [0, 8, 24, 40])
def test_a_report_on_a_full_disk_says_so_and_writes_nothing(tmp_path, itp_run_dir, leave_kb):
    with small_disk(tmp_path / "disk", 512) as disk:
        fill(disk, leave_kb)
        result = invoke_main(["report", str(itp_run_dir), "--out", str(disk / "X"), "--bootstrap", "20",
                              "--no-figures"])
        left = [p for p in (disk / "X").rglob("*") if p.is_file()] if (disk / "X").exists() else []
        if result.exit_code == 0 and leave_kb:  # it fitted: then all of it
            assert (disk / "X" / "report.html").is_file() and (disk / "X" / "leaderboard.md").is_file()
        else:
            _assert_disk_message(result)
            assert left == []


@pytest.fixture(scope="module")
def review_project(tmp_path_factory):
    from rescue.testing.review_project import make_review_project

    return make_review_project(tmp_path_factory.mktemp("review-full") / "proj", max_seconds=30, media=False)


def test_review_export_on_a_full_disk_says_so(tmp_path, review_project):
    db = f"sqlite:///{tmp_path / 'review.db'}"
    with small_disk(tmp_path / "disk", 256) as disk:
        fill(disk)
        result = invoke_main(["review", "export", str(review_project), "--db", db, "--out", str(disk / "v.jsonl")])
        _assert_disk_message(result)
        named = result.output.replace("\n", "")  # which file could not be written (#33.7): the data or its sidecar
        assert f"{disk / 'v.jsonl'}:" in named or f"{disk / 'v.provenance.json'}:" in named, result.output
        assert not (disk / "v.jsonl").exists()


@pytest.mark.parametrize("leave_kb", [0, 4])
def test_review_answers_507_on_a_full_disk_and_the_same_save_succeeds_once_space_is_free(tmp_path, review_project,
                                                                                          leave_kb):
    import httpx
    from review_helpers import FIRST, PASSWORD, Server, make_app, seg_url

    with small_disk(tmp_path / "disk", 1024) as disk:
        running = Server(make_app(review_project, disk / "review.db"))
        try:
            client = httpx.Client(base_url=running.url, timeout=30)
            login = client.post("/api/login", json={"name": "ann", "password": PASSWORD})
            csrf = {"X-CSRF-Token": login.json()["csrf"]}
            version = client.get(seg_url(FIRST)).json()["rows"][0]["version"]
            filler = fill(disk, leave_kb)
            edit = {"version": version, "fields": {"tone_of_voice": "calm, " * 1400}}
            statuses = []
            for _ in range(3):  # SQLite may still fit a first write in its WAL; the disk fills soon after
                answer = client.put(seg_url(FIRST) + "/rows/1", json=edit, headers=csrf)
                statuses.append(answer.status_code)
                if answer.status_code != 200:
                    break
                edit["version"] = answer.json()["version"]
            assert answer.status_code == 507, statuses
            assert "disk is full" in answer.json()["detail"] and "kept in this browser" in answer.json()["detail"]
            filler.unlink()
            again = client.put(seg_url(FIRST) + "/rows/1", json=edit, headers=csrf)  # what the page sends again
            assert again.status_code == 200, again.text
            assert client.get(seg_url(FIRST)).json()["rows"][0]["values"]["tone_of_voice"].startswith("calm, ")
        finally:
            running.stop()
