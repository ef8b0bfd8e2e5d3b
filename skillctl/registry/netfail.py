"""How the HTTP clients of registries (OCI, well-known sites) describe a failed exchange: whether
the request can have reached the server (only then is a retry of a non-idempotent one unsafe), and
the reason in a few words for the one-line error."""

from __future__ import annotations

import requests

# Answers worth another try (the server says it is busy or a gateway failed), and redirects, which
# both clients follow by hand so that each hop is checked.
RETRY_STATUS = frozenset({429, 502, 503, 504})
REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})


def is_unsent(exc: BaseException) -> bool:
    """True when the connection was never made, so no byte of the request reached the server."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if type(cur).__name__ in ("NewConnectionError", "ConnectionRefusedError", "NameResolutionError"):
            return True
        nested = getattr(cur, "reason", None)
        if isinstance(nested, BaseException):
            cur = nested
            continue
        args = [a for a in getattr(cur, "args", ()) if isinstance(a, BaseException)]
        cur = args[0] if args else (cur.__cause__ or cur.__context__)
    return False


def reason(exc: BaseException) -> str:
    text = str(exc)
    for needle, say in (
        ("Connection refused", "connection refused"),
        ("Name or service not known", "host name not found"),
        ("Temporary failure in name resolution", "host name not resolved"),
        ("CERTIFICATE_VERIFY_FAILED", "certificate not trusted"),
        ("timed out", "timed out"),
        ("Connection reset", "connection reset"),
        ("RemoteDisconnected", "connection closed by the server"),
        ("IncompleteRead", "connection closed in the middle of the answer"),
    ):
        if needle in text:
            return say
    return type(exc).__name__
