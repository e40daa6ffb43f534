"""Archives rescue reads but did not write (an inspect ``.eval`` log is a zip), read with limits.

A 4.6 MB zip can hold a member that inflates to 2 GiB, or a million empty members; a reader that trusts it takes
gigabytes of memory and minutes. :func:`check_zip` looks before anything else reads the archive: the entry count
from the end record (before the central directory is parsed), then every member's declared size, then every
member's actual size, decompressed as a stream in 1 MiB steps and stopped at the limit, so neither a member that
lies about its size nor one that tells the truth costs more than a megabyte of memory.
:func:`gunzip_limited` does the same for a gzip stream held in memory.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from rescue.errors import ArchiveError as ArchiveError

__all__ = ["ArchiveError", "ArchiveLimits", "check_zip", "gunzip_limited"]

MiB = 1 << 20
GiB = 1 << 30
STEP = MiB  # decompressed bytes per step: the most a check holds at once


@dataclass(frozen=True)
class ArchiveLimits:
    """What one archive (an inspect log) may hold: its budget. ``member_bytes`` is the memory budget: the most
    rescue inflates and parses in one piece (the log's header, one sample); a log's samples are read one at a
    time with their bulky fields streamed past (:mod:`rescue.runs.inspect_logs`), so what a report holds of a
    log is bounded by this, whatever the log's size. ``total_bytes`` bounds the whole log, read once as a stream
    (the time a check takes). An inspect log has one member per sample and epoch plus a few (an RPP log of the
    full release: about 2,700, each sample a few hundred kilobytes, its header tens)."""

    entries: int = 100_000
    member_bytes: int = 32 * MiB
    total_bytes: int = 4 * GiB


DEFAULT_LIMITS = ArchiveLimits()
_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
STORED, DEFLATED, BZIP2, ZSTD = 0, 8, 12, 93  # inspect writes zstd (93); older logs and other tools, deflate


def _size(amount: int) -> str:
    return f"{amount / GiB:.1f} GiB" if amount >= GiB else f"{amount / MiB:.0f} MiB"


def _declared_entries(handle: IO[bytes], path: Path) -> int:
    """The entry count the end record declares, read from the file's tail (ZIP64 included)."""
    handle.seek(0, 2)
    size = handle.tell()
    handle.seek(max(0, size - 65_557))  # the end record (22 bytes) and a comment of at most 65,535 bytes
    tail = handle.read()
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < 22:
        raise ArchiveError(f"{path}: not a readable zip archive (no end of central directory record)")
    entries = int(struct.unpack_from("<H", tail, at + 10)[0])
    locator = tail.rfind(_ZIP64_LOCATOR, 0, at)
    if entries == 0xFFFF and locator >= 0 and at - locator == 20:
        offset = int(struct.unpack_from("<Q", tail, locator + 8)[0])
        handle.seek(offset)
        record = handle.read(56)
        if len(record) == 56 and record[:4] == b"PK\x06\x06":
            entries = int(struct.unpack_from("<Q", record, 32)[0])
    return entries


class _Segment:
    """The compressed bytes of one member, as a file object that ends where the member does."""

    def __init__(self, handle: IO[bytes], start: int, length: int):
        self._handle, self._left = handle, length
        handle.seek(start)

    def read(self, size: int = -1) -> bytes:
        size = self._left if size < 0 else min(size, self._left)
        data = self._handle.read(size)
        self._left -= len(data)
        return data

    def chunks(self) -> Iterator[bytes]:
        while chunk := self.read(STEP):
            yield chunk


def _inflated(method: int, raw: _Segment) -> Iterator[int]:
    """The sizes of the member's decompressed pieces, each at most STEP bytes, never all of it at once."""
    if method == STORED:
        for chunk in raw.chunks():
            yield len(chunk)
    elif method == DEFLATED:
        yield from _bounded(zlib.decompressobj(-15), raw)
    elif method == BZIP2:
        import bz2

        yield from _bounded(bz2.BZ2Decompressor(), raw)
    elif method == ZSTD:
        yield from _zstd(raw)
    else:
        raise ValueError(f"compression method {method}, which rescue does not read (stored, deflate, bzip2, zstd)")


def _bounded(decompressor: Any, raw: _Segment) -> Iterator[int]:
    """zlib's and bz2's decompressors, asked for at most STEP bytes a call: zlib keeps the input it did not use in
    ``unconsumed_tail``, bz2 inside (``needs_input`` false: more output is waiting)."""
    for chunk in raw.chunks():
        pending = chunk
        while not decompressor.eof:
            piece = decompressor.decompress(pending, STEP)
            yield len(piece)
            pending = getattr(decompressor, "unconsumed_tail", b"")
            if not pending and getattr(decompressor, "needs_input", True):
                break
    if isinstance(decompressor, type(zlib.decompressobj())):
        yield len(decompressor.flush())  # at most the 32 KiB window


def _zstd(raw: _Segment) -> Iterator[int]:
    try:
        import zstandard
    except ImportError:
        raise ValueError("zstd-compressed; reading it needs the 'zstandard' package (pip install zstandard)") from None
    try:
        with zstandard.ZstdDecompressor().stream_reader(cast(IO[bytes], raw), read_across_frames=True) as reader:
            while piece := reader.read(STEP):
                yield len(piece)
    except zstandard.ZstdError as exc:
        raise ValueError(f"zstd: {exc}") from None


def _member_start(handle: IO[bytes], offset: int) -> int:
    handle.seek(offset)
    header = handle.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
        raise ValueError("no local file header where the central directory says")
    fields = _LOCAL_HEADER.unpack(header)
    return offset + _LOCAL_HEADER.size + int(fields[9]) + int(fields[10])


def check_zip(path: str | Path, limits: ArchiveLimits = DEFAULT_LIMITS) -> None:
    """Refuse, with :class:`ArchiveError` naming the file, the member and the limit, a zip that holds more than
    ``limits.entries`` entries or inflates past ``limits.member_bytes`` per member or ``limits.total_bytes`` in all;
    also one that is not a readable zip. Reads the archive once, holding at most a megabyte of it."""
    import zipfile

    file = Path(path)
    try:
        with file.open("rb") as handle:
            entries = _declared_entries(handle, file)
            if entries > limits.entries:
                raise ArchiveError(f"{file}: {entries} entries, more than the {limits.entries} rescue reads in one "
                                   "archive (a zip bomb, or not an inspect log)")
            with zipfile.ZipFile(handle) as archive:
                members = archive.infolist()
            _check_members(file, handle, members, limits)
    except (OSError, zipfile.BadZipFile, zlib.error, EOFError, ValueError) as exc:
        raise ArchiveError(f"{file}: not a readable zip archive ({exc})") from None


def _check_members(file: Path, handle: IO[bytes], members: list[Any], limits: ArchiveLimits) -> None:
    if len(members) > limits.entries:
        raise ArchiveError(f"{file}: {len(members)} entries, more than the {limits.entries} rescue reads in one archive")
    total = 0
    for info in members:
        budget = min(limits.member_bytes, limits.total_bytes - total)
        if info.file_size > budget:
            raise _too_large(file, info.filename, info.file_size, limits, declared=True)
        inflated = 0
        try:
            for piece in _inflated(info.compress_type, _Segment(handle, _member_start(handle, info.header_offset),
                                                                 info.compress_size)):
                inflated += piece
                if inflated > budget:
                    raise _too_large(file, info.filename, budget, limits, declared=False)
        except (zlib.error, EOFError, ValueError, OSError) as exc:
            raise ArchiveError(f"{file}: member {info.filename!r}: cannot be decompressed ({exc})") from None
        total += inflated


def _too_large(file: Path, member: str, size: int, limits: ArchiveLimits, *, declared: bool) -> ArchiveError:
    what = f"declares {_size(size)} decompressed" if declared else f"inflates past {_size(size)}"
    return ArchiveError(f"{file}: member {member!r} {what}; rescue reads at most {_size(limits.member_bytes)} per "
                        f"member and {_size(limits.total_bytes)} per archive (a zip bomb, or not an inspect log). "
                        "Nothing was read from it.")


def gunzip_limited(data: bytes, *, limit: int, what: str) -> bytes:
    """``data`` (gzip) decompressed, or :class:`ArchiveError` naming ``what`` when it inflates past ``limit``."""
    decompressor = zlib.decompressobj(wbits=31)
    pieces: list[bytes] = []
    size = 0
    pending = data
    while pending:
        piece = decompressor.decompress(pending, STEP)
        size += len(piece)
        if size > limit:
            raise ArchiveError(f"{what}: gzip data inflates past {_size(limit)}, the most rescue reads")
        pieces.append(piece)
        pending = decompressor.unconsumed_tail
        if not pending and not piece:
            break
    return b"".join(pieces) + decompressor.flush()
