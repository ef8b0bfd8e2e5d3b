"""The rules both processes share: host patterns, forbidden addresses, mappings, redaction, and
the streaming rewriter (property-tested: any chunking gives the same bytes as one buffer), with
the scrubbing forms of a value (every encoding APIs echo values in)."""

from __future__ import annotations

import base64
import html
import json
import re
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillctl.egress.rules import (
    PLACEHOLDER_PREFIX,
    Replacements,
    Rewriter,
    base64_cores,
    check_pattern,
    forbidden_reason,
    guard_refusal,
    host_matches,
    make_placeholder,
    parse_resolve,
    pattern_within,
    redact_query,
)


@pytest.mark.parametrize(
    "pattern, host, expected",
    [
        ("api.github.com", "api.github.com", True),
        ("api.github.com", "API.GitHub.com.", True),  # case and a trailing dot do not matter
        ("api.github.com", "uploads.github.com", False),
        ("api.github.com", "evil-api.github.com", False),
        ("*.example.com", "a.example.com", True),
        ("*.example.com", "b.a.example.com", True),
        ("*.example.com", "example.com", False),  # subdomains only
        ("*.example.com", "badexample.com", False),
        ("*.example.com", "example.com.evil.test", False),
        ("10.1.2.3", "10.1.2.3", True),
    ],
)
def test_host_matches(pattern, host, expected):
    assert host_matches(pattern, host) is expected


@pytest.mark.parametrize("pattern", ["*", "*.com", "a.*.com", "exa mple.com", "-bad.com", "http://x.com", "x.com/path", ""])
def test_bad_patterns_are_named(pattern):
    assert check_pattern(pattern)


@pytest.mark.parametrize("pattern", ["api.github.com", "*.example.test", "localhost", "10.1.2.3", "[::1]", "xn--bcher-kva.example"])
def test_good_patterns(pattern):
    assert check_pattern(pattern) is None


def test_a_pattern_within_others():
    assert pattern_within("api.x.com", ["*.x.com"])
    assert pattern_within("*.a.x.com", ["*.x.com"])
    assert pattern_within("*.x.com", ["*.x.com"])
    assert not pattern_within("*.x.com", ["a.x.com", "b.x.com"])
    assert not pattern_within("x.com", ["*.x.com"])


@pytest.mark.parametrize(
    "address, why",
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("10.0.0.5", "private"),
        ("172.17.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd00::2", "private"),
        ("100.64.0.1", "not a globally routable address"),
        ("0.0.0.0", "private"),
        ("224.0.0.1", "not a globally routable address"),
    ],
)
def test_internal_addresses_are_forbidden(address, why):
    assert why in forbidden_reason(address)


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"])
def test_global_addresses_are_not(address):
    assert forbidden_reason(address) is None


def test_guard_allows_only_127_slash_8():
    assert guard_refusal("127.0.0.1") is None and guard_refusal("127.9.9.9") is None
    assert guard_refusal("10.0.0.1") and guard_refusal("::1") and guard_refusal("93.184.215.14")


def test_parse_resolve():
    assert parse_resolve("API.example.test=127.0.0.1:8443") == ("api.example.test", "127.0.0.1", 8443)
    assert parse_resolve("v6.example.test=[::1]:443") == ("v6.example.test", "::1", 443)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("api.example.test", "HOST=ADDR:PORT"),
        ("=127.0.0.1:1", "HOST=ADDR:PORT"),
        ("api.example.test=127.0.0.1", "needs a port"),
        ("api.example.test=127.0.0.1:99999", "needs a port"),
        ("api.example.test=localhost:443", "must be an IP address"),
        ("api.example.test=::1:443", "must be an IP address"),
        ("*.example.test=127.0.0.1:443", "not a host name"),
    ],
)
def test_parse_resolve_rejects(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_resolve(spec)


def test_redact_query_keeps_keys_and_drops_values():
    assert redact_query("/a/b?token=s3cr3t&flag&x=1") == "/a/b?token=…&flag&x=…"
    assert redact_query("/plain") == "/plain"


def test_placeholders_are_recognisable_and_unguessable():
    a, b = make_placeholder("TOKEN"), make_placeholder("TOKEN")
    assert a.startswith(f"{PLACEHOLDER_PREFIX}TOKEN-") and len(a) == len(f"{PLACEHOLDER_PREFIX}TOKEN-") + 32
    assert a != b


MAPPING = {b"SECRETVALUE": b"ph-1", b"OTHER-TOKEN-XYZ": b"ph-2-longer-than-the-value", b"abab": b"Z"}


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.sampled_from([b"", b"a", b"b", b"SECRET", b"VALUE", b"SECRETVALUE", b"OTHER-TOKEN-XYZ", b"ab", b"x" * 7]), max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=10),
)
def test_rewriter_gives_the_same_bytes_however_the_stream_is_cut(parts, cuts):
    data = b"".join(parts)
    whole = Rewriter(MAPPING)
    expected = whole.replace(data)
    streamed = Rewriter(MAPPING)
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    out = b"".join(streamed(data[a:b]) for a, b in zip(points, points[1:]) if b > a) + streamed(b"")
    assert out == expected
    assert streamed.found == whole.found


def test_rewriter_reports_what_it_found_and_passes_through_without_a_mapping():
    r = Rewriter({b"k1": b"v1", b"k2": b"v2"})
    assert r.replace(b"a k1 b") == b"a v1 b" and r.found == {b"k1"}
    empty = Rewriter({})
    assert empty.feed(b"anything") == b"anything" and empty.finish() == b""


# ---------------------------------------------------------------------------- scrubbing forms

SLASHY = "AKr/Zk9+Q2x/y7=w"  # the characters base64 keys hold, which encoders change
SPACED = "pass phrase & <more> \"quoted\" ümlaut 🔑"


def _scrub(*values: str) -> Rewriter:
    return Rewriter(Replacements.scrubbing({v.encode(): f"PH{i}".encode() for i, v in enumerate(values)}))


@pytest.mark.parametrize("value", [SLASHY, SPACED])
def test_text_encodings_of_a_value_become_its_placeholder(value):
    forms = [
        value,
        json.dumps(value)[1:-1],  # \uXXXX for non-ASCII, \" for quotes
        json.dumps(value, ensure_ascii=False)[1:-1],
        value.replace("/", "\\/"),  # PHP's json_encode
        quote(value, safe=""),
        quote(value, safe="/"),
        re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(value, safe="")),
        quote_plus(value),
        html.escape(value),
        "".join(c if c.isalnum() else f"&#{ord(c)};" for c in value),
        "".join(c if c.isalnum() else f"&#x{ord(c):X};" for c in value),
    ]
    for form in forms:
        assert _scrub(value).replace(f"<{form}>".encode("utf-8")) == b"<PH0>", form


@pytest.mark.parametrize("value", [SLASHY, SPACED, "0123456789abcdef"])
def test_base64_of_a_value_alone_or_inside_other_text_is_masked(value):
    raw = value.encode()
    for prefix in (b"", b"u", b"us", b"user:", b"x" * 7):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(prefix + raw + b"@host")
            scrubbed = _scrub(value).replace(text)
            assert len(scrubbed) == len(text), "masking keeps the length, so what follows still decodes"
            decoded = base64.b64decode(scrubbed, altchars=b"-_" if encode is base64.urlsafe_b64encode else None)
            assert decoded.startswith(prefix) and decoded.endswith(b"@host")
            assert raw[2:-2] not in decoded and raw not in decoded


def test_base64_cores_are_the_characters_fixed_by_the_value_alone():
    value = b"secret-value-1234"
    for offset in range(3):
        core_std = base64_cores(value)
        for surrounding in (b"\x00" * offset, b"\xff" * offset):
            encoded = base64.b64encode(surrounding + value + b"\x00\xff")
            assert any(core in encoded for core in core_std)


def test_scrubbing_leaves_other_text_alone_and_reports_the_value():
    r = _scrub(SLASHY)
    text = b"AKr Zk9 Q2x y7 w, AKr/Zk9+Q2x/y7, and %2F alone"
    assert r.replace(text) == text and not r.found
    assert r.replace(SLASHY.encode()) == b"PH0" and r.found == {SLASHY.encode()}


_PIECES = [b"", b"a", b"%2F", b"\\/", b"AKr", b"/Zk9", b"+Q2x", b"/y7=w", SLASHY.encode(), quote(SLASHY, safe="").encode(),
           SLASHY.replace("/", "\\/").encode(), base64.b64encode(b"user:" + SLASHY.encode()), b"QUtyL1prOStRMng", b"x" * 9]


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(_PIECES), max_size=16), cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=10))
def test_scrubbing_gives_the_same_bytes_however_the_stream_is_cut(parts, cuts):
    data = b"".join(parts)
    expected = _scrub(SLASHY, "real-0123456789abcdef").replace(data)
    streamed = _scrub(SLASHY, "real-0123456789abcdef")
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    out = b"".join(streamed(data[a:b]) for a, b in zip(points, points[1:]) if b > a) + streamed(b"")
    assert out == expected


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(_PIECES), max_size=16))
def test_anchored_matching_finds_what_the_whole_regex_finds(parts):
    """The anchor scan is only a way to run each form's regex where it can match: the matches
    must be the ones the forms' regexes find scanning the whole text."""
    data = b"".join(parts)
    table = Replacements.scrubbing({SLASHY.encode(): b"PH"})
    union = re.compile(b"|".join(b"(?:" + f.regex.pattern + b")" for f in table.forms))
    assert [(a, b) for a, b, _ in table.matches(data)] == [m.span() for m in union.finditer(data)]
