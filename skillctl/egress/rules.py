"""The egress rules both sides share: host patterns, forbidden addresses, placeholder rewriting.

Standard library only: the proxy process imports this module from an interpreter that has
mitmproxy but not necessarily skillctl's other dependencies (see ``skillctl.egress.launch``).

Host patterns follow the hosted shell tool's ``allowed_domains``: ``api.example.com`` matches
that host only; ``*.example.com`` matches its subdomains at any depth and *not* the bare
``example.com`` (write both to allow both). Matching is case-insensitive and ignores a trailing
dot. An IP address may be listed literally.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
import time
from typing import Any, Iterable, Mapping

_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
_HOST_RE = re.compile(rf"^(?:\*\.)?(?:{_LABEL}\.)*{_LABEL}$")

# The guard the test suite sets: the proxy then refuses every upstream outside 127.0.0.0/8 and
# never asks DNS, whatever the policy says, so no test can reach past this machine.
LOOPBACK_ONLY_ENV = "SKILLCTL_EGRESS_LOOPBACK_ONLY"
_LOOPBACK_NET = ipaddress.ip_network("127.0.0.0/8")

PLACEHOLDER_PREFIX = "skillctl-secret-"


def normalize_host(host: str) -> str:
    """Lowercase, without a trailing dot or IPv6 brackets."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(normalize_host(text))
    except ValueError:
        return None


def check_pattern(pattern: str) -> str | None:
    """Why ``pattern`` is not a usable host pattern, or None."""
    host = normalize_host(pattern)
    if parse_ip(host) is not None:
        return None
    if not _HOST_RE.match(host):
        return "must be a host name such as api.example.com, *.example.com (subdomains only) or an IP address"
    if host.startswith("*.") and "." not in host[2:]:
        return f"'{pattern}' would allow every host under a top-level domain; name the domain"
    return None


def host_matches(pattern: str, host: str) -> bool:
    pattern, host = normalize_host(pattern), normalize_host(host)
    if pattern.startswith("*."):
        suffix = pattern[1:]  # ".example.com": one or more labels must come before it
        return host.endswith(suffix) and len(host) > len(suffix)
    return host == pattern


def first_match(patterns: Iterable[str], host: str) -> str | None:
    """The first pattern that matches ``host``, or None."""
    return next((p for p in patterns if host_matches(p, host)), None)


def pattern_within(inner: str, patterns: Iterable[str]) -> bool:
    """Whether every host ``inner`` matches is matched by one of ``patterns``."""
    inner = normalize_host(inner)
    patterns = [normalize_host(p) for p in patterns]
    if not inner.startswith("*."):
        return first_match(patterns, inner) is not None
    # *.a.b is covered by itself or by a broader wildcard *.b; never by exact names alone.
    return any(p.startswith("*.") and (inner == p or inner.endswith(p[1:])) for p in patterns)


def forbidden_reason(address: str) -> str | None:
    """Why an upstream at ``address`` must not be reached unless mapped explicitly, or None.

    Loopback and the host's own services, link-local (169.254.0.0/16: cloud metadata
    endpoints), private ranges (RFC 1918, unique-local IPv6, carrier-grade NAT) and every other
    address that is not globally routable.
    """
    ip = parse_ip(address)
    if ip is None:
        return "not an IP address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address (cloud metadata lives there)"
    if ip.is_private:
        return "a private address"
    if ip.is_unspecified or ip.is_multicast or ip.is_reserved or not ip.is_global:
        return "not a globally routable address"
    return None


def guard_refusal(address: str) -> str | None:
    """Under the loopback-only guard: why ``address`` is refused (None for 127.0.0.0/8)."""
    ip = parse_ip(address)
    if ip is not None and isinstance(ip, ipaddress.IPv4Address) and ip in _LOOPBACK_NET:
        return None
    return f"{LOOPBACK_ONLY_ENV} is set: only upstreams in 127.0.0.0/8 may be reached"


def parse_resolve(spec: str) -> tuple[str, str, int]:
    """``HOST=ADDR:PORT`` (IPv6 as ``[ADDR]:PORT``) → (host, addr, port); ValueError if malformed."""
    host, sep, target = spec.partition("=")
    if not sep or not host.strip():
        raise ValueError(f"'{spec}': write HOST=ADDR:PORT, e.g. api.example.test=127.0.0.1:8443")
    addr, sep, port_text = target.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"'{spec}': the target needs a port, e.g. {host.strip()}=127.0.0.1:8443")
    if parse_ip(addr) is None or (":" in addr and not addr.startswith("[")):
        raise ValueError(f"'{spec}': the target must be an IP address ([::1]:PORT for IPv6), not {addr!r}")
    host = normalize_host(host)
    if check_pattern(host) is not None or host.startswith("*."):
        raise ValueError(f"'{spec}': {host!r} is not a host name")
    return host, normalize_host(addr), int(port_text)


def redact_query(path: str) -> str:
    """The request path with every query value replaced by ``…`` (keys stay: they say what was asked)."""
    base, sep, query = path.partition("?")
    if not sep:
        return path
    parts = []
    for item in query.split("&"):
        key, eq, _value = item.partition("=")
        parts.append(f"{key}=…" if eq else key)
    return f"{base}?{'&'.join(parts)}"


def now_iso() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


def egress_record(**fields: Any) -> dict[str, Any]:
    """One request's log record; every field present, in a fixed order."""
    record: dict[str, Any] = {
        "type": "egress", "time": now_iso(), "method": "", "scheme": "", "host": "", "port": 0, "path": "",
        "status": None, "request_bytes": 0, "response_bytes": 0, "decision": "allowed", "reason": "",
        "upstream": None, "secrets": [], "warnings": [], "error": None,
    }
    record.update(fields)
    return record


def make_placeholder(name: str) -> str:
    """A per-run stand-in for a secret: recognisable (prefix and name) and unguessable (128 bits)."""
    return f"{PLACEHOLDER_PREFIX}{name}-{secrets.token_hex(16)}"


class Rewriter:
    """Replace byte strings in a stream that arrives in arbitrary chunks.

    ``feed`` returns what can be passed on now; it holds back the last ``longest - 1`` bytes,
    which might be the start of a match completed by the next chunk. ``finish`` returns the
    rest. ``found`` collects the keys of ``mapping`` that occurred. With an empty mapping every
    call is a pass-through.
    """

    def __init__(self, mapping: Mapping[bytes, bytes]) -> None:
        self.mapping = {k: v for k, v in mapping.items() if k}
        self.found: set[bytes] = set()
        self._pending = b""
        self._keep = max((len(k) for k in self.mapping), default=1) - 1
        alternatives = sorted(self.mapping, key=len, reverse=True)  # longest first
        self._regex = re.compile(b"|".join(re.escape(k) for k in alternatives)) if alternatives else None

    def replace(self, data: bytes) -> bytes:
        """Replace in a complete buffer (no holding back)."""
        if self._regex is None or not data:
            return data

        def sub(m: re.Match[bytes]) -> bytes:
            self.found.add(m.group(0))
            return self.mapping[m.group(0)]

        return self._regex.sub(sub, data)

    def feed(self, chunk: bytes) -> bytes:
        if self._regex is None:
            return chunk
        buf = self._pending + chunk
        out: list[bytes] = []
        pos = 0
        for m in self._regex.finditer(buf):
            out.append(buf[pos : m.start()])
            out.append(self.mapping[m.group(0)])
            self.found.add(m.group(0))
            pos = m.end()
        # No complete match starts in buf[pos:]; only its last `keep` bytes can begin one.
        cut = max(pos, len(buf) - self._keep)
        out.append(buf[pos:cut])
        self._pending = buf[cut:]
        return b"".join(out)

    def finish(self) -> bytes:
        rest, self._pending = self._pending, b""
        return rest

    def __call__(self, chunk: bytes) -> bytes:
        """mitmproxy's stream callback: chunks, then ``b""`` once at the end."""
        return self.feed(chunk) if chunk else self.finish()
