"""Log lines that request data cannot forge.

A request path is percent-decoded before anyone sees it, so ``GET /x%0A2026-… INFO …`` puts a
line break, and after it a line of the attacker's choosing, into any log line that shows the
path. ``EscapeControls`` is a filter on the server's loggers: before a record is formatted, every
argument of its message (the fields: paths, headers, key names, upload names, exception texts)
is rewritten with its control characters — C0, DEL, C1, the Unicode line and paragraph
separators and the bidirectional overrides — as ``\\xHH`` / ``\\uHHHH``, and ``"`` and ``\\`` as
``\\x22`` and ``\\x5c`` (as nginx writes its access log), so a field can neither end its line nor
its quotes, and the escaping reads back unambiguously. A traceback, which is several lines by
nature, keeps its line breaks but has every other control character escaped and each of its
lines indented under its record, so nothing inside it passes for a record of its own.
"""

from __future__ import annotations

import logging
import re

# C0 but the line feed, DEL, C1, the line and paragraph separators, the bidirectional controls.
_BUT_NEWLINE = "\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069"
_IN_TRACEBACK = re.compile(f"[{_BUT_NEWLINE}]")
_IN_TEXT = re.compile(f"[\n{_BUT_NEWLINE}]")  # the message's own text, whose quotes are the format's
_IN_FIELDS = re.compile(f'[\n{_BUT_NEWLINE}"\\\\]')
TRACEBACK_INDENT = "    "


def _code(match: re.Match[str]) -> str:
    point = ord(match[0])
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def printable(text: str) -> str:
    """``text`` with control characters, ``"`` and ``\\`` escaped: safe inside one quoted log field."""
    return _IN_FIELDS.sub(_code, text)


def _field(value: object) -> object:
    # Numbers stay numbers (for %d and %.1f); everything else is shown as the text %s would show.
    return value if isinstance(value, (int, float)) else printable(str(value))


class EscapeControls(logging.Filter):
    """Escapes every field of a record. On a logger it acts before any handler sees the record
    (only on records made by that very logger: a filter is not inherited); on a handler, on all
    it writes. A record is escaped once, wherever it met the filter first."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "controls_escaped", False):
            return True
        record.controls_escaped = True
        if isinstance(record.args, dict):
            record.args = {k: _field(v) for k, v in record.args.items()}
        elif record.args:
            record.args = tuple(_field(v) for v in record.args)
        record.msg = _IN_TEXT.sub(_code, record.msg) if isinstance(record.msg, str) else printable(str(record.msg))
        if record.exc_info and not record.exc_text:
            text = _IN_TRACEBACK.sub(_code, logging.Formatter().formatException(record.exc_info))
            record.exc_text = "\n".join(TRACEBACK_INDENT + line for line in text.split("\n"))
        return True


def escape_logs(*names: str) -> None:
    """Put ``EscapeControls`` on the loggers ``names`` (once each)."""
    for name in names:
        escaping(logging.getLogger(name))


def escaping(filterer: logging.Filterer) -> None:
    """Put ``EscapeControls`` on a logger or a handler, once."""
    if not any(isinstance(f, EscapeControls) for f in filterer.filters):
        filterer.addFilter(EscapeControls())
