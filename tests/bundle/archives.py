"""Building archives for the tests, hostile ones included, in code: no binary fixtures.

``tar_bytes`` writes members with ``tarfile`` exactly as given (it does not sanitise names or
types when members are added with ``addfile``), ``patch_header`` edits one header and fixes its
checksum, and ``zero_bomb`` makes a gzip stream that inflates to gigabytes of zeros in
milliseconds by repeating one fully-flushed deflate block, with a correct CRC-32 computed by
zlib's crc32_combine algorithm (so the stream is valid: an unbounded reader would accept it).
"""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import zlib
from dataclasses import dataclass, field

SKILL_MD = b"---\nname: evil\ndescription: A skill used to test hostile archives.\n---\n\nBody.\n"


@dataclass
class M:
    """A member to write: ``name`` exactly as it goes in the header."""

    name: str
    data: bytes = b""
    type: bytes = tarfile.REGTYPE
    mode: int = 0o644
    linkname: str = ""
    pax: dict[str, str] = field(default_factory=dict)
    size: int | None = None  # header size when it must differ from len(data)
    devmajor: int = 0
    devminor: int = 0


def skill(name: str = "evil", body: bytes = SKILL_MD) -> list[M]:
    return [M(name, type=tarfile.DIRTYPE, mode=0o755), M(f"{name}/SKILL.md", body)]


def _info(m: M) -> tarfile.TarInfo:
    info = tarfile.TarInfo(m.name)
    info.type = m.type
    info.mode = m.mode
    info.size = len(m.data) if m.size is None else m.size
    info.linkname = m.linkname
    info.mtime = 1_700_000_000
    info.devmajor, info.devminor = m.devmajor, m.devminor
    info.pax_headers = dict(m.pax)
    return info


def header_bytes(m: M, fmt: int = tarfile.PAX_FORMAT) -> bytes:
    return _info(m).tobuf(fmt, "utf-8", "surrogateescape")


def tar_bytes(members: list[M], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for m in members:
            info = _info(m)
            has_data = m.type in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE) and m.data
            tf.addfile(info, io.BytesIO(m.data) if has_data else None)
    return buf.getvalue()


def files_tar(files: dict[str, bytes], mode: int = 0o644) -> bytes:
    """A plain tar of regular files (parents implied), e.g. to stage into a sandbox."""
    return tar_bytes([M(name, data, mode=mode) for name, data in files.items()])


def raw_members(members: list[M], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """Headers and data of ``members`` with no end-of-archive marker, to append more to."""
    out = []
    for m in members:
        out.append(header_bytes(m, fmt))
        if m.data:
            out.append(m.data + bytes(-len(m.data) % 512))
    return b"".join(out)


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def tgz(*extra: M, name: str = "evil", fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """A gzipped tar of a minimal skill ``name`` followed by ``extra`` members."""
    return gz(tar_bytes(skill(name) + list(extra), fmt))


def header_offsets(tar: bytes) -> list[int]:
    """Offsets of the member headers ``tarfile`` sees (extended headers excluded)."""
    with tarfile.open(fileobj=io.BytesIO(tar), mode="r:") as tf:
        return [m.offset for m in tf.getmembers()]


def fix_checksum(block: bytearray) -> None:
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)


def patch_header(tar: bytes, offset: int, start: int, value: bytes) -> bytes:
    """``tar`` with ``value`` written at ``start`` of the header at ``offset``, checksum fixed."""
    out = bytearray(tar)
    block = bytearray(out[offset : offset + 512])
    block[start : start + len(value)] = value
    fix_checksum(block)
    out[offset : offset + 512] = block
    return bytes(out)


# --- decompression bombs -------------------------------------------------------------------

_GF2_DIM = 32


def _gf2_times(mat: list[int], vec: int) -> int:
    total, i = 0, 0
    while vec:
        if vec & 1:
            total ^= mat[i]
        vec >>= 1
        i += 1
    return total


def _gf2_square(mat: list[int]) -> list[int]:
    return [_gf2_times(mat, mat[n]) for n in range(_GF2_DIM)]


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of A+B from crc(A), crc(B) and len(B): a port of zlib's crc32_combine."""
    if len2 <= 0:
        return crc1
    odd = [0xEDB88320] + [1 << (n - 1) for n in range(1, _GF2_DIM)]
    even = _gf2_square(odd)  # two zero bits
    odd = _gf2_square(even)  # four zero bits
    while True:
        even = _gf2_square(odd)
        if len2 & 1:
            crc1 = _gf2_times(even, crc1)
        len2 >>= 1
        if not len2:
            break
        odd = _gf2_square(even)
        if len2 & 1:
            crc1 = _gf2_times(odd, crc1)
        len2 >>= 1
        if not len2:
            break
    return crc1 ^ crc2


def zero_bomb(prefix: bytes, zeros: int, unit: int = 1 << 20) -> bytes:
    """A valid gzip stream of ``prefix`` followed by ``zeros`` zero bytes (a multiple of
    ``unit``), built without compressing the zeros more than twice."""
    assert zeros % unit == 0
    comp = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    head = comp.compress(prefix) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(bytes(unit)) + comp.flush(zlib.Z_FULL_FLUSH)
    again = comp.compress(bytes(unit)) + comp.flush(zlib.Z_FULL_FLUSH)
    assert block == again, "a full flush resets the deflate state, so equal input gives equal output"
    tail = comp.flush(zlib.Z_FINISH)
    crc_unit = zlib.crc32(bytes(unit))
    crc = zlib.crc32(prefix)
    crc = crc32_combine(crc, _zeros_crc(crc_unit, unit, zeros // unit), zeros)
    total = len(prefix) + zeros
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + head + block * (zeros // unit) + tail + struct.pack("<II", crc, total & 0xFFFFFFFF)


def _zeros_crc(crc_unit: int, unit: int, count: int) -> int:
    """CRC-32 of ``count * unit`` zero bytes, by doubling."""
    result, result_len = 0, 0
    power, power_len = crc_unit, unit
    while count:
        if count & 1:
            result = crc32_combine(result, power, power_len) if result_len else power
            result_len += power_len
        power = crc32_combine(power, power, power_len)
        power_len *= 2
        count >>= 1
    return result
