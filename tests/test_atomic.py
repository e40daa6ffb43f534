"""The one atomic writer (issue #25, item 5): whole or absent, temporaries named ``.NAME.PID.tmp`` beside the
target and gone afterwards, modes that follow the umask, and one file shared by threads written in turns."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from rescue.atomic import (
    atomic_output,
    move_into_place,
    process_alive,
    process_started,
    remove_stale_temporaries,
    temporary_path,
    write_all_atomic,
    write_atomic,
)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_write_atomic_replaces_whole_and_leaves_no_temporary(tmp_path: Path):
    target = tmp_path / "results.json"
    target.write_text("old", encoding="utf-8")
    write_atomic(target, "new é")
    assert target.read_text(encoding="utf-8") == "new é"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()


def test_temporary_name_is_hidden_beside_the_target_and_names_the_process(tmp_path: Path):
    assert temporary_path(tmp_path / "a.mp4") == tmp_path / f".a.mp4.{os.getpid()}.tmp"


def test_a_failed_block_leaves_the_old_file_and_no_temporary(tmp_path: Path):
    target = tmp_path / "clip.mp4"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_output(target) as temporary:
        temporary.write_bytes(b"half")
        raise RuntimeError("ffmpeg died")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4"]


def test_a_block_that_writes_nothing_leaves_nothing(tmp_path: Path):
    with pytest.raises(FileNotFoundError), atomic_output(tmp_path / "out.txt"):
        pass
    assert list(tmp_path.iterdir()) == []


def test_write_all_atomic_writes_every_file_or_none(tmp_path: Path):
    write_all_atomic([(tmp_path / "a.jsonl", "a\n"), (tmp_path / "b.json", b"{}")])
    assert (tmp_path / "a.jsonl").read_text() == "a\n" and (tmp_path / "b.json").read_text() == "{}"
    with pytest.raises(OSError):
        write_all_atomic([(tmp_path / "a.jsonl", "changed\n"), (tmp_path / "missing" / "c.json", "x")])
    assert (tmp_path / "a.jsonl").read_text() == "a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.json"]


def test_move_into_place_moves_made_files(tmp_path: Path):
    scratch = tmp_path / ".scratch"
    scratch.mkdir()
    (scratch / "0000001.jpg").write_bytes(b"jpg")
    move_into_place([(scratch / "0000001.jpg", tmp_path / "f1.jpg")])
    assert (tmp_path / "f1.jpg").read_bytes() == b"jpg" and not list(scratch.iterdir())


def test_threads_writing_one_file_take_turns(tmp_path: Path):
    target = tmp_path / "hashes.json"
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for _ in range(20):
                write_atomic(target, str(n) * 1000)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    text = target.read_text()
    assert len(set(text)) == 1 and len(text) == 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hashes.json"]


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path: Path):
    dead = tmp_path / ".x.json.999999999.tmp"
    dead.write_text("half")
    mine = temporary_path(tmp_path / "y.json")
    mine.write_text("in progress")
    assert remove_stale_temporaries(tmp_path) == [dead]
    assert mine.exists()


def test_chunks_are_written_as_they_come_and_a_failure_midway_leaves_the_old_file(tmp_path):
    """Issue 34: predictions.jsonl is streamed record by record; a writer that fails midway (an error, a kill)
    still leaves the previous file whole and no temporary."""
    from rescue.atomic import write_atomic

    target = tmp_path / "predictions.jsonl"
    write_atomic(target, (f"line {n}\n".encode() for n in range(3)))
    assert target.read_text() == "line 0\nline 1\nline 2\n"

    def failing():
        yield b"half"
        raise RuntimeError("the record could not be serialised")

    with pytest.raises(RuntimeError):
        write_atomic(target, failing())
    assert target.read_text() == "line 0\nline 1\nline 2\n" and sorted(p.name for p in tmp_path.iterdir()) == [target.name]


def test_a_writer_that_ended_unreaped_leaves_a_stale_temporary(tmp_path: Path):
    """A zombie (ended, its parent has not collected it yet) still answers ``kill(pid, 0)``; its temporary is stale
    all the same, and a later process with the same pid is not the writer."""
    import subprocess
    import sys
    import time

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        stale = tmp_path / f".x.json.{child.pid}.tmp"
        stale.write_text("half")
        deadline = time.monotonic() + 30
        while process_started(child.pid) and open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not process_alive(child.pid)
        assert remove_stale_temporaries(tmp_path) == [stale]
    finally:
        child.wait()
    assert process_alive(os.getpid()) and process_alive(os.getppid(), process_started(os.getppid()))
    assert not process_alive(os.getppid(), "1")  # another process than the one that started then
