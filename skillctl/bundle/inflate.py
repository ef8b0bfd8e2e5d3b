"""Bounded gzip decompression: the first line of defence against decompression bombs.

Nothing in the gzip header or trailer is trusted for sizing: output is produced in chunks of at
most :data:`OUT_CHUNK` bytes, counted as it comes, and refused as soon as the count passes the
cap, so a 2 GB bomb costs one chunk of memory and cap+chunk bytes of work. The stream must be
exactly one complete gzip member: truncation, a corrupt CRC/length trailer (checked by zlib),
trailing garbage and concatenated members are all refused, because each is a way to make two
readers see different contents.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterator

from skillctl.bundle.members import Refused

IN_CHUNK = 64 * 1024
OUT_CHUNK = 256 * 1024
GZIP_MAGIC = b"\x1f\x8b"
RULE_GZIP = "one complete gzip stream"
RULE_INFLATED = "max_total_size"


class Inflater:
    """Iterate over the decompressed bytes of ``data``; ``tar_hash`` hashes everything produced.

    Raises :class:`Refused` (member ``None``) for input that is not gzip, is corrupt, truncated,
    followed by anything, or would inflate past ``max_output`` bytes.
    """

    def __init__(self, data: bytes | bytearray | memoryview, max_output: int) -> None:
        self._data = memoryview(data).cast("B")
        self.max_output = max_output
        self.produced = 0
        self.tar_hash = hashlib.sha256()
        self.finished = False

    def __iter__(self) -> Iterator[bytes]:
        data = self._data
        if bytes(data[:2]) != GZIP_MAGIC:
            raise Refused(None, "not gzip data (a bundle is a .tar.gz)", RULE_GZIP)
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip wrapper only; zlib checks CRC and ISIZE
        pos = 0
        pending: bytes | memoryview = b""
        while not inflater.eof:
            if not pending:
                if pos >= len(data):
                    out = self._inflate(inflater, b"")  # drain what zlib still holds back
                    if not out:
                        break
                    yield out
                    continue
                pending = data[pos : pos + IN_CHUNK]
                pos += len(pending)
            out = self._inflate(inflater, pending)
            pending = inflater.unconsumed_tail
            if out:
                yield out
        if not inflater.eof:
            raise Refused(None, "the gzip stream is truncated", RULE_GZIP)
        if inflater.unused_data or pos < len(data):
            rest = bytes(inflater.unused_data[:2]) if inflater.unused_data else bytes(data[pos : pos + 2])
            what = "a second gzip member follows the first" if rest == GZIP_MAGIC else "data follows the end of the gzip stream"
            raise Refused(None, what, RULE_GZIP)
        self.finished = True

    def _inflate(self, inflater: "zlib._Decompress", chunk: bytes | memoryview) -> bytes:
        try:
            out = inflater.decompress(chunk, OUT_CHUNK)
        except zlib.error as exc:
            raise Refused(None, f"corrupt gzip stream ({exc})", RULE_GZIP) from None
        self.produced += len(out)
        if self.produced > self.max_output:
            raise Refused(None, f"decompresses to more than {self.max_output} bytes (decompression bomb?)", RULE_INFLATED)
        self.tar_hash.update(out)
        return out
