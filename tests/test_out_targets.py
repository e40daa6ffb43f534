"""``--out`` never replaces what is not a regular file (issue #42, item 3): every file a command writes goes
through rescue.atomic, which refuses a FIFO, a character device, a socket, a folder or a symbolic link at the
target (exit 2 naming the path) and replaces a regular file atomically. Each command is run through the real CLI;
"system" files are stand-ins in tmp (a /dev/null-like device made with os.mknod, a folder of files for /etc)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest
from _cli import invoke_main

from rescue.atomic import check_target
from rescue.errors import OutFileError

pytestmark = pytest.mark.timeout(300)  # a FIFO opened for writing would block forever: fail instead

AS_ROOT = os.geteuid() == 0


def _system(tmp_path: Path) -> Path:
    """A stand-in for /etc: a folder with a file that must never change."""
    folder = tmp_path / "etc"
    folder.mkdir(exist_ok=True)
    (folder / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    return folder


def _make(kind: str, path: Path, tmp_path: Path) -> object:
    """Put ``kind`` at ``path``; return what must still be there afterwards (its fingerprint)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "chardev":
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # the numbers of /dev/null
    elif kind == "socket":
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(path))
        listener.close()
    elif kind == "folder":
        path.mkdir()
        (path / "keep.txt").write_text("mine")
    elif kind == "link_to_system_file":
        os.symlink(_system(tmp_path) / "passwd", path)
    elif kind == "dangling_link":
        os.symlink(tmp_path / "nowhere" / "x", path)
    return _fingerprint(path, tmp_path)


def _fingerprint(path: Path, tmp_path: Path) -> object:
    info = os.lstat(path)
    system = tmp_path / "etc" / "passwd"
    return (stat.S_IFMT(info.st_mode), info.st_rdev, os.readlink(path) if stat.S_ISLNK(info.st_mode) else None,
            sorted(p.name for p in path.iterdir()) if stat.S_ISDIR(info.st_mode) else None,
            system.read_text() if system.exists() else None)


KINDS = ["fifo", *(["chardev"] if AS_ROOT else []), "socket", "folder", "link_to_system_file", "dangling_link"]
WORDS = {"fifo": "FIFO", "chardev": "character device", "socket": "socket", "folder": "a folder",
         "link_to_system_file": "symbolic link", "dangling_link": "symbolic link"}


def _refused(result, path: Path, kind: str) -> None:
    assert result.exit_code == 2, result.output
    assert str(path) in result.output and WORDS[kind] in result.output, result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("kind", KINDS)
def test_check_target_refuses_everything_but_a_regular_file(tmp_path, kind):
    target = tmp_path / "out.json"
    before = _make(kind, target, tmp_path)
    with pytest.raises(OutFileError, match=WORDS[kind]):
        check_target(target)
    assert _fingerprint(target, tmp_path) == before


@pytest.mark.parametrize("kind", KINDS)
def test_splits_out(tmp_path, kind):
    target = tmp_path / "splits.json"
    before = _make(kind, target, tmp_path)
    _refused(invoke_main(["splits", "--out", str(target), "--quiet"]), target, kind)
    assert _fingerprint(target, tmp_path) == before


@pytest.mark.parametrize("kind", KINDS)
def test_export_chat_out(tmp_path, kind):
    target = tmp_path / "train.jsonl"
    before = _make(kind, target, tmp_path)
    _refused(invoke_main(["export", "--format", "chat", "--tasks", "itp", "--out", str(target)]), target, kind)
    assert _fingerprint(target, tmp_path) == before


HF_KINDS = [k for k in KINDS if k != "folder"] + ["folder_of_other_things"]


@pytest.mark.parametrize("kind", HF_KINDS)
def test_export_hf_out_replaces_only_an_earlier_export(tmp_path, kind):
    pytest.importorskip("datasets")
    target = tmp_path / "ds"
    before = _make("folder" if kind == "folder_of_other_things" else kind, target, tmp_path)
    result = invoke_main(["export", "--format", "hf", "--tasks", "itp", "--out", str(target)])
    assert result.exit_code == 2 and str(target) in result.output, result.output
    assert (WORDS.get(kind) or "holds other things") in result.output, result.output
    assert _fingerprint(target, tmp_path) == before


def test_export_hf_replaces_an_earlier_export(tmp_path):
    pytest.importorskip("datasets")
    target = tmp_path / "ds"
    for _ in range(2):
        result = invoke_main(["export", "--format", "hf", "--kind", "samples", "--out", str(target)])
        assert result.exit_code == 0, result.output
    assert (target / "dataset_dict.json").is_file()


@pytest.fixture(scope="module")
def review_project(tmp_path_factory):
    from rescue.testing.review_project import make_review_project

    return make_review_project(tmp_path_factory.mktemp("review") / "proj", max_seconds=30, media=False)


@pytest.mark.parametrize("kind", KINDS)
def test_review_export_out(tmp_path, kind, review_project):
    target = tmp_path / "verified.jsonl"
    before = _make(kind, target, tmp_path)
    result = invoke_main(["review", "export", str(review_project), "--db", f"sqlite:///{tmp_path / 'r.db'}",
                          "--out", str(target)])
    _refused(result, target, kind)
    assert _fingerprint(target, tmp_path) == before


def test_review_export_sidecar_is_checked_too(tmp_path, review_project):
    target = tmp_path / "verified.jsonl"
    sidecar = tmp_path / "verified.provenance.json"
    before = _make("fifo", sidecar, tmp_path)
    result = invoke_main(["review", "export", str(review_project), "--db", f"sqlite:///{tmp_path / 'r.db'}",
                          "--out", str(target)])
    _refused(result, sidecar, "fifo")
    assert _fingerprint(sidecar, tmp_path) == before and not target.exists()


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("name", ["results.json", "predictions.jsonl", "run.log"])
@pytest.mark.parametrize("kind", ["fifo", "link_to_system_file", "folder"])
def test_run_folder_files(tmp_path, name, kind, overwrite):
    out = tmp_path / "run"
    target = out / name
    before = _make(kind, target, tmp_path)
    result = invoke_main(["run", "--out", str(out), "--tasks", "itp", "--limit-samples", "2", "--no-bertscore",
                          "--quiet", *(["--overwrite"] if overwrite else [])])
    if name == "results.json" and kind == "link_to_system_file" and not overwrite:
        # Read before anything is written: the file it points to is not a run's results, and is left as it is.
        assert result.exit_code == 2 and str(target) in result.output and "not JSON" in result.output, result.output
    else:
        _refused(result, target, kind)
    assert _fingerprint(target, tmp_path) == before


@pytest.mark.parametrize("name", [".rescue.lock", "cache.sqlite"])
@pytest.mark.parametrize("kind", ["fifo", "link_to_system_file", "dangling_link"])
def test_run_folder_lock_and_cache(tmp_path, name, kind):
    """The lock file is truncated and written, the cache is a database SQLite writes: never through a link (the
    system file would be emptied or made a database), never a FIFO (SQLite would block on it)."""
    out = tmp_path / "run"
    target = out / name
    before = _make(kind, target, tmp_path)
    result = invoke_main(["run", "--out", str(out), "--tasks", "itp", "--limit-samples", "2", "--no-bertscore",
                          "--quiet"])
    _refused(result, target, kind)
    assert _fingerprint(target, tmp_path) == before


@pytest.mark.parametrize("name", ["report.html", "leaderboard.md"])
@pytest.mark.parametrize("kind", ["fifo", "link_to_system_file", "folder"])
def test_report_folder_files(tmp_path, name, kind, itp_run_dir):
    out = tmp_path / "report"
    target = out / name
    before = _make(kind, target, tmp_path)
    result = invoke_main(["report", str(itp_run_dir), "--out", str(out), "--bootstrap", "20", "--no-figures"])
    _refused(result, target, kind)
    assert _fingerprint(target, tmp_path) == before


def test_validate_fix_out(tmp_path):
    from rescue.data.reading import demo_path

    target = tmp_path / "fixed.jsonl"
    before = _make("fifo", target, tmp_path)
    result = invoke_main(["validate", "--data", str(demo_path()), "--fix", "--out", str(target)])
    _refused(result, target, "fifo")
    assert _fingerprint(target, tmp_path) == before


def test_a_regular_file_is_replaced_and_a_folder_on_the_way_may_be_a_link(tmp_path):
    """What is allowed: a regular file is replaced (atomically, as before); folders on the way are followed
    like any path, so a link to a folder writes inside the folder it names."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "splits.json").write_text("old")
    os.symlink(real, tmp_path / "via")
    result = invoke_main(["splits", "--out", str(tmp_path / "via" / "splits.json"), "--quiet"])
    assert result.exit_code == 0, result.output
    assert (real / "splits.json").read_text().startswith("{")


@pytest.fixture(scope="module")
def session_video(tmp_path_factory):
    from media_helpers import conversation, make_video, write_srt

    folder = tmp_path_factory.mktemp("session")
    spoken = conversation(30.0)
    return make_video(folder / "s.mp4", 30.0, speech=spoken), write_srt(folder / "s.srt", spoken)


@pytest.mark.parametrize("name", ["draft.jsonl", "manifest.json", "build.log"])
@pytest.mark.parametrize("kind", ["fifo", "link_to_system_file"])
def test_build_folder_files(tmp_path, name, kind, session_video):
    video, subs = session_video
    out = tmp_path / "build"
    target = out / name
    before = _make(kind, target, tmp_path)
    result = invoke_main(["build", str(video), "--subs", str(subs), "--out", str(out), "--scenario", "couple",
                          "--participants", "Alan,Evelyn", "--group", "g", "--min-duration", "5", "--no-align-check"])
    _refused(result, target, kind)
    assert _fingerprint(target, tmp_path) == before


@pytest.mark.parametrize("kind", ["fifo", "link_to_system_file", "folder"])
def test_submit_out(tmp_path, kind, itp_run_dir):
    target = tmp_path / "bundle.zip"
    before = _make(kind, target, tmp_path)
    result = invoke_main(["submit", str(itp_run_dir), "--out", str(target), "--submitter", "lab",
                          "--training-data", "none", "--zero-shot"])
    _refused(result, target, kind)
    assert _fingerprint(target, tmp_path) == before
