"""Building zip archives byte by byte for the tests, hostile ones included: no binary fixtures.

``zip_bytes`` writes local headers, data, optional data descriptors, the central directory and
the end record from ``Z`` members; every field a reader could be fooled by can be set apart in
the local header and the central directory (``local_name``, ``crc``, ``usize``, ``extra``…), and
``offset_of`` points a central entry at another member's local header (overlapping entries).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

SKILL_MD = b"---\nname: evil\ndescription: A skill used to test hostile zip archives.\n---\n\nBody.\n"
UNIX, DOS = 3, 0


@dataclass
class Z:
    name: str | bytes
    data: bytes = b""
    method: int = 8
    mode: int | None = 0o100644  # Unix mode in the external attributes; None: a DOS-made entry
    flags: int = 0x0800  # UTF-8 names
    extra: bytes = b""
    local_name: bytes | None = None
    local_flags: int | None = None
    crc: int | None = None  # both headers, when the true CRC must not be used
    usize: int | None = None  # declared uncompressed size, both headers
    compressed: bytes | None = None  # the data as stored, when it must not be deflate(data)
    descriptor: bool = False
    descriptor_crc: int | None = None
    offset_of: int | None = None  # central entry points at member #offset_of's local header

    @property
    def raw_name(self) -> bytes:
        return self.name if isinstance(self.name, bytes) else self.name.encode("utf-8")


def deflate(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


def skill_members(body: bytes = SKILL_MD) -> list[Z]:
    return [Z("SKILL.md", body)]


def zip_bytes(members: list[Z], *, comment: bytes = b"", prefix: bytes = b"", gap: bytes = b"", count: int | None = None) -> bytes:
    """The zip of ``members``. ``prefix`` goes before the first entry, ``gap`` between the last
    entry and the central directory; ``count`` overrides the entry count in the end record."""
    out = bytearray(prefix)
    offsets: list[int] = []
    stored: list[tuple[bytes, int, int, int]] = []  # compressed, crc, usize, flags
    for m in members:
        comp = m.compressed if m.compressed is not None else (deflate(m.data) if m.method == 8 else m.data)
        crc = zlib.crc32(m.data) if m.crc is None else m.crc
        usize = len(m.data) if m.usize is None else m.usize
        flags = m.flags | (0x0008 if m.descriptor else 0)
        lflags = flags if m.local_flags is None else m.local_flags
        offsets.append(len(out))
        name = m.raw_name if m.local_name is None else m.local_name
        lcrc, lcsize, lusize = (0, 0, 0) if m.descriptor else (crc, len(comp), usize)
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, lflags, m.method, 0, 0x21, lcrc, lcsize, lusize, len(name), len(m.extra))
        out += name + m.extra + comp
        if m.descriptor:
            dcrc = crc if m.descriptor_crc is None else m.descriptor_crc
            out += b"PK\x07\x08" + struct.pack("<III", dcrc, len(comp), usize)
        stored.append((comp, crc, usize, flags))
    out += gap
    cd_start = len(out)
    for i, m in enumerate(members):
        comp, crc, usize, flags = stored[i]
        made_by = (UNIX << 8 | 20) if m.mode is not None else 20
        external = (m.mode << 16) if m.mode is not None else (0x10 if m.raw_name.endswith(b"/") else 0)
        offset = offsets[m.offset_of if m.offset_of is not None else i]
        out += struct.pack(
            "<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", made_by, 20, flags, m.method, 0, 0x21, crc, len(comp), usize,
            len(m.raw_name), len(m.extra), 0, 0, 0, external, offset,
        )
        out += m.raw_name + m.extra
    cd_size = len(out) - cd_start
    n = len(members) if count is None else count
    out += struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n, cd_size, cd_start, len(comment)) + comment
    return bytes(out)


def unicode_path_extra(header_name: bytes, shown: bytes) -> bytes:
    body = b"\x01" + struct.pack("<I", zlib.crc32(header_name)) + shown
    return struct.pack("<HH", 0x7075, len(body)) + body
