"""Archives are read with limits (issue 33 item 6): a zip that inflates past rescue's limits or holds too many
entries is refused with the file and member named, having held at most a megabyte of it. The bombs are built here,
small on disk (zeros compress a thousandfold and more), with each compression a zip can carry."""

from __future__ import annotations

import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rescue.archives import MiB, ArchiveError, ArchiveLimits, check_zip, gunzip_limited
from rescue.errors import EXIT_ERROR

SMALL = ArchiveLimits(entries=50, member_bytes=4 * MiB, total_bytes=12 * MiB)
COMPRESSIONS = {"stored": zipfile.ZIP_STORED, "deflate": zipfile.ZIP_DEFLATED, "bzip2": zipfile.ZIP_BZIP2}


def _zstd() -> int:
    pytest.importorskip("zipfile_zstd", reason="zstd in zip (inspect's own format) comes with the 'inspect' extra")
    return int(zipfile.ZIP_ZSTANDARD)  # type: ignore[attr-defined]


def _compression(name: str) -> int:
    return _zstd() if name == "zstd" else COMPRESSIONS[name]


def _bomb(path: Path, members: dict[str, int], compression: int) -> Path:
    """A zip whose members are ``size`` zero bytes each, written a megabyte at a time."""
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, size in members.items():
            with archive.open(name, "w", force_zip64=size > 1 << 31) as member:
                left = size
                while left:
                    member.write(bytes(min(left, MiB)))
                    left -= min(left, MiB)
    return path


def _lie_about_sizes(path: Path, declared: int) -> None:
    """Rewrite every member's uncompressed size (local header and central directory) to ``declared``: a reader
    that trusts the headers would inflate far more than it planned."""
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        while at >= 0:
            struct.pack_into("<I", data, at + offset, declared)
            at = data.find(signature, at + 4)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("compression", ["stored", "deflate", "bzip2", "zstd"])
def test_an_archive_within_the_limits_is_read(tmp_path, compression):
    path = _bomb(tmp_path / "ok.eval", {"header.json": 3 * MiB, "samples/1.json": 3 * MiB}, _compression(compression))
    check_zip(path, SMALL)


@pytest.mark.parametrize("compression", ["stored", "deflate", "bzip2", "zstd"])
def test_a_member_declaring_more_than_the_limit_is_refused(tmp_path, compression):
    path = _bomb(tmp_path / "bomb.eval", {"header.json": 5 * MiB}, _compression(compression))
    with pytest.raises(ArchiveError) as error:
        check_zip(path, SMALL)
    assert str(error.value).startswith(f"{path}: member 'header.json' declares 5 MiB decompressed; rescue reads at "
                                       "most 4 MiB per member")


@pytest.mark.parametrize("compression", ["deflate", "bzip2", "zstd"])
def test_a_member_that_lies_about_its_size_is_stopped_at_the_limit(tmp_path, compression):
    path = _bomb(tmp_path / "liar.eval", {"header.json": 9 * MiB}, _compression(compression))
    _lie_about_sizes(path, 100)
    with pytest.raises(ArchiveError, match=r"member 'header.json' inflates past 4 MiB; rescue reads at most 4 MiB"):
        check_zip(path, SMALL)


def test_members_together_past_the_archive_limit_are_refused(tmp_path):
    path = _bomb(tmp_path / "many.eval", {f"samples/{n}.json": 3 * MiB for n in range(5)}, zipfile.ZIP_DEFLATED)
    with pytest.raises(ArchiveError, match=r"member 'samples/4.json' declares 3 MiB .* and 12 MiB per archive"):
        check_zip(path, SMALL)


def test_too_many_entries_are_refused_before_the_directory_is_read(tmp_path):
    path = _bomb(tmp_path / "entries.eval", {f"e{n}": 0 for n in range(SMALL.entries + 1)}, zipfile.ZIP_STORED)
    with pytest.raises(ArchiveError, match=f"{SMALL.entries + 1} entries, more than the {SMALL.entries}"):
        check_zip(path, SMALL)


@pytest.mark.parametrize("content", [b"", b"not a zip at all", b"PK\x03\x04" + bytes(40)])
def test_what_is_not_a_zip_is_named(tmp_path, content):
    path = tmp_path / "junk.eval"
    path.write_bytes(content)
    with pytest.raises(ArchiveError, match=r"junk.eval: not a readable zip archive"):
        check_zip(path, SMALL)


@pytest.mark.parametrize("compression", ["deflate", "bzip2", "zstd"])
def test_a_damaged_member_is_named(tmp_path, compression):
    path = _bomb(tmp_path / "damaged.eval", {"header.json": 3 * MiB}, _compression(compression))
    data = bytearray(path.read_bytes())
    names, extra = struct.unpack_from("<HH", data, 26)
    start = 30 + names + extra  # the member's compressed bytes
    data[start:start + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match=r"damaged.eval: member 'header.json': cannot be decompressed"):
        check_zip(path, SMALL)


def test_a_truncated_archive_is_named(tmp_path):
    path = _bomb(tmp_path / "cut.eval", {"header.json": 3 * MiB, "samples/1.json": 3 * MiB}, zipfile.ZIP_DEFLATED)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ArchiveError, match=r"cut.eval: not a readable zip archive"):
        check_zip(path, SMALL)


def test_gzip_data_past_its_limit_is_refused():
    import gzip

    bomb = gzip.compress(bytes(5 * MiB))
    assert gunzip_limited(bomb, limit=5 * MiB, what="x") == bytes(5 * MiB)
    with pytest.raises(ArchiveError, match="payload: gzip data inflates past 4 MiB"):
        gunzip_limited(bomb, limit=4 * MiB, what="payload")


# The child's own peak: VmHWM belongs to the memory map the child made. Not ru_maxrss: Linux carries the maximum
# across execve, and subprocess starts the child from pytest's own map (vfork), so ru_maxrss reported the whole
# test run's peak (2.2 GB in a full run) rather than the report's.
PEAK = """import re, sys
from pathlib import Path
from rescue.cli import main
sys.argv[0] = "rescue"
try:
    main()
finally:
    status = Path("/proc/self/status").read_text()
    print("peak-rss-kib", re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1), file=sys.stderr)
"""


@pytest.mark.slow
@pytest.mark.parametrize("lie", [False, True], ids=["declared", "lying headers"])
def test_rescue_report_refuses_an_eval_log_bomb_with_bounded_memory(tmp_path, lie):
    # The log: a few megabytes on disk whose header inflates to gigabytes; rescue report took 4.47 GB.
    pytest.importorskip("inspect_ai", reason="the 'inspect' extra is not installed")
    path = _bomb(tmp_path / "2026-01-01_itp.eval", {"header.json": 1 << 30}, _zstd())
    if lie:
        _lie_about_sizes(path, 4096)
    assert path.stat().st_size < 1 * MiB
    done = subprocess.run([sys.executable, "-c", PEAK, "report", str(path), "--out", str(tmp_path / "report"),
                           "--quiet"], capture_output=True, text=True, timeout=300)
    assert done.returncode == EXIT_ERROR, done.stderr
    assert f"{path}: member 'header.json'" in done.stderr and "zip bomb" in done.stderr
    assert "Traceback" not in done.stderr
    peak_mib = int(done.stderr.split("peak-rss-kib")[1].split()[0]) / 1024
    assert peak_mib < 400, f"rescue report held {peak_mib:.0f} MiB refusing a bomb"
    assert not (tmp_path / "report").exists()
