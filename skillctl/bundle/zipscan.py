"""A strict zip reader for skill archives published by other tools.

Why not ``zipfile``: it finds the central directory by searching backwards and trusts it, so
data prepended to an archive, entries whose local header disagrees with the central directory,
entries that overlap (the "better zip bomb": thousands of names sharing one compressed kernel)
and Info-ZIP Unicode path fields that rename a member are all accepted, and each is a way for two
readers to see different contents. This reader accepts one unambiguous layout and refuses the rest:

- the archive starts with the first local header (nothing prepended) and ends with the end of
  central directory record, whose comment runs exactly to the end of the data (and holds no
  record signature of its own);
- local entries are contiguous and in order: each one starts where the previous ended (data
  descriptor included), the central directory starts where the last one ends, the end record
  where the central directory ends. No gaps, no overlaps, no entry counted twice;
- every local header agrees with its central directory entry: name, flags, method, and (without
  a data descriptor) CRC-32 and sizes; a data descriptor agrees with the central directory too;
- single disk, no Zip64, no encryption, methods ``stored`` and ``deflate`` only;
- member names are UTF-8 (flagged or plain ASCII/UTF-8); a Unicode path extra field must repeat
  the name exactly;
- Unix modes: regular files and folders only (links, devices, FIFOs and sockets refused, naming
  the member); a trailing ``/`` and the folder bit must agree.

Sizes are checked against the caps from the central directory before anything is inflated, and
inflation is bounded by the declared size: a member producing more (or less) is refused as soon
as it does, and its CRC-32 must match.
"""

from __future__ import annotations

import stat
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from skillctl.bundle.limits import BundleLimits
from skillctl.bundle.members import Refused
from skillctl.bundle.paths import RULE_UTF8

LOCAL_SIG = b"PK\x03\x04"
CENTRAL_SIG = b"PK\x01\x02"
END_SIG = b"PK\x05\x06"
DESCRIPTOR_SIG = b"PK\x07\x08"
ZIP64_END_SIG = b"PK\x06\x06"
ZIP64_LOCATOR_SIG = b"PK\x06\x07"
ZIP_MAGIC = LOCAL_SIG

_LOCAL = struct.Struct("<4sHHHHHIIIHH")  # 30 bytes
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")  # 46 bytes
_END = struct.Struct("<4sHHHHIIH")  # 22 bytes

FLAG_ENCRYPTED = 0x0001
FLAG_DESCRIPTOR = 0x0008
FLAG_STRONG_ENCRYPTION = 0x0040
FLAG_UTF8 = 0x0800
FLAG_MASKED_HEADERS = 0x2000
STORED, DEFLATED = 0, 8
HOST_UNIX = 3
EXTRA_ZIP64 = 0x0001
EXTRA_UNICODE_PATH = 0x7075
OUT_CHUNK = 256 * 1024

RULE_ZIP = "well-formed zip"
RULE_ZIP_LAYOUT = "contiguous zip entries, nothing prepended or overlapping"
RULE_ZIP_AGREE = "local headers agree with the central directory"
RULE_ZIP_FEATURES = "no encryption, Zip64 or exotic compression"
RULE_ZIP_CRC = "CRC-32 matches"
RULE_TYPES = "regular files and folders only"
RULE_NO_LINKS = "no links"


@dataclass(frozen=True)
class ZipMember:
    """One member, its local header checked against the central directory.

    ``path`` has no trailing slash; ``size`` is the declared uncompressed size; the compressed
    data is ``data[data_start:data_end]``."""

    path: str
    is_dir: bool
    size: int
    executable: bool
    method: int
    crc: int
    data_start: int
    data_end: int


@dataclass(frozen=True)
class _Entry:
    """A central directory entry before its local header has been checked."""

    raw_name: bytes
    name: str  # as written, trailing '/' kept
    flags: int
    method: int
    crc: int
    csize: int
    usize: int
    local: int
    is_dir: bool
    executable: bool


def _decode_name(raw: bytes, flags: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        # Without the UTF-8 flag the format says CP437, which other readers apply and we do
        # not: a name that is not UTF-8 would read differently there, so it is refused.
        what = "flagged UTF-8 but" if flags & FLAG_UTF8 else "not ASCII and"
        raise Refused(raw.decode("utf-8", "replace"), f"name is {what} not valid UTF-8", RULE_UTF8) from None


def _extra_fields(extra: bytes, name: str) -> Iterator[tuple[int, bytes]]:
    pos = 0
    while pos < len(extra):
        if pos + 4 > len(extra):
            raise Refused(name, "truncated extra field", RULE_ZIP)
        tag, size = struct.unpack_from("<HH", extra, pos)
        body = extra[pos + 4 : pos + 4 + size]
        if len(body) != size:
            raise Refused(name, f"extra field 0x{tag:04x} runs past its header", RULE_ZIP)
        yield tag, body
        pos += 4 + size


def _check_extra(extra: bytes, name: str, raw_name: bytes) -> None:
    for tag, body in _extra_fields(extra, name):
        if tag == EXTRA_ZIP64:
            raise Refused(name, "Zip64 extra field (a skill archive is far below Zip64 sizes)", RULE_ZIP_FEATURES)
        if tag == EXTRA_UNICODE_PATH:
            # version (1), CRC-32 of the header name (4), then the UTF-8 name readers may show
            # instead of the header name.
            if len(body) < 5 or body[0] != 1 or body[5:] != raw_name or struct.unpack_from("<I", body, 1)[0] != zlib.crc32(raw_name):
                raise Refused(name, "Unicode path extra field names the member differently", RULE_ZIP_AGREE)


def _kind(name: str, made_by: int, external: int) -> tuple[bool, bool]:
    """(is_dir, executable) from the name and the Unix mode, refusing links and devices."""
    trailing = name.endswith("/")
    if made_by >> 8 != HOST_UNIX:
        return trailing, False
    mode = external >> 16
    fmt = stat.S_IFMT(mode)
    if fmt == stat.S_IFLNK:
        raise Refused(name.rstrip("/"), "symbolic link (Unix mode in the zip entry)", RULE_NO_LINKS)
    if fmt not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise Refused(name.rstrip("/"), f"special file (Unix mode 0o{mode:o})", RULE_TYPES)
    if fmt == stat.S_IFDIR and not trailing or fmt == stat.S_IFREG and trailing:
        raise Refused(name, "folder bit and trailing '/' disagree (readers disagree on what it is)", RULE_ZIP)
    return trailing, bool(mode & 0o111) and not trailing


def _find_end(data: bytes) -> int:
    """Offset of the end of central directory record, whose comment must end the data. A
    second candidate (an end record hidden in the comment, which a reader searching from the end
    would pick instead) makes the archive ambiguous."""
    low = max(0, len(data) - _END.size - 0xFFFF)
    found: list[int] = []
    pos = data.rfind(END_SIG, low)
    while pos >= 0:
        if pos + _END.size <= len(data) and pos + _END.size + struct.unpack_from("<H", data, pos + 20)[0] == len(data):
            found.append(pos)
        pos = data.rfind(END_SIG, low, pos)
    if not found:
        raise Refused(None, "no end of central directory record (not a zip, or truncated)", RULE_ZIP)
    if len(found) > 1:
        raise Refused(None, "two end of central directory records (one hidden in the comment)", RULE_ZIP)
    comment = data[found[0] + _END.size :]
    if any(sig in comment for sig in (ZIP64_END_SIG, ZIP64_LOCATOR_SIG, CENTRAL_SIG, LOCAL_SIG)):
        raise Refused(None, "the archive comment holds a zip record signature", RULE_ZIP)
    return found[0]


class ZipScanner:
    """Reads a whole zip held in memory: ``members()`` checks the directory and every local
    header, then ``read_data`` inflates one member at a time."""

    def __init__(self, data: bytes, limits: BundleLimits) -> None:
        self.data = data
        self.limits = limits

    def members(self) -> list[ZipMember]:
        """Every member in archive order, after the layout checks above (no data read yet)."""
        data = self.data
        if data[:4] != LOCAL_SIG:
            raise Refused(None, "does not start with a zip local header (data prepended, or not a zip)", RULE_ZIP_LAYOUT)
        end = _find_end(data)
        _, disk, cd_disk, here, total, cd_size, cd_offset, _ = _END.unpack_from(data, end)
        if 0xFFFF in (here, total) or 0xFFFFFFFF in (cd_size, cd_offset):
            raise Refused(None, "Zip64 archive (a skill archive is far below Zip64 sizes)", RULE_ZIP_FEATURES)
        if disk or cd_disk or here != total:
            raise Refused(None, "multi-disk archive", RULE_ZIP_FEATURES)
        if total > self.limits.max_files + self.limits.max_dirs:
            raise Refused(None, f"declares {total} entries, over the {self.limits.max_files} files and {self.limits.max_dirs} folders allowed", "max_files")
        if cd_offset + cd_size != end:
            raise Refused(None, "the central directory does not end where the end record begins", RULE_ZIP_LAYOUT)
        return self._check_locals(self._central(cd_offset, total, end), cd_offset)

    def _central(self, offset: int, total: int, limit: int) -> list[_Entry]:
        data = self.data
        out: list[_Entry] = []
        pos = offset
        for _ in range(total):
            if pos + _CENTRAL.size > limit:
                raise Refused(None, "the central directory is shorter than its entry count", RULE_ZIP)
            (sig, made_by, _, flags, method, _, _, crc, csize, usize, nlen, elen, clen, disk, _, external, local) = _CENTRAL.unpack_from(data, pos)
            if sig != CENTRAL_SIG:
                raise Refused(None, f"bad central directory entry at byte {pos}", RULE_ZIP)
            raw_name = data[pos + _CENTRAL.size : pos + _CENTRAL.size + nlen]
            extra = data[pos + _CENTRAL.size + nlen : pos + _CENTRAL.size + nlen + elen]
            pos += _CENTRAL.size + nlen + elen + clen
            if pos > limit:
                raise Refused(None, "a central directory entry runs past the directory", RULE_ZIP)
            name = _decode_name(raw_name, flags)
            if flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION | FLAG_MASKED_HEADERS):
                raise Refused(name, "encrypted entry", RULE_ZIP_FEATURES)
            if method not in (STORED, DEFLATED):
                raise Refused(name, f"compression method {method} (only stored and deflate are read)", RULE_ZIP_FEATURES)
            if 0xFFFFFFFF in (csize, usize, local):
                raise Refused(name, "Zip64 sizes", RULE_ZIP_FEATURES)
            if disk:
                raise Refused(name, "entry on another disk", RULE_ZIP_FEATURES)
            if method == STORED and csize != usize:
                raise Refused(name, "stored entry whose sizes differ", RULE_ZIP)
            _check_extra(extra, name, raw_name)
            is_dir, executable = _kind(name, made_by, external)
            if is_dir and usize:
                raise Refused(name, "folder entry with content", RULE_ZIP)
            out.append(_Entry(raw_name, name, flags, method, crc, csize, usize, local, is_dir, executable))
        if pos != limit:
            raise Refused(None, "data between the central directory and the end record", RULE_ZIP_LAYOUT)
        return out

    def _check_locals(self, entries: list[_Entry], cd_offset: int) -> list[ZipMember]:
        """Members in archive order, each local header checked, the entries contiguous."""
        data = self.data
        expected = 0
        out: list[ZipMember] = []
        for e in sorted(entries, key=lambda entry: entry.local):
            name = e.name
            if e.local != expected:
                what = "overlaps the previous one" if e.local < expected else "leaves a gap before it"
                raise Refused(name, f"local entry at byte {e.local} {what} (overlapping entries are a zip bomb technique)", RULE_ZIP_LAYOUT)
            if e.local + _LOCAL.size > cd_offset:
                raise Refused(name, "local header runs into the central directory", RULE_ZIP_LAYOUT)
            (sig, _, lflags, lmethod, _, _, lcrc, lcsize, lusize, nlen, elen) = _LOCAL.unpack_from(data, e.local)
            raw_name = data[e.local + _LOCAL.size : e.local + _LOCAL.size + nlen]
            extra = data[e.local + _LOCAL.size + nlen : e.local + _LOCAL.size + nlen + elen]
            if sig != LOCAL_SIG:
                raise Refused(name, f"no local header at byte {e.local}", RULE_ZIP)
            if raw_name != e.raw_name or lflags != e.flags or lmethod != e.method:
                raise Refused(name, "local header differs from the central directory (name, flags or method)", RULE_ZIP_AGREE)
            _check_extra(extra, name, raw_name)
            start = e.local + _LOCAL.size + nlen + elen
            end = start + e.csize
            if end > cd_offset:
                raise Refused(name, "entry data runs into the central directory", RULE_ZIP_LAYOUT)
            declared = (e.crc, e.csize, e.usize)
            if e.flags & FLAG_DESCRIPTOR:
                if (lcrc, lcsize, lusize) not in ((0, 0, 0), declared):
                    raise Refused(name, "local header sizes differ from the central directory", RULE_ZIP_AGREE)
                desc_at = end + (4 if data[end : end + 4] == DESCRIPTOR_SIG else 0)
                if desc_at + 12 > cd_offset:
                    raise Refused(name, "data descriptor runs into the central directory", RULE_ZIP_LAYOUT)
                if struct.unpack_from("<III", data, desc_at) != declared:
                    raise Refused(name, "data descriptor differs from the central directory", RULE_ZIP_AGREE)
                expected = desc_at + 12
            else:
                if (lcrc, lcsize, lusize) != declared:
                    raise Refused(name, "local header sizes or CRC differ from the central directory", RULE_ZIP_AGREE)
                expected = end
            path = name[:-1] if e.is_dir else name  # "a//" keeps its empty component, refused later
            out.append(ZipMember(path, e.is_dir, e.usize, e.executable, e.method, e.crc, start, end))
        if expected != cd_offset:
            raise Refused(None, "data between the last entry and the central directory", RULE_ZIP_LAYOUT)
        return out

    def read_data(self, member: ZipMember) -> bytes:
        """The member's bytes: inflated at most to its declared size (the caller checked that
        against the caps), exactly that long, with a matching CRC-32."""
        raw = memoryview(self.data)[member.data_start : member.data_end]
        if member.method == STORED:
            out = bytes(raw)
        else:
            inflater = zlib.decompressobj(-zlib.MAX_WBITS)
            parts: list[bytes] = []
            produced = 0
            pending: bytes | memoryview = raw
            try:
                while True:
                    chunk = inflater.decompress(pending, OUT_CHUNK)
                    produced += len(chunk)
                    if produced > member.size:
                        raise Refused(member.path, f"inflates past its declared {member.size} bytes (zip bomb?)", RULE_ZIP)
                    parts.append(chunk)
                    pending = inflater.unconsumed_tail
                    if inflater.eof or (not pending and not chunk):
                        break
            except zlib.error as exc:
                raise Refused(member.path, f"corrupt deflate data ({exc})", RULE_ZIP) from None
            if not inflater.eof or inflater.unused_data or inflater.unconsumed_tail:
                raise Refused(member.path, "deflate data does not end exactly at the entry's end", RULE_ZIP)
            out = b"".join(parts)
        if len(out) != member.size:
            raise Refused(member.path, f"holds {len(out)} bytes, its entry declares {member.size}", RULE_ZIP)
        if zlib.crc32(out) != member.crc:
            raise Refused(member.path, "CRC-32 does not match (corrupt or tampered)", RULE_ZIP_CRC)
        return out
