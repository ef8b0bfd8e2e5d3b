"""A strict, streaming tar reader for bundles.

Why not ``tarfile``: it buffers a PAX header of any size before the caller sees it, treats a
corrupt header in mid-archive as a quiet end of archive (hiding what follows), applies global
PAX headers and GNU sparse maps, and accepts fields other readers interpret differently. A
bundle is read by more than one program (this reader, ``tar``, Docker's ``put_archive``), and
every leniency is a chance for them to disagree about the contents. This reader accepts a narrow,
unambiguous subset and refuses everything else:

- ustar headers (POSIX ``ustar\\0`` ``00``, or GNU ``ustar  \\0`` with the GNU-only fields zero),
  verified checksums, octal or base-256 numbers spelled the strict way;
- member types: regular file (``0``, NUL), folder (``5``, size 0), one PAX extended header
  (``x``) or GNU long name (``L``) per member, each at most ``max_header_size`` bytes;
- PAX keys: ``path``, ``size``, times, owners and ``comment`` only: ``linkpath`` is a link,
  ``GNU.sparse.*`` renames or reshapes a file for GNU tar alone, ``SCHILY.xattr.*`` and
  ``LIBARCHIVE.*`` carry attributes (capabilities, ACLs) some extractors apply;
- an end-of-archive zero block followed only by zero padding, at most :data:`TRAILING_CAP`.

Links, devices, FIFOs, contiguous/sparse files, global headers and anything unknown are refused
naming the member. Sizes are checked against the caps before data is read.

One exception, for archives other tools publish (``allow_global_comment``): ``git archive``
starts every tar with a global PAX header holding only ``comment=<commit id>``. A global header
in first position whose only key is ``comment`` changes nothing any reader extracts, so it is
skipped; any other global header is still refused.

A ``lenient`` scanner is for archives whose members are someone else's files rather than a
bundle (a sandbox's workspace copied out): links, devices and FIFOs are returned (``kind`` and
``link`` say what they are) and names that are not UTF-8 are decoded with ``surrogateescape``,
so the caller can skip and report them one by one instead of losing the whole archive. Its
structure is held to the same rules: checksums, numbers, header sizes, PAX keys, padding, the
end of the archive; sparse files and global headers are still refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from skillctl.bundle.limits import BundleLimits
from skillctl.bundle.members import Refused
from skillctl.bundle.paths import RULE_UTF8

BLOCK = 512
ZERO_BLOCK = bytes(BLOCK)
# tarfile, GNU tar and bsdtar pad to a 10,240-byte record; a megabyte of zeros is generous.
TRAILING_CAP = 1024 * 1024
POSIX_MAGIC = b"ustar\x0000"
GNU_MAGIC = b"ustar  \x00"

RULE_TAR = "well-formed ustar/PAX tar"
RULE_TYPES = "regular files and folders only"
RULE_NO_LINKS = "no links"
RULE_NO_GLOBAL = "no global PAX headers"
RULE_PAX_KEYS = "PAX keys limited to path, size, times, owners and comment"
RULE_HEADER_SIZE = "max_header_size"

_PAX_ALLOWED = frozenset({"path", "size", "mtime", "atime", "ctime", "uid", "gid", "uname", "gname", "comment"})
_TYPE_NAMES = {
    b"1": ("hard link", RULE_NO_LINKS),
    b"2": ("symbolic link", RULE_NO_LINKS),
    b"3": ("character device", RULE_TYPES),
    b"4": ("block device", RULE_TYPES),
    b"6": ("FIFO", RULE_TYPES),
    b"7": ("contiguous file", RULE_TYPES),
    b"S": ("GNU sparse file", RULE_TYPES),
    b"g": ("global PAX header", RULE_NO_GLOBAL),
}


@dataclass(frozen=True)
class Header:
    """One member as announced by its header(s): ``path`` has no trailing slash.

    ``kind`` is "file" or "dir", or for a lenient scanner one of the names in ``_TYPE_NAMES``
    ("hard link", "symbolic link", "FIFO", …) with ``link`` its target as written. ``mode`` is
    the permission bits as written (setuid and setgid included), ``mtime`` the modification
    time when the archive gives one."""

    path: str
    is_dir: bool
    size: int
    executable: bool
    kind: str = "file"
    link: str = ""
    mode: int = 0
    mtime: float | None = None


@dataclass(frozen=True)
class _Raw:
    name: bytes
    type: bytes
    size: int
    mode: int
    linkname: bytes
    mtime: int


def _number(field: bytes) -> int:
    """A numeric header field: base-256 when the high bit of the first byte is set, else octal
    digits padded by spaces or NULs. Raises ValueError for anything else (``+7``, ``0o7``,
    ``7_7``, which ``int(x, 8)`` would accept)."""
    if field[:1] in (b"\x80", b"\xff"):
        value = int.from_bytes(field[1:], "big")
        return value - 256 ** (len(field) - 1) if field[0] == 0xFF else value
    digits = field.split(b"\0", 1)[0].strip(b" ")
    if digits and not all(0x30 <= c <= 0x37 for c in digits):
        raise ValueError(field)
    return int(digits, 8) if digits else 0


def _nts(field: bytes) -> bytes:
    return field.split(b"\0", 1)[0]


def _decode(name: bytes, lenient: bool = False) -> str:
    """``name`` as text; a lenient scanner keeps undecodable bytes as surrogates for the caller
    to judge, a strict one refuses them."""
    try:
        return name.decode("utf-8")
    except UnicodeDecodeError:
        if lenient:
            return name.decode("utf-8", "surrogateescape")
        raise Refused(name.decode("utf-8", "replace"), "path is not valid UTF-8", RULE_UTF8) from None


def _checksum_ok(block: bytes, stored: int) -> bool:
    # As tarfile does: the chksum field counts as eight spaces; some writers sum signed bytes.
    blanked = block[:148] + b" " * 8 + block[156:]
    unsigned = sum(blanked)
    if stored == unsigned:
        return True
    return stored == unsigned - 256 * sum(1 for b in blanked if b > 127)


def _parse_header(block: bytes, offset: int) -> _Raw:
    where = f"header at byte {offset}"
    magic = block[257:265]
    if magic not in (POSIX_MAGIC, GNU_MAGIC):
        raise Refused(None, f"{where} is not a ustar/PAX/GNU tar header", RULE_TAR)
    try:
        stored = _number(block[148:156])
        mode = _number(block[100:108])
        size = _number(block[124:136])
        mtime = _number(block[136:148])
        for start, end in ((108, 116), (116, 124), (329, 337), (337, 345)):  # uid gid dev
            _number(block[start:end])
    except ValueError:
        raise Refused(None, f"{where} has a malformed numeric field", RULE_TAR) from None
    if not _checksum_ok(block, stored):
        raise Refused(None, f"{where} has a bad checksum (corrupt or crafted archive)", RULE_TAR)
    name = _nts(block[0:100])
    if magic == POSIX_MAGIC:
        prefix = _nts(block[345:500])
        if prefix:
            name = prefix + b"/" + name
    elif block[345:500] != bytes(155):
        # GNU keeps atime/ctime/sparse data there; tarfile would read it as a path prefix.
        raise Refused(_decode(name), "GNU header with atime/ctime/sparse fields set", RULE_TAR)
    if size < 0:
        raise Refused(_decode(name), "negative size", RULE_TAR)
    return _Raw(name=name, type=block[156:157], size=size, mode=mode, linkname=_nts(block[157:257]), mtime=mtime)


def _parse_pax(payload: bytes, header_name: str, lenient: bool = False) -> dict[str, str]:
    """PAX records ``"<len> <key>=<value>\\n"``, exactly covering the payload; keys unique.
    Keys must be UTF-8; a lenient scanner keeps values that are not as surrogates."""
    records: dict[str, str] = {}
    pos = 0
    while pos < len(payload):
        space = payload.find(b" ", pos, pos + 20)
        digits = payload[pos:space] if space > pos else b""
        if not digits or not digits.isdigit() or (len(digits) > 1 and digits[:1] == b"0"):
            raise Refused(header_name, f"malformed PAX record at byte {pos}", RULE_TAR)
        length = int(digits)
        record = payload[pos : pos + length]
        if length <= len(digits) + 1 or len(record) != length or not record.endswith(b"\n"):
            raise Refused(header_name, f"malformed PAX record at byte {pos}", RULE_TAR)
        key, eq, value = record[len(digits) + 1 : -1].partition(b"=")
        if not eq or not key:
            raise Refused(header_name, f"malformed PAX record at byte {pos}", RULE_TAR)
        try:
            key_text, value_text = key.decode("utf-8"), _decode(value, lenient) if lenient else value.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(header_name, f"PAX record at byte {pos} is not UTF-8", RULE_UTF8) from None
        if key_text in records:
            raise Refused(header_name, f"PAX key {key_text!r} appears twice", RULE_TAR)
        records[key_text] = value_text
        pos += length
    return records


def _gnu_long_name(payload: bytes, header_name: str) -> bytes:
    name, _, rest = payload.partition(b"\0")
    if rest.strip(b"\0"):
        raise Refused(header_name, "GNU long name has data after its end", RULE_TAR)
    return name


class TarScanner:
    """Reads members from an iterable of decompressed chunks, one header at a time.

    Use: ``while (h := scanner.next_member()) is not None: data = scanner.read_data(h)`` (call
    ``read_data`` for files only), then ``scanner.finish()``.
    """

    def __init__(self, chunks: Iterable[bytes], limits: BundleLimits, *, allow_global_comment: bool = False,
                 lenient: bool = False) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._allow_global_comment = allow_global_comment
        self._lenient = lenient
        self._buf = bytearray()
        self._pos = 0
        self.offset = 0  # bytes of tar consumed
        self.limits = limits

    def _fill(self, n: int) -> int:
        while len(self._buf) - self._pos < n:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            if self._pos > 1024 * 1024:  # drop consumed bytes now and then, not on every read
                del self._buf[: self._pos]
                self._pos = 0
            self._buf += chunk
        return len(self._buf) - self._pos

    def _read(self, n: int) -> bytes:
        if self._fill(n) < n:
            raise Refused(None, f"the tar stream is truncated at byte {self.offset + len(self._buf) - self._pos}", RULE_TAR)
        out = bytes(self._buf[self._pos : self._pos + n])
        self._pos += n
        self.offset += n
        return out

    def _skip_padding(self, size: int) -> None:
        self._read(-size % BLOCK)

    def next_member(self) -> Header | None:
        """The next member's header, or None at the end-of-archive marker."""
        extended: tuple[str, dict[str, str] | str] | None = None  # (header name, PAX records | GNU name)
        long_link: str | None = None
        while True:
            start = self.offset
            if self._fill(BLOCK) == 0:
                raise Refused(None, "the tar stream ends without an end-of-archive marker (truncated?)", RULE_TAR)
            block = self._read(BLOCK)
            if block == ZERO_BLOCK:
                if extended is not None or long_link is not None:
                    name = extended[0] if extended is not None else "././@LongLink"
                    raise Refused(name, "extended header not followed by a member", RULE_TAR)
                return None
            raw = _parse_header(block, start)
            if raw.type == b"g" and self._allow_global_comment and start == 0:
                self._skip_global_comment(raw)
                continue
            if raw.type in (b"x", b"L", b"K"):
                header_name = raw.name.decode("utf-8", "replace")
                if raw.size > self.limits.max_header_size:
                    raise Refused(
                        header_name,
                        f"extended header of {raw.size} bytes, over the limit of {self.limits.max_header_size}",
                        RULE_HEADER_SIZE,
                    )
                payload = self._read(raw.size)
                if self._read(-raw.size % BLOCK).strip(b"\0"):
                    # tarfile parses the whole padded block: records hidden past `size` would be
                    # seen by it and not by us.
                    raise Refused(header_name, "data hidden in the padding of an extended header", RULE_TAR)
                if raw.type == b"K":
                    # A GNU long link target: read (capped) so the refusal can name the member.
                    if long_link is not None:
                        raise Refused(header_name, "two long link names for one member", RULE_TAR)
                    long_link = _gnu_long_name(payload, header_name).decode("utf-8", "surrogateescape")
                    continue
                if extended is not None:
                    raise Refused(header_name, "two extended headers for one member", RULE_TAR)
                if raw.type == b"x":
                    extended = (header_name, _parse_pax(payload, header_name, self._lenient))
                else:
                    extended = (header_name, _decode(_gnu_long_name(payload, header_name), self._lenient))
                continue
            header = self._member(raw, extended)
            if long_link is not None:
                if not (self._lenient and header.kind in ("hard link", "symbolic link")):
                    raise Refused(header.path, f"link to {long_link!r} (GNU long link name)", RULE_NO_LINKS)
                header = replace(header, link=long_link)
            return header

    def _skip_global_comment(self, raw: _Raw) -> None:
        header_name = raw.name.decode("utf-8", "replace")
        if raw.size > self.limits.max_header_size:
            raise Refused(header_name, f"global header of {raw.size} bytes, over the limit of {self.limits.max_header_size}", RULE_HEADER_SIZE)
        records = _parse_pax(self._read(raw.size), header_name)
        if self._read(-raw.size % BLOCK).strip(b"\0"):
            raise Refused(header_name, "data hidden in the padding of a global header", RULE_TAR)
        if set(records) - {"comment"}:
            keys = ", ".join(sorted(set(records) - {"comment"}))
            raise Refused(header_name, f"global PAX header sets {keys} for every member", RULE_NO_GLOBAL)

    def _member(self, raw: _Raw, extended: tuple[str, dict[str, str] | str] | None) -> Header:
        lenient = self._lenient
        name = _decode(raw.name, lenient)
        size = raw.size
        mtime: float = raw.mtime
        linkname = raw.linkname.decode("utf-8", "surrogateescape" if lenient else "replace")
        if extended is not None and isinstance(extended[1], str):
            name = extended[1]
        elif extended is not None:
            records = extended[1]
            assert isinstance(records, dict)
            name = records.get("path", name)
            for key in records:
                if key == "linkpath" and lenient and raw.type in (b"1", b"2"):
                    linkname = records[key]
                elif key == "linkpath":
                    raise Refused(name, f"link to {records[key]!r} (PAX linkpath)", RULE_NO_LINKS)
                elif key not in _PAX_ALLOWED:
                    raise Refused(name, f"PAX key {key!r} is not allowed", RULE_PAX_KEYS)
            if "mtime" in records:
                try:
                    mtime = float(records["mtime"])
                except ValueError:
                    raise Refused(name, f"PAX mtime {records['mtime']!r} is not a number", RULE_TAR) from None
            if "size" in records:
                text = records["size"]
                if not (text.isascii() and text.isdigit()):
                    raise Refused(name, f"PAX size {text!r} is not a number", RULE_TAR)
                size = int(text)
        mode = raw.mode & 0o7777
        if raw.type in _TYPE_NAMES:
            kind, rule = _TYPE_NAMES[raw.type]
            if lenient and raw.type not in (b"S", b"g"):  # a sparse map or global header changes how others read
                return Header(name, False, size, False, kind=kind, link=linkname, mode=mode, mtime=mtime)
            target = f" to {linkname!r}" if rule == RULE_NO_LINKS and linkname else ""
            raise Refused(name, f"{kind}{target}", rule)
        if raw.type == b"5":
            if size != 0:
                raise Refused(name, "folder entry with a size (readers disagree on what follows)", RULE_TAR)
            if name.endswith("/"):
                name = name[:-1]
            return Header(name, True, 0, False, kind="dir", mode=mode, mtime=mtime)
        if raw.type in (b"0", b"\0"):
            if raw.type == b"\0" and raw.name.endswith(b"/"):
                # Pre-POSIX folder spelling: tarfile and GNU tar make it a folder even when a PAX
                # path says otherwise.
                raise Refused(name, "type-NUL entry whose header name ends in '/' (old-style folder)", RULE_TAR)
            return Header(name, False, size, bool(raw.mode & 0o111), mode=mode, mtime=mtime)
        kind = raw.type.decode("ascii", "replace")
        raise Refused(name, f"unknown member type {kind!r}", RULE_TYPES)

    def read_data(self, header: Header) -> bytes:
        """The bytes of a file member (the caller has checked its size against the caps)."""
        data = self._read(header.size)
        self._skip_padding(header.size)
        return data

    def iter_data(self, header: Header, chunk_size: int = 1 << 16) -> Iterator[bytes]:
        """A member's bytes in pieces of at most ``chunk_size``, for members too big to hold;
        consume it whole (or call ``skip_data``) before the next ``next_member``."""
        left = header.size
        while left:
            piece = self._read(min(left, chunk_size))
            left -= len(piece)
            yield piece
        self._skip_padding(header.size)

    def skip_data(self, header: Header) -> None:
        """Pass over a member's bytes (a link or device that carries some) without keeping them."""
        for _ in self.iter_data(header):
            pass

    def finish(self) -> None:
        """After the end-of-archive block: only zero padding (capped) may follow; draining the
        chunks also runs the gzip end-of-stream checks."""
        seen = 0
        while True:
            available = self._fill(1)
            if available == 0:
                return
            rest = self._buf[self._pos :]
            if rest.count(0) != len(rest):
                raise Refused(None, "data after the end-of-archive marker", RULE_TAR)
            seen += len(rest)
            self.offset += len(rest)
            self._buf.clear()
            self._pos = 0
            if seen > TRAILING_CAP:
                raise Refused(None, f"more than {TRAILING_CAP} bytes of padding after the end of the archive", RULE_TAR)
