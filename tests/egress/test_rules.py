"""The rules both processes share: host patterns, forbidden addresses, mappings, redaction, and
the streaming rewriter (property-tested: any chunking gives the same bytes as one buffer)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillctl.egress.rules import (
    PLACEHOLDER_PREFIX,
    Rewriter,
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
