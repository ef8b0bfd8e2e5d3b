"""Capped capture (host memory) and head+tail text (what the model reads)."""

from __future__ import annotations

import platform
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillctl.protocols import ExecResult
from skillctl.sandbox.heap import keep_big_blocks_mapped
from skillctl.sandbox.output import MIN_FORMAT_LIMIT, CappedCapture, format_result, truncate_middle

MARKER = re.compile(r"\n\[… (\d+) characters truncated …\]\n")


def test_short_text_is_returned_unchanged():
    assert truncate_middle("hello", 5) == "hello"
    assert truncate_middle("", 0) == ""


def test_long_text_keeps_head_and_tail_with_exact_count():
    text = "".join(f"line {i}\n" for i in range(1000))
    out = truncate_middle(text, 200)
    assert len(out) <= 200
    match = MARKER.search(out)
    assert match, out
    head, tail = out[: match.start()], out[match.end() :]
    assert text.startswith(head) and text.endswith(tail)
    assert int(match.group(1)) == len(text) - len(head) - len(tail)
    assert abs(len(head) - len(tail)) <= 1  # an even split, head first


def test_limit_too_small_for_the_marker_is_refused():
    with pytest.raises(ValueError, match="too small"):
        truncate_middle("x" * 100, 10)
    with pytest.raises(ValueError, match="negative"):
        truncate_middle("x", -1)


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=0, max_size=3000), st.integers(min_value=60, max_value=2500))
def test_truncation_properties(text, limit):
    out = truncate_middle(text, limit)
    assert len(out) <= limit
    assert out == truncate_middle(text, limit)  # deterministic
    if len(text) <= limit:
        assert out == text
        return
    match = MARKER.search(out)
    assert match is not None
    head, tail = out[: match.start()], out[match.end() :]
    assert text.startswith(head) and text.endswith(tail)
    assert int(match.group(1)) == len(text) - len(head) - len(tail)
    # Nothing wasted: keeping one more character would not fit.
    assert len(out) >= limit - 1


def test_capture_keeps_everything_under_the_cap():
    cap = CappedCapture(100)
    for part in (b"abc", b"def", b"g" * 50):
        cap.feed(part)
    assert cap.text() == "abcdef" + "g" * 50
    assert cap.dropped == 0 and cap.total == 56


def test_capture_keeps_head_and_tail_and_counts_the_gap():
    cap = CappedCapture(1000)
    data = b"".join(f"{i:06d}\n".encode() for i in range(100_000))  # 700,000 bytes
    for i in range(0, len(data), 4096):  # many small chunks, like a pipe
        cap.feed(data[i : i + 4096])
    text = cap.text()
    assert cap.total == len(data)
    assert cap.dropped == len(data) - 1000
    head, _, rest = text.partition("\n[… ")
    assert data.decode().startswith(head) and len(head) == 500
    assert text.endswith(data[-500:].decode())
    assert f"{len(data) - 1000} bytes not captured" in text


def test_capture_memory_stays_bounded_for_huge_chunks():
    cap = CappedCapture(1024)
    for _ in range(50):
        cap.feed(b"x" * 1_000_000)
    assert cap.kept == 1024
    assert cap.dropped == 50_000_000 - 1024


def test_capture_of_many_small_chunks_keeps_at_most_one_chunk_beyond_the_cap():
    cap = CappedCapture(10_000)
    for i in range(20_000):
        cap.feed(bytes([65 + i % 26]) * 700)
        assert cap.kept <= 10_000 + 700
    assert cap.total == 14_000_000 and cap.dropped == 14_000_000 - 10_000
    text = cap.text()
    assert text.startswith("A" * 700 + "B" * 700) and text.endswith(chr(65 + 19_999 % 26) * 700)
    assert len(text.partition("\n[… ")[2].partition("…]\n")[2]) == 5_000


def test_a_character_split_between_head_and_tail_stays_whole_when_nothing_was_dropped():
    cap = CappedCapture(4)  # head keeps 2 bytes: "a" and the first byte of "é"
    for byte in "aéb".encode():
        cap.feed(bytes([byte]))
    assert cap.dropped == 0 and cap.text() == "aéb"


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="only glibc has mallopt")
def test_the_mmap_threshold_is_fixed_where_glibc_lets_us():
    assert keep_big_blocks_mapped() is True
    assert keep_big_blocks_mapped() is True  # once per process; calling again is harmless


def test_capture_cap_must_be_sane():
    with pytest.raises(ValueError):
        CappedCapture(1)


def _result(**kw):
    base = dict(stdout="", stderr="", outcome_type="exit", exit_code=0)
    base.update(kw)
    return ExecResult(**base)


def test_format_result_exit_and_streams():
    text = format_result(_result(stdout="out\n", stderr="warn\n", exit_code=3), 1000)
    assert text == "exit_code: 3\nstdout:\nout\n\nstderr:\nwarn\n"


def test_format_result_leaves_out_empty_streams_and_reports_timeout():
    text = format_result(_result(outcome_type="timeout", exit_code=None), 1000)
    assert text.startswith("timeout:") and "stdout" not in text and "stderr" not in text


def test_format_result_fits_the_limit_and_shares_it():
    long_out, short_err = "o" * 50_000, "short error\n"
    text = format_result(_result(stdout=long_out, stderr=short_err, exit_code=1), 2000)
    assert len(text) <= 2000
    assert text.endswith("stderr:\nshort error\n")  # the short stream is kept whole
    assert MARKER.search(text)
    both = format_result(_result(stdout="o" * 50_000, stderr="e" * 50_000), 2000)
    assert len(both) <= 2000 and len(MARKER.findall(both)) == 2


def test_format_result_mentions_capture_drops():
    text = format_result(_result(stdout="x", stdout_dropped=12345), 1000)
    assert "12345 bytes of stdout exceeded the capture cap" in text


@settings(max_examples=200, deadline=None)
@given(
    st.text(max_size=5000),
    st.text(max_size=5000),
    st.integers(min_value=MIN_FORMAT_LIMIT, max_value=4000),
    st.integers(min_value=0, max_value=10**12),
    st.integers(min_value=0, max_value=10**12),
)
def test_format_result_never_exceeds_the_limit(out, err, limit, dropped_out, dropped_err):
    result = _result(stdout=out, stderr=err, stdout_dropped=dropped_out, stderr_dropped=dropped_err)
    text = format_result(result, limit)
    assert len(text) <= limit
    assert text == format_result(result, limit)


def test_format_result_refuses_a_tiny_limit():
    with pytest.raises(ValueError, match="at least"):
        format_result(_result(), MIN_FORMAT_LIMIT - 1)


def test_control_characters_become_pictures_not_json_escapes():
    import json

    cap = CappedCapture(100)
    cap.feed(b"a\x00b\x1b[31mred\x7f\tx\r\n\xff")
    assert cap.text() == "a␀b␛[31mred␡\tx\r\n\ufffd"
    # Each stays one character, three bytes in UTF-8 JSON, instead of a six-byte \u0000 escape.
    flood = CappedCapture(4096)
    flood.feed(b"\x00" * 4096)
    assert len(json.dumps(flood.text(), ensure_ascii=False).encode()) == 3 * 4096 + 2


def test_commands_run_together_share_one_capture_budget():
    from skillctl.sandbox.output import capture_share

    assert capture_share(10 << 20, 32 << 20, 1) == 10 << 20  # one command: its own cap
    assert capture_share(10 << 20, 32 << 20, 8) == 2 << 20  # eight: 16 streams share 32 MiB
    assert capture_share(10 << 20, 4096, 8) == 1024  # never below 1 KiB
