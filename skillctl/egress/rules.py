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
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

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
    """One request's log record; every field present, in a fixed order.

    ``mode`` says how the proxy handled it: ``intercept`` (TLS opened, policy applied per
    request) or ``passthrough`` (one record per connection whose TLS went through unopened:
    ``not_seen`` then names what the proxy could not see, ``path`` stays empty)."""
    record: dict[str, Any] = {
        "type": "egress", "time": now_iso(), "mode": "intercept", "method": "", "scheme": "", "host": "", "port": 0,
        "path": "", "status": None, "request_bytes": 0, "response_bytes": 0, "duration_ms": None, "decision": "allowed",
        "reason": "", "upstream": None, "secrets": [], "warnings": [], "error": None, "not_seen": None,
    }
    record.update(fields)
    return record


def make_placeholder(name: str) -> str:
    """A per-run stand-in for a secret: recognisable (prefix and name) and unguessable (128 bits)."""
    return f"{PLACEHOLDER_PREFIX}{name}-{secrets.token_hex(16)}"


# ---------------------------------------------------------------------------- rewriting

# How an API can send back a value it was given (a token echoed in an error, a redirect, a
# JSON document): each character that is not a letter or digit as itself, backslash-escaped
# (JSON's ``\/``), as a ``\uXXXX`` escape, percent-encoded (either case), as an HTML character
# reference, and a space as ``+``. Letters and digits are never changed by those encoders.
_NAMED_ENTITIES = {"&": b"&amp;", "<": b"&lt;", ">": b"&gt;", '"': b"&quot;", "'": b"&apos;"}


def _hex_either_case(number: int, width: int) -> bytes:
    """A regex for ``number`` in hexadecimal, ``width`` digits, letters in either case."""
    return b"".join(b"[%c%c]" % (c, c - 32) if 0x61 <= c <= 0x66 else bytes([c]) for c in b"%0*x" % (width, number))


@dataclass(frozen=True)
class _CharForms:
    pattern: bytes  # a regex matching the character in any of the encodings above
    longest: int  # the longest such match
    firsts: frozenset[int]  # the bytes such a match can begin with
    lasts: frozenset[int]  # … and end with


def _either_case(digits: bytes) -> set[int]:
    return {c for d in digits for c in (d, d - 32 if 0x61 <= d <= 0x66 else d)}


def _char_forms(char: str) -> _CharForms:
    raw = char.encode("utf-8")
    if char.isascii() and char.isalnum():
        return _CharForms(re.escape(raw), 1, frozenset(raw), frozenset(raw))
    code = ord(char)
    forms: list[tuple[bytes, int]] = [(re.escape(raw), len(raw))]
    firsts, lasts = {raw[0], ord("%"), ord("&"), ord("\\")}, {raw[-1], ord(";")} | _either_case(b"%x" % (raw[-1] & 15))
    if char.isascii():
        forms.append((b"\\\\" + re.escape(raw), 2))
    if code <= 0xFFFF:
        forms.append((b"\\\\u" + _hex_either_case(code, 4), 6))
        lasts |= _either_case(b"%x" % (code & 15))
    else:  # JSON writes characters beyond the BMP as a surrogate pair
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        forms.append((b"\\\\u" + _hex_either_case(high, 4) + b"\\\\u" + _hex_either_case(low, 4), 12))
        lasts |= _either_case(b"%x" % (low & 15))
    forms.append((b"".join(b"%" + _hex_either_case(byte, 2) for byte in raw), 3 * len(raw)))
    digits = b"%d" % code
    forms.append((b"&#0{0,4}" + digits + b";", 7 + len(digits)))
    hexdigits = b"%x" % code
    forms.append((b"&#[xX]0{0,4}" + _hex_either_case(code, len(hexdigits)) + b";", 8 + len(hexdigits)))
    if char in _NAMED_ENTITIES:
        forms.append((_NAMED_ENTITIES[char], len(_NAMED_ENTITIES[char])))
    if char == " ":
        forms.append((b"\\+", 1))
        firsts.add(ord("+"))
        lasts.add(ord("+"))
    pattern = b"(?:" + b"|".join(f for f, _ in forms) + b")"
    return _CharForms(pattern, max(n for _, n in forms), frozenset(firsts), frozenset(lasts))


def _byte_class(values: Iterable[int]) -> bytes:
    return b"[" + b"".join(re.escape(bytes([v])) for v in sorted(values)) + b"]"


# A run of letters and digits this long is as good as unique: found alone, it is rarely found
# where the value is not. Shorter ones (``0123456789`` occurs every 256 bytes of a binary file)
# are sought with the bytes that can stand beside them in an encoded value.
DISTINCT_RUN = 16


@dataclass(frozen=True)
class Form:
    """One way a replaced string can appear: ``regex`` matches it, ``longest`` bytes at most.

    Every match contains the string's longest run of letters and digits, which no encoder
    changes: ``seek`` finds that run (a literal search in C, with — for a short run — the bytes
    an encoding of its neighbours can end or begin with checked by lookarounds), and ``regex``
    runs only around what it finds, from at most ``before`` bytes ahead of the run to at most
    ``after`` bytes past it. The regex alone, with its alternatives per character, scans at
    about 15 MB/s; this scans at hundreds of MB/s to GB/s. ``seek`` None: the string has no
    letter or digit, and the regex scans everything.
    """

    regex: re.Pattern[bytes]
    replacement: bytes
    key: bytes  # what ``Rewriter.found`` reports
    longest: int
    seek: re.Pattern[bytes] | bytes | None  # bytes: sought with bytes.find, faster still
    before: int
    after: int


def literal_form(key: bytes, replacement: bytes) -> Form:
    return Form(re.compile(re.escape(key)), replacement, key, len(key), key, 0, 0)


def text_form(text: str, replacement: bytes, key: bytes) -> Form:
    """``text`` in any of the encodings ``_char_forms`` knows."""
    parts = [_char_forms(c) for c in text]
    regex = re.compile(b"".join(p.pattern for p in parts))
    longest = sum(p.longest for p in parts)
    runs = [m.span() for m in re.finditer(r"[A-Za-z0-9]+", text)]
    if not runs:
        return Form(regex, replacement, key, longest, None, 0, 0)
    start, end = max(runs, key=lambda span: span[1] - span[0])
    run = text[start:end].encode()
    before, after = sum(p.longest for p in parts[:start]), sum(p.longest for p in parts[end:])
    seek: re.Pattern[bytes] | bytes = run
    if len(run) < DISTINCT_RUN and (start > 0 or end < len(text)):
        # The run first, so the regex engine searches for it as a literal; then the neighbours.
        pattern = re.escape(run)
        if start > 0:
            pattern += b"(?<=" + _byte_class(parts[start - 1].lasts) + re.escape(run) + b")"
        if end < len(text):
            pattern += b"(?=" + _byte_class(parts[end].firsts) + b")"
        seek = re.compile(pattern)
    return Form(regex, replacement, key, longest, seek, before, after)


_B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_URL = _B64[:-2] + b"-_"
# Shorter base64 runs of a value could occur by chance in other base64 text.
MIN_BASE64_CORE = 8


def base64_cores(value: bytes) -> list[bytes]:
    """The base64 characters every encoding of a text containing ``value`` shares, for each of
    the three alignments ``value`` can have, in both alphabets. A character is kept only when
    all six of its bits come from ``value``: the ones around it depend on what surrounds it."""
    cores: list[bytes] = []
    bits = "".join(f"{b:08b}" for b in value)
    for offset in range(3):
        first = -(-8 * offset // 6)  # the first character that starts at or after the value
        start_bit = 6 * first - 8 * offset
        count = (len(bits) - start_bit) // 6
        indexes = [int(bits[start_bit + 6 * i : start_bit + 6 * i + 6], 2) for i in range(count)]
        for alphabet in (_B64, _B64_URL):
            core = bytes(alphabet[i] for i in indexes)
            if len(core) >= MIN_BASE64_CORE and core not in cores:
                cores.append(core)
    return cores


def _runs(seek: re.Pattern[bytes] | bytes, data: bytes) -> Iterator[tuple[int, int]]:
    """Where ``seek`` occurs in ``data``, as (start, end)."""
    if isinstance(seek, bytes):
        hit = data.find(seek)
        while hit != -1:
            yield hit, hit + len(seek)
            hit = data.find(seek, hit + 1)
    else:
        for m in seek.finditer(data):
            yield m.span()


class Replacements:
    """What a ``Rewriter`` replaces: compiled once, shared by every stream that uses it."""

    def __init__(self, forms: Iterable[Form]) -> None:
        self.forms = sorted(forms, key=lambda f: f.longest, reverse=True)
        self.longest = max((f.longest for f in self.forms), default=0)

    @classmethod
    def literal(cls, mapping: Mapping[bytes, bytes]) -> "Replacements":
        return cls(literal_form(k, v) for k, v in mapping.items() if k)

    @classmethod
    def scrubbing(cls, values: Mapping[bytes, bytes]) -> "Replacements":
        """Every real value → its placeholder, in the value's plain and text-encoded forms; its
        base64 forms are masked with ``A``s of the same length instead (a placeholder of another
        length would shift everything after it in the decoded text)."""
        forms: list[Form] = []
        for value, placeholder in values.items():
            if not value:
                continue
            forms.append(text_form(value.decode("utf-8", "surrogateescape"), placeholder, value))
            forms.extend(text_form(core.decode("ascii"), b"A" * len(core), value) for core in base64_cores(value))
        return cls(forms)

    def matches(self, data: bytes) -> list[tuple[int, int, Form]]:
        """Every match in ``data``, leftmost first, none overlapping (at one start, the longest)."""
        found: list[tuple[int, int, Form]] = []
        for form in self.forms:
            if form.seek is None:
                found.extend((m.start(), m.end(), form) for m in form.regex.finditer(data))
                continue
            for run_start, run_end in _runs(form.seek, data):
                m = form.regex.search(data, max(0, run_start - form.before), min(len(data), run_end + form.after))
                if m is not None:
                    found.append((m.start(), m.end(), form))
        found.sort(key=lambda item: (item[0], item[0] - item[1]))
        chosen: list[tuple[int, int, Form]] = []
        for item in found:
            if not chosen or item[0] >= chosen[-1][1]:
                chosen.append(item)
        return chosen


class Rewriter:
    """Replace byte strings in a stream that arrives in arbitrary chunks.

    ``feed`` returns what can be passed on now; it holds back the last ``longest - 1`` bytes,
    which might be the start of a match completed by the next chunk (every form matches a whole
    value, so a match found is never the prefix of a longer one). ``finish`` returns the rest.
    ``found`` collects the keys that occurred. With nothing to replace every call is a
    pass-through. Given a mapping, its keys are replaced literally by its values.
    """

    def __init__(self, replacements: "Replacements | Mapping[bytes, bytes]") -> None:
        if not isinstance(replacements, Replacements):
            replacements = Replacements.literal(replacements)
        self.table = replacements
        self.found: set[bytes] = set()
        self._pending = b""
        self._keep = max(replacements.longest, 1) - 1

    def _rewrite(self, data: bytes) -> tuple[list[bytes], int]:
        """(the pieces of ``data`` with every match replaced, up to the end of the last match;
        where that end is)."""
        out: list[bytes] = []
        pos = 0
        for start, end, form in self.table.matches(data):
            out.append(data[pos:start])
            out.append(form.replacement)
            self.found.add(form.key)
            pos = end
        return out, pos

    def replace(self, data: bytes) -> bytes:
        """Replace in a complete buffer (no holding back)."""
        if not self.table.forms or not data:
            return data
        out, pos = self._rewrite(data)
        out.append(data[pos:])
        return b"".join(out)

    def replace_text(self, text: str) -> str:
        """``replace`` for text (a header name, a status line, a record's field)."""
        if not self.table.forms or not text:
            return text
        return self.replace(text.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")

    def feed(self, chunk: bytes) -> bytes:
        if not self.table.forms:
            return chunk
        buf = self._pending + chunk
        out, pos = self._rewrite(buf)
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
