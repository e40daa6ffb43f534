"""A bundle is hostile input (issue #44 item 3): every row of docs/submissions.md's attack table, through the real
``rescue verify``: refused with exit 2 naming the file and the member or field, memory bounded, nothing written
but the verdict."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
from _cli import invoke_main
from submission_support import members, rewrite

from rescue.errors import EXIT_ERROR
from rescue.submissions.bundle import ANSWERS, MANIFEST
from rescue.runs.results import PREDICTIONS, RESULTS


def _zip(out: Path, entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Duplicate name", UserWarning)  # the duplicate-entry attack's, on purpose
        for info, data in entries:
            archive.writestr(info, data)
    return out


def _refused(bundle: Path, data: Path, *named: str) -> str:
    result = invoke_main(["verify", str(bundle), "--data", str(data)])
    assert result.exit_code == EXIT_ERROR, result.output
    for word in named:
        assert word in result.output, (word, result.output)
    assert "Traceback" not in result.output
    return result.output


def _link(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def _with_manifest(bundle: Path, edit) -> bytes:  # type: ignore[no-untyped-def]
    manifest = json.loads(members(bundle)[MANIFEST])
    edit(manifest)
    return json.dumps(manifest).encode()


# name -> (how the hostile bundle is made from the honest one, words the refusal names)
def _entries(bundle: Path) -> list[tuple[zipfile.ZipInfo | str, bytes]]:
    return list(members(bundle).items())


ATTACKS = {
    "traversing entry name": (lambda b, t: _zip(t, [*_entries(b), ("../../etc/cron.d/x", b"* * * * * root true")]),
                              ["'../../etc/cron.d/x'", "not a member of a bundle"]),
    "absolute entry name": (lambda b, t: _zip(t, [*_entries(b), ("/etc/passwd", b"root:x:0:0")]), ["'/etc/passwd'"]),
    "a member as a symlink": (lambda b, t: _zip(t, [(n, d) for n, d in _entries(b) if n != ANSWERS]
                                               + [(_link(ANSWERS), b"/etc/passwd")]), ["not a regular file"]),
    "duplicate entries": (lambda b, t: _zip(t, [*_entries(b), (RESULTS, members(b)[RESULTS])]),
                          [f"'{RESULTS}' appears twice"]),
    "a folder entry": (lambda b, t: _zip(t, [*_entries(b), ("predictions/", b"")]), ["'predictions/'"]),
    "no manifest": (lambda b, t: _zip(t, [(n, d) for n, d in _entries(b) if n != MANIFEST]), ["no manifest.json"]),
    "not a zip": (lambda b, t: (t.write_bytes(b"PK\x03\x04 this is not a zip" * 100), t)[1], ["not"]),
    "an empty file": (lambda b, t: (t.write_bytes(b""), t)[1], [str("bundle")]),
    "cut in half": (lambda b, t: (t.write_bytes(b.read_bytes()[: len(b.read_bytes()) // 2]), t)[1], ["zip"]),
    "a lying hash": (lambda b, t: rewrite(b, t, {PREDICTIONS: members(b)[PREDICTIONS] + b"\n"}, rehash=False),
                     [f"{PREDICTIONS}: its SHA-256 is not the one manifest.json lists"]),
    "a member not listed": (lambda b, t: rewrite(b, t, {MANIFEST: _with_manifest(
        b, lambda m: m["files"].pop(ANSWERS))}, rehash=False), [f"{ANSWERS} is in the bundle but not listed"]),
    "a member listed but missing": (lambda b, t: _zip(t, [(n, d) for n, d in _entries(b) if n != ANSWERS]),
                                    [f"{ANSWERS} is listed in manifest.json but missing"]),
    "a deeply nested manifest": (lambda b, t: rewrite(b, t, {MANIFEST: b"[" * 100_000 + b"]" * 100_000},
                                                      rehash=False), ["manifest.json", "nested"]),
    "a manifest number of 400 digits": (lambda b, t: rewrite(b, t, {MANIFEST: _with_manifest(
        b, lambda m: m.update(samples=10 ** 400))}, rehash=False), ["manifest.json", "samples"]),
    "a manifest NaN": (lambda b, t: rewrite(b, t, {MANIFEST: members(b)[MANIFEST].replace(
        b'"samples": 2', b'"samples": NaN')}, rehash=False), ["manifest.json", "samples"]),
    "a manifest of another type": (lambda b, t: rewrite(b, t, {MANIFEST: b'["a", "list"]'}, rehash=False),
                                   ["manifest.json"]),
    "a manifest field of the wrong type": (lambda b, t: rewrite(b, t, {MANIFEST: _with_manifest(
        b, lambda m: m.update(tasks="all"))}, rehash=False), ["manifest.json", "field tasks"]),
    "a manifest with a field it never has": (lambda b, t: rewrite(b, t, {MANIFEST: _with_manifest(
        b, lambda m: m.update(verified=True))}, rehash=False), ["manifest.json", "verified"]),
    "a manifest of a newer schema": (lambda b, t: rewrite(b, t, {MANIFEST: _with_manifest(
        b, lambda m: m.update(bundle_schema=99))}, rehash=False), ["bundle_schema", "upgrade rescue"]),
    "a manifest not UTF-8": (lambda b, t: rewrite(b, t, {MANIFEST: b"\xff\xfe{}"}, rehash=False),
                             ["manifest.json", "UTF-8"]),
    "results that are NaN, rehashed": (lambda b, t: rewrite(b, t, {RESULTS: members(b)[RESULTS].replace(
        b'"elapsed_s": ', b'"elapsed_s": NaN, "was": ', 1)}, rehash=True), [RESULTS]),
    "results deeply nested, rehashed": (lambda b, t: rewrite(b, t, {RESULTS: b"{\"a\":" * 50_000 + b"1" +
                                                                     b"}" * 50_000}, rehash=True), [RESULTS, "nested"]),
    "an answer line that is no answer, rehashed": (lambda b, t: rewrite(b, t, {ANSWERS: b'["x"]\n' + members(b)[ANSWERS]},
                                                                        rehash=True), [f"{ANSWERS}:1"]),
    "a manifest that contradicts its files": (lambda b, t: rewrite(b, t, {MANIFEST: _with_manifest(
        b, lambda m: m.update(judges=[]))}, rehash=False), ["judges [] but results.json records ['judge-model']"]),
    "a system said to be a person": (lambda b, t: rewrite(b, t, {MANIFEST: _with_manifest(
        b, lambda m: m["systems"]["scripted-model"].update(kind="human"))}, rehash=False),
                                     ["systems.scripted-model.kind is 'human'"]),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_hostile_bundle_is_refused_naming_what(name: str, model_bundle: Path, data: Path, tmp_path: Path) -> None:
    make, named = ATTACKS[name]
    hostile = make(model_bundle, tmp_path / "hostile.rescue.zip")
    _refused(hostile, data, *named)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["hostile.rescue.zip", "hostile.rescue.verdict.json", "hostile.rescue.verdict.md"])  # nothing else written
    assert not (tmp_path.parent / "etc").exists()


@pytest.mark.parametrize("kind", ["missing", "folder", "fifo"])
def test_a_bundle_path_that_is_no_file_is_refused(kind: str, data: Path, tmp_path: Path) -> None:
    target = tmp_path / "b.rescue.zip"
    if kind == "folder":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    _refused(target, data, "b.rescue.zip")


def _bomb(out: Path, size: int, *, entries: list[tuple[str, bytes]]) -> Path:
    """A zip whose results.json inflates to ``size`` bytes of zeros, written through ZipFile's own streaming
    writer (the test holds a megabyte of it at a time)."""
    block = b"0" * (1 << 20)
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in entries:
            archive.writestr(name, data)
        info = zipfile.ZipInfo(RESULTS)
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as member:
            for _ in range(size // len(block)):
                member.write(block)
    return out


@pytest.mark.slow
def test_an_archive_bomb_is_refused_with_memory_bounded(model_bundle: Path, data: Path, tmp_path: Path) -> None:
    """A results.json that inflates to 1.1 GiB (over the member limit) in a bundle of a few MB: refused while
    decompressing, and the verifier's peak memory stays far below the inflated size."""
    entries = [(n, d) for n, d in members(model_bundle).items() if n != RESULTS]
    bomb = _bomb(tmp_path / "bomb.rescue.zip", 1100 << 20, entries=entries)
    assert bomb.stat().st_size < 10 << 20
    # The child's own peak is its VmHWM (per address space): ru_maxrss would carry the test process's peak (a
    # whole suite's) across fork and exec.
    script = ("import sys\nfrom rescue.cli import main\nsys.argv = ['rescue', 'verify', sys.argv[1], "
              "'--data', sys.argv[2]]\ntry:\n    main()\nfinally:\n    hwm = [l for l in open('/proc/self/status') "
              "if l.startswith('VmHWM')][0].split()[1]\n    print('peak', hwm, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", script, str(bomb), str(data)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == EXIT_ERROR, done.stderr
    assert "results.json" in done.stderr and "GiB" in done.stderr
    peak_kib = int(done.stderr.rsplit("peak", 1)[1].split()[0])
    assert peak_kib < 400 * 1024, peak_kib  # the import of rescue and its libraries is most of it


def test_too_many_entries_are_refused_before_the_directory_is_read(data: Path, tmp_path: Path) -> None:
    many = _zip(tmp_path / "many.rescue.zip", [(f"x{i}", b"") for i in range(5000)])
    _refused(many, data, "many.rescue.zip")


def test_the_untouched_bundle_still_passes(model_bundle: Path, data: Path) -> None:
    result = invoke_main(["verify", str(model_bundle), "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert hashlib.sha256(model_bundle.read_bytes()).hexdigest()  # read, never changed
