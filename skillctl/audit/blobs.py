"""Long encoded strings: decode them (bounded) and look inside with the same rules.

A payload hidden as base64 or hex is invisible to every pattern rule. Each long run is decoded
(and, when the result is zlib/gzip data, decompressed with a hard output cap); if the result is
text, the caller scans it with the match rules, and a high or critical match inside becomes a
``blob.payload`` finding showing the decoded text. Other long blobs in scripts and instructions
are ``blob.long`` (low): they may be fonts or test data, but nobody can review them.
Data URIs of images and PEM blocks are skipped: they are what they say.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from skillctl.audit.textfile import TextFile

MIN_BASE64 = 120
MIN_HEX = 120
MAX_BLOBS_PER_FILE = 50
MAX_DECODED = 256 * 1024
# The look-behinds let a match start only where a run starts: inside a word the attempt fails at
# once instead of re-reading the rest of the word from every position. Hex digits are base64
# characters, so one pattern finds both; ``find`` tells them apart.
_BLOB = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{%d,1000000}={0,2}" % MIN_BASE64)
_ESCAPED = re.compile(r"(?<![0-9a-fA-F])(?:\\x[0-9a-fA-F]{2}){40,200000}")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2}){1,1000000}")
_DATA_URI = re.compile(r"data:[\w/+.-]{1,60};base64,$", re.IGNORECASE)
_PEM = re.compile(r"-----BEGIN [A-Z ]{1,40}-----")
_LONG_REPORTED_KINDS = frozenset({"shell", "python", "powershell", "javascript", "markdown"})


@dataclass(frozen=True)
class Blob:
    offset: int
    encoding: str
    length: int
    decoded: str | None  # text when the blob decodes to text


def _inflate(data: bytes) -> bytes:
    for wbits in (zlib.MAX_WBITS, 16 + zlib.MAX_WBITS, -zlib.MAX_WBITS):
        try:
            d = zlib.decompressobj(wbits)
            out = d.decompress(data, MAX_DECODED)
            if out:
                return out
        except zlib.error:
            continue
    return data


def _as_text(data: bytes) -> str | None:
    if data[:2] in (b"\x78\x9c", b"\x78\x01", b"\x78\xda", b"\x1f\x8b"):
        data = _inflate(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text:
        return None
    printable = sum(ch.isprintable() or ch in "\n\r\t" for ch in text)
    return text if printable >= 0.95 * len(text) else None


def _decode(encoding: str, raw: str) -> bytes | None:
    raw = raw[: MAX_DECODED * 2]
    try:
        if encoding == "b64":
            return base64.b64decode(raw + "=" * (-len(raw) % 4), validate=False)
        if encoding == "hex":
            return binascii.unhexlify(raw[: len(raw) // 2 * 2])
        return binascii.unhexlify(raw.replace("\\x", ""))
    except (binascii.Error, ValueError):
        return None


def find(file: TextFile) -> Iterator[Blob]:
    text = file.text
    matches = list(itertools.islice(_BLOB.finditer(text), MAX_BLOBS_PER_FILE))
    if "\\x" in text:
        matches += itertools.islice(_ESCAPED.finditer(text), MAX_BLOBS_PER_FILE)
    for m in sorted(matches, key=lambda m: m.start())[:MAX_BLOBS_PER_FILE]:
        raw = m.group()
        start = m.start()
        encoding = "esc" if raw.startswith("\\x") else "hex" if _HEX.fullmatch(raw) and len(raw) >= MIN_HEX else "b64"
        if encoding == "b64" and (raw.isalpha() or raw.isdigit() or "/" * 3 in raw):
            continue  # a word, a number or a path, not base64
        if encoding == "b64" and _DATA_URI.search(text, max(0, start - 64), start):
            continue
        if _PEM.search(text, max(0, start - 200), start):
            continue
        data = _decode(encoding, raw)
        yield Blob(start, encoding, len(raw), _as_text(data) if data else None)


def reportable_long(file: TextFile, blob: Blob) -> bool:
    return file.kind in _LONG_REPORTED_KINDS and blob.length >= 400
