"""Hidden Unicode: characters a reviewer does not see but a model or a shell does.

One regular expression finds every run of suspicious characters (C speed); each run is then
classified and, where it encodes something, decoded so the finding shows the hidden text:

- tag characters U+E0000–E007F mirror ASCII (U+E0041 is "A"): decoded directly;
- variation selectors after a character carry one byte each (VS1–16 → 0–15, VS17–256 →
  16–255, the "emoji smuggling" scheme): decoded as UTF-8;
- long runs of zero-width characters carry bits (one character for 0, another for 1): decoded
  as 8-bit ASCII when that gives printable text, otherwise shown as code points;
- bidi embeddings, overrides and isolates reorder what is displayed (Trojan Source);
- anything else invisible (a lone zero-width space, a soft hyphen) is reported once per file.

Legitimate uses are left alone: flag emoji (U+1F3F4 + tags spelling a region), a single VS15/VS16
after a character (text/emoji presentation), zero-width joiners inside emoji sequences and
between letters of scripts that need them, a byte-order mark at the start of a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from skillctl.audit.textfile import TextFile

_SUSPICIOUS = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069"
    "\u206a-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f\U000e0100-\U000e01ef]{1,100000}"
)
_TAGS = range(0xE0000, 0xE0080)
_BIDI = frozenset([*range(0x202A, 0x202F), *range(0x2066, 0x206A)])
_ZERO_WIDTH = frozenset([0x200B, 0x200C, 0x200D, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x180E, 0xFEFF])
_VS_LOW = range(0xFE00, 0xFE10)
_VS_HIGH = range(0xE0100, 0xE01F0)
ZERO_WIDTH_RUN = 8  # fewer than one byte's worth of bits is not a carrier
_FLAG_BASE = "\U0001F3F4"
_SHOWN = 300


@dataclass(frozen=True)
class Hit:
    analyzer: str
    offset: int
    evidence: str
    detail: str


def _codepoints(run: str) -> str:
    return "".join(f"<U+{ord(c):04X}>" for c in run[:12]) + ("…" if len(run) > 12 else "")


def _printable(text: str) -> str:
    shown = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text[:_SHOWN])
    return shown + ("…" if len(text) > _SHOWN else "")


def _decode_tags(run: str) -> str:
    return "".join(chr(ord(c) - 0xE0000) for c in run if 0x20 <= ord(c) - 0xE0000 < 0x7F)


def _decode_selectors(run: str) -> bytes:
    out = bytearray()
    for c in run:
        cp = ord(c)
        if cp in _VS_LOW:
            out.append(cp - 0xFE00)
        elif cp in _VS_HIGH:
            out.append(cp - 0xE0100 + 16)
    return bytes(out)


def _decode_bits(run: str) -> str | None:
    """Zero-width steganography: the two most common characters as 0 and 1, 8 bits a byte."""
    counts: dict[str, int] = {}
    for c in run:
        counts[c] = counts.get(c, 0) + 1
    if len(counts) < 2:
        return None
    zero, one = sorted(counts, key=lambda c: (-counts[c], c))[:2]
    for a, b in ((zero, one), (one, zero)):
        bits = "".join("0" if c == a else "1" for c in run if c in (a, b))
        data = bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits) - 7, 8))
        text = data.decode("ascii", errors="replace")
        if text and sum(ch.isprintable() for ch in text) >= 0.9 * len(text):
            return text
    return None


def _is_flag_sequence(text: str, start: int, run: str) -> bool:
    decoded = _decode_tags(run)
    return start > 0 and text[start - 1] == _FLAG_BASE and run.endswith("\U000E007F") and decoded.isalnum() and len(decoded) <= 7


def scan(file: TextFile) -> Iterator[Hit]:
    text = file.text
    invisible_first: int | None = None
    invisible_count = 0
    bidi_line = -1
    for m in _SUSPICIOUS.finditer(text):
        run, start = m.group(), m.start()
        tags = "".join(c for c in run if ord(c) in _TAGS)
        if tags and not _is_flag_sequence(text, start, run):
            decoded = _decode_tags(tags)
            yield Hit("unicode.tags", start, _codepoints(tags),
                      f"{len(tags)} tag characters; hidden text: {_printable(decoded)!r}" if decoded
                      else f"{len(tags)} tag characters (no printable text)")
            continue
        if tags:
            continue
        bidi = [c for c in run if ord(c) in _BIDI]
        if bidi:
            line_start, line_end = file.line_span(start)
            if line_start != bidi_line:  # one finding per line, however many controls it has
                bidi_line = line_start
                line = text[line_start:line_end]
                controls = "".join(c for c in line if ord(c) in _BIDI)
                yield Hit("unicode.bidi", start, _codepoints(controls),
                          f"line as stored (logical order): {_printable(_mark(line))!r}")
            continue
        selectors = [c for c in run if ord(c) in _VS_LOW or ord(c) in _VS_HIGH]
        if len(selectors) >= 2 or any(ord(c) in _VS_HIGH for c in selectors):
            data = _decode_selectors(run)
            hidden = data.decode("utf-8", errors="replace")
            yield Hit("unicode.variation-selectors", start, _codepoints(run),
                      f"{len(selectors)} variation selectors; hidden bytes as text: {_printable(hidden)!r}")
            continue
        zero_width = [c for c in run if ord(c) in _ZERO_WIDTH]
        if len(zero_width) >= ZERO_WIDTH_RUN:
            decoded_bits = _decode_bits("".join(zero_width))
            detail = (f"{len(zero_width)} zero-width characters; hidden text: {_printable(decoded_bits)!r}"
                      if decoded_bits else f"{len(zero_width)} zero-width characters in a row")
            yield Hit("unicode.zero-width-run", start, _codepoints(run), detail)
            continue
        if _benign(text, start, run):
            continue
        invisible_count += len(run)
        if invisible_first is None:
            invisible_first = start
    if invisible_first is not None:
        line_start, line_end = file.line_span(invisible_first)
        yield Hit("unicode.invisible", invisible_first, _printable(_mark(text[line_start:line_end])),
                  f"{invisible_count} invisible character{'s' * (invisible_count != 1)} in this file (first shown)")


def _mark(text: str) -> str:
    return _SUSPICIOUS.sub(lambda m: _codepoints(m.group()), text)


def _benign(text: str, start: int, run: str) -> bool:
    if run == "\ufeff" and start == 0:
        return True  # byte-order mark
    before = text[start - 1] if start > 0 else ""
    after = text[start + len(run)] if start + len(run) < len(text) else ""
    if len(run) == 1 and ord(run) in _VS_LOW:
        return bool(before) and not before.isspace()  # text/emoji presentation of the previous character
    if set(run) <= {"\u200d", "\ufe0f"}:
        return bool(before) and bool(after) and not before.isascii() and not after.isascii()  # emoji ZWJ sequences
    if set(run) <= {"\u200c", "\u200d"}:
        # Joiners inside words of scripts that need them (Persian, Indic): letters on both sides.
        return before.isalpha() and after.isalpha() and not (before.isascii() and after.isascii())
    if run == "\u200e" or run == "\u200f" or run == "\u061c":
        return not before.isascii() or not after.isascii()  # direction marks in right-to-left text
    return False
