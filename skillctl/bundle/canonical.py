"""The canonical byte layout of a bundle: one way to spell a given set of files as .tar.gz.

Tar: PAX format (ustar headers, a PAX extended header only where a path is too long or not
ASCII), entries sorted by path with an explicit directory entry before its contents, every mtime
equal to one value, uid/gid 0, empty owner names, modes 0644 (files), 0755 (executable files and
folders), then two zero blocks and zero padding to a 10,240-byte record: the layout ``tarfile``
writes, so any tar reader accepts it.

Gzip: the header ``GzipFile(filename="", mtime=0)`` writes (no name, no time, OS byte 255 rather
than zlib's build-dependent one), raw deflate at level 6, CRC-32 and length trailer.

Deflate output may differ between zlib builds (zlib-ng, hardware deflate); the tar bytes do not,
which is why a bundle records the digest of its uncompressed tar as well.
"""

from __future__ import annotations

import hashlib
import os
import queue
import struct
import tarfile
import threading
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from skillctl.errors import ConfigError

# 1980-01-01T00:00:00Z: the earliest time a zip entry can carry, the default of the Python
# wheel tooling, so a future zip export of the same bundle can use the same constant.
DEFAULT_MTIME = 315_532_800
# zlib's and gzip's default: level 9 costs about twice the time for ~1 % smaller text.
COMPRESSLEVEL = 6
FILE_MODE = 0o644
EXEC_MODE = 0o755
DIR_MODE = 0o755
BLOCK = tarfile.BLOCKSIZE  # 512
RECORD = tarfile.RECORDSIZE  # 20 blocks, what tarfile and GNU tar pad to
# ustar keeps mtime in 11 octal digits; beyond it tarfile would switch to a PAX record.
MAX_MTIME = 8**11 - 1
GZIP_HEADER = b"\x1f\x8b\x08\x00" + b"\x00\x00\x00\x00" + b"\x00" + b"\xff"


@dataclass(frozen=True)
class Entry:
    """One tar member: ``path`` is the full member path (top folder included, no trailing slash);
    ``data`` is None for a folder."""

    path: str
    data: bytes | None
    executable: bool = False


def resolve_mtime(mtime: int | None) -> int:
    """The mtime stamped on every member: the argument, else ``SOURCE_DATE_EPOCH``, else
    :data:`DEFAULT_MTIME`. Raises ConfigError for a value that is not a whole number of seconds
    in ustar's range."""
    source = "mtime argument"
    if mtime is None:
        raw = os.environ.get("SOURCE_DATE_EPOCH")
        if raw is None or raw.strip() == "":
            return DEFAULT_MTIME
        source = "SOURCE_DATE_EPOCH"
        try:
            mtime = int(raw.strip(), 10)
        except ValueError:
            raise ConfigError(
                f"SOURCE_DATE_EPOCH={raw!r} is not an integer; set it to seconds since 1970-01-01 or unset it"
            ) from None
    if isinstance(mtime, bool) or not isinstance(mtime, int) or not 0 <= mtime <= MAX_MTIME:
        raise ConfigError(f"{source} {mtime!r} is out of range; use whole seconds between 0 and {MAX_MTIME}")
    return mtime


def _header(entry: Entry, mtime: int) -> bytes:
    info = tarfile.TarInfo(entry.path)
    if entry.data is None:
        info.type = tarfile.DIRTYPE
        info.mode = DIR_MODE
    else:
        info.type = tarfile.REGTYPE
        info.size = len(entry.data)
        info.mode = EXEC_MODE if entry.executable else FILE_MODE
    info.mtime = mtime
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "strict")


def _tar_pieces(entries: Iterable[Entry], mtime: int) -> Iterator[bytes]:
    offset = 0
    for entry in entries:
        header = _header(entry, mtime)
        yield header
        offset += len(header)
        if entry.data:
            pad = -len(entry.data) % BLOCK
            yield entry.data
            yield b"\0" * pad
            offset += len(entry.data) + pad
    end = 2 * BLOCK
    end += -(offset + end) % RECORD
    yield b"\0" * end


def canonical_tar(entries: Iterable[Entry], mtime: int) -> bytes:
    """The tar bytes for ``entries`` in the order given (callers sort them; see
    :func:`sorted_entries`)."""
    return b"".join(_tar_pieces(entries, mtime))


@dataclass(frozen=True)
class TarGz:
    data: bytes  # the .tar.gz
    digest: str  # hex sha256 of data
    tar_digest: str  # hex sha256 of the uncompressed tar


_BATCH = 1024 * 1024


def tar_gz(entries: Iterable[Entry], mtime: int, level: int = COMPRESSLEVEL) -> TarGz:
    """``gzip_bytes(canonical_tar(entries, mtime))`` and both digests, in one pass.

    Deflate runs in a second thread fed 1 MiB batches while this one builds the tar (reading
    files if ``entries`` does) and hashes it: zlib and hashlib release the GIL on large buffers,
    so the two overlap as ``tar | gzip`` does. The bytes are the same as compressing in one call:
    without flushes, zlib's output does not depend on how its input is split.
    """
    _check_level(level)
    batches: queue.Queue[bytes | None] = queue.Queue(maxsize=4)
    result: dict[str, object] = {}

    def deflate() -> None:
        drained = False
        try:
            compressor = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, zlib.DEF_MEM_LEVEL, 0)
            parts = [GZIP_HEADER]
            crc, length = 0, 0
            while (batch := batches.get()) is not None:
                crc = zlib.crc32(batch, crc)
                length += len(batch)
                parts.append(compressor.compress(batch))
            drained = True
            parts.append(compressor.flush())
            parts.append(struct.pack("<II", crc & 0xFFFFFFFF, length & 0xFFFFFFFF))
            data = b"".join(parts)
            result["data"], result["digest"] = data, hashlib.sha256(data).hexdigest()
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc
            while not drained and batches.get() is not None:  # don't leave the producer blocked
                pass

    worker = threading.Thread(target=deflate, name="skillctl-deflate", daemon=True)
    worker.start()
    tar_hash = hashlib.sha256()
    try:
        pending: list[bytes] = []
        size = 0
        for piece in _tar_pieces(entries, mtime):
            pending.append(piece)
            size += len(piece)
            if size >= _BATCH:
                batch = b"".join(pending)
                tar_hash.update(batch)
                batches.put(batch)
                pending, size = [], 0
        if pending:
            batch = b"".join(pending)
            tar_hash.update(batch)
            batches.put(batch)
    finally:
        batches.put(None)
        worker.join()
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return TarGz(data=result["data"], digest=result["digest"], tar_digest=tar_hash.hexdigest())  # type: ignore[arg-type]


def layout(top: str, files: Iterable[str], extra_dirs: Iterable[str] = ()) -> list[tuple[str, str | None]]:
    """The canonical member order for a top folder ``top`` holding ``files`` (paths relative to
    ``top``): ``(member path, relative file path or None for a folder)``, every parent folder
    explicit, sorted by member path so a folder precedes its contents."""
    dirs = {top}

    def add_folders(rel: str, include_last: bool) -> None:
        parts = rel.split("/")
        for i in range(1, len(parts) + (1 if include_last else 0)):
            dirs.add(top + "/" + "/".join(parts[:i]))

    rels = list(files)
    for rel in rels:
        add_folders(rel, include_last=False)
    for rel in extra_dirs:
        add_folders(rel, include_last=True)
    order: list[tuple[str, str | None]] = [(d, None) for d in dirs]
    order += [(f"{top}/{rel}", rel) for rel in rels]
    order.sort(key=lambda item: item[0])
    return order


def sorted_entries(top: str, files: dict[str, tuple[bytes, bool]], extra_dirs: Iterable[str] = ()) -> list[Entry]:
    """Entries for ``files`` (relative path → (data, executable)) in :func:`layout` order."""
    return [
        Entry(path, None) if rel is None else Entry(path, files[rel][0], files[rel][1])
        for path, rel in layout(top, files, extra_dirs)
    ]


def _check_level(level: int) -> None:
    if level not in range(2, 9):  # GzipFile marks levels 1 and 9 in the XFL byte; we use neither
        raise ValueError(f"compression level {level} is not supported here")


def gzip_bytes(tar: bytes, level: int = COMPRESSLEVEL) -> bytes:
    """Gzip ``tar`` with a fixed header (no name, mtime 0, OS 255), byte-identical to
    ``gzip.GzipFile(filename="", mtime=0, compresslevel=level)``."""
    _check_level(level)
    compressor = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, zlib.DEF_MEM_LEVEL, 0)
    body = compressor.compress(tar) + compressor.flush()
    trailer = struct.pack("<II", zlib.crc32(tar) & 0xFFFFFFFF, len(tar) & 0xFFFFFFFF)
    return GZIP_HEADER + body + trailer
