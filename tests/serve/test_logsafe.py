"""The escaping of log records (``skillctl.serve.logsafe``), through a real logger and handler:
fields of any type, and a traceback whose exception text carries request data."""

from __future__ import annotations

import io
import logging

from skillctl.serve.logsafe import TRACEBACK_INDENT, escaping, printable

FORGED = "\n2026-01-01T00:00:00 INFO 127.0.0.1:1 key=admin \"GET /x HTTP/1.1\" 200 0 1.0ms"


def _written(log: logging.Logger, *args: object, **kwargs: object) -> list[str]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    escaping(handler)
    log.addHandler(handler)
    log.propagate = False
    try:
        log.error(*args, **kwargs)  # type: ignore[arg-type]
    finally:
        log.removeHandler(handler)
    return out.getvalue().splitlines()


def test_every_field_is_escaped_and_numbers_keep_their_format() -> None:
    log = logging.getLogger("skillctl.test.logsafe.fields")
    lines = _written(log, 'path %s, name %r, from %s, %d bytes in %.1fs', "/x" + FORGED, "a\u2028b", ValueError("c\rd"), 12, 0.5)
    assert lines == ['ERROR path /x\\x0a2026-01-01T00:00:00 INFO 127.0.0.1:1 key=admin \\x22GET /x HTTP/1.1\\x22 200 0 1.0ms, '
                     "name 'a\\\\u2028b', from c\\x0dd, 12 bytes in 0.5s"]


def test_a_traceback_keeps_its_lines_under_its_record() -> None:
    log = logging.getLogger("skillctl.test.logsafe.traceback")
    try:
        raise ValueError("no such skill: demo" + FORGED + "\x1b[2J")
    except ValueError:
        lines = _written(log, "request %s failed", "/x" + FORGED, exc_info=True)
    assert lines[0] == "ERROR request " + printable("/x" + FORGED) + " failed"
    assert len(lines) > 3 and all(line.startswith(TRACEBACK_INDENT) for line in lines[1:])
    assert lines[-1] == TRACEBACK_INDENT + '2026-01-01T00:00:00 INFO 127.0.0.1:1 key=admin "GET /x HTTP/1.1" 200 0 1.0ms\\x1b[2J'


def test_printable_escapes_the_escape_character_itself() -> None:
    assert printable("\\x0a") == "\\x5cx0a" and printable("é ok") == "é ok"
