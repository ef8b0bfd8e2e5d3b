"""Clients that connect and then send slowly, or not at all: slowloris (partial request heads
held open), heads trickled over a kept-alive connection, silent TLS handshakes, stalled uploads.
They must neither keep others out nor hold the server's resources past a deadline, while a slow
but steady upload still gets through. Deadlines here are small and set per test; every socket
also has a generous timeout of its own, so a server that never closes fails the test instead
of hanging it."""

from __future__ import annotations

import select
import socket
import ssl
import time
from pathlib import Path

import pytest

from skillctl.serve.gate import GateLimits, within_open_files
from skillctl.serve.http import BodyPace
from skillctl.serve.server import Listen
from tools import require_tool
from wellknown.server import make_test_ca

from .helpers import multipart, openai_client, read_until, skill_dir, skill_files

DEADLINE_S = 60
PARTIAL_HEAD = b"GET /openai/v1/skills HTTP/1.1\r\nHost: x\r\nUser-Agent: slow"


def _listen(**options: object) -> Listen:
    return Listen(port=0, shutdown_timeout_s=5, **options)  # type: ignore[arg-type]


def _connect(server, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE_S, source_address=(source, 0))


def _half_open(server, source: str = "127.0.0.1") -> socket.socket:
    sock = _connect(server, source)
    sock.sendall(PARTIAL_HEAD)
    return sock


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it ends the connection (a reset counts as an end)."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (ConnectionResetError, ssl.SSLError):
        pass
    return data


def _given_up(sock: socket.socket) -> bool:
    """Whether the server ends the connection, with a 408 or, when none of the head had come, without a word."""
    answer = _until_closed(sock)
    return answer == b"" or answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")


def _still_open(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    return not readable  # a closed connection is readable (end of stream); a held one has nothing to say


def _finish_head(sock: socket.socket) -> bytes:
    """Complete PARTIAL_HEAD and read the answer's status line."""
    sock.sendall(b"\r\n\r\n")
    return read_until(sock, b"\r\n")


def test_a_slowloris_does_not_keep_a_valid_key_out(start_server, keys) -> None:
    server = start_server(listen=_listen(max_connections=16))
    held = [_half_open(server) for _ in range(48)]  # three times the connection limit
    try:
        assert openai_client(server, keys.reader).skills.list().data == []
        assert all(_still_open(sock) for sock in held)  # the key got through beside them, not instead of them
    finally:
        for sock in held:
            sock.close()


def test_a_head_not_complete_by_the_deadline_is_answered_408_and_closed(start_server) -> None:
    server = start_server(listen=_listen(header_timeout_s=0.5))
    with _half_open(server) as partial, _connect(server) as silent:
        assert _until_closed(partial).startswith(b"HTTP/1.1 408 Request Timeout\r\n")
        assert _until_closed(silent) == b""


def test_over_tls_the_handshake_counts_toward_the_deadline(start_server, tmp_path: Path) -> None:
    require_tool("openssl")
    ca, cert, key = make_test_ca(tmp_path / "tls")
    server = start_server(listen=_listen(header_timeout_s=0.5, ssl_certfile=cert, ssl_keyfile=key))
    trusting = ssl.create_default_context(cafile=str(ca))
    with _connect(server) as no_hello, trusting.wrap_socket(_connect(server), server_hostname="127.0.0.1") as partial:
        partial.sendall(PARTIAL_HEAD)
        assert _until_closed(no_hello) == b""  # asyncio alone would wait 60 s for the ClientHello
        assert _until_closed(partial) == b""
    with trusting.wrap_socket(_connect(server), server_hostname="127.0.0.1") as prompt:
        prompt.sendall(PARTIAL_HEAD)
        assert _finish_head(prompt).startswith(b"HTTP/1.1 401 ")


def test_a_kept_alive_connection_cannot_hold_on_by_trickling_its_next_head(start_server, keys) -> None:
    server = start_server(listen=_listen(header_timeout_s=2, keep_alive_s=1))
    request = b"GET /openai/v1/skills HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keys.reader.encode() + b"\r\n\r\n"
    with _connect(server) as idle, _connect(server) as trickling:
        for sock in (idle, trickling):
            sock.sendall(request)
            assert read_until(sock, b'"has_more":false}').startswith(b"HTTP/1.1 200 ")
        # At once, before the keep-alive timeout: each byte stops uvicorn's keep-alive timer;
        # the head deadline, counted from the end of the response, does not move.
        given_up = time.monotonic() + DEADLINE_S
        answer = b""
        for byte in (request[i : i + 1] for i in range(len(request) - 4)):
            assert time.monotonic() < given_up, "the trickling connection was never closed"
            try:
                trickling.sendall(byte)
            except (BrokenPipeError, ConnectionResetError):
                break
            readable, _, _ = select.select([trickling], [], [], 0.2)
            if readable:
                answer = _until_closed(trickling)
                break
        else:
            pytest.fail("the whole head but its end was trickled and the connection is still open")
        assert _until_closed(idle) == b""  # uvicorn's keep-alive timeout holds
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")


def test_waiting_connections_are_bounded_per_client_and_in_all_oldest_closed_first(start_server) -> None:
    server = start_server(listen=_listen(max_waiting=6, max_waiting_per_client=4))
    mine = [_half_open(server, "127.0.0.1") for _ in range(6)]
    assert _given_up(mine[0]) and _given_up(mine[1])  # the client's bound: its two oldest
    theirs = [_half_open(server, "127.0.0.2") for _ in range(3)]
    assert _given_up(mine[2])  # the bound on all: the oldest of all
    for sock in mine[3:] + theirs:
        assert _finish_head(sock).startswith(b"HTTP/1.1 401 ")  # the others were kept
    for sock in mine + theirs:
        sock.close()


def test_the_waiting_bound_fits_in_the_open_file_limit() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        pytest.skip("no open-file limit to fit in")
    fitted = within_open_files(GateLimits(max_served=soft - 100, max_waiting=1024, max_waiting_per_client=128))
    assert (fitted.max_waiting, fitted.max_waiting_per_client) == (36, 36)  # 100 files left, 64 of them kept for the rest
    assert within_open_files(GateLimits(max_served=10, max_waiting=16)).max_waiting == 16


def _upload_head(key: str, boundary: bytes, length: int) -> bytes:
    return (b"POST /openai/v1/skills HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key.encode()
            + b"\r\nContent-Type: multipart/form-data; boundary=" + boundary + b"\r\nContent-Length: " + str(length).encode()
            + b"\r\nExpect: 100-continue\r\n\r\n")


def test_stalled_uploads_give_their_slots_up_and_a_fifth_upload_succeeds(start_server, keys, src, caplog) -> None:
    server = start_server(threads=4, body_pace=BodyPace(timeout_s=0.5, min_rate=1024))  # four upload slots
    stalled = [_connect(server) for _ in range(4)]
    for sock in stalled:
        sock.sendall(_upload_head(keys.writer, b"b", 1_000_000))
        # "100 Continue" comes when the server starts reading the body: the upload holds a slot.
        assert read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 100 Continue")
    fifth = openai_client(server, keys.writer, timeout=DEADLINE_S).skills.create(files=skill_files(skill_dir(src)))
    assert fifth.name == "demo"
    for sock in stalled:
        answer = _until_closed(sock)
        assert b"HTTP/1.1 408 " in answer and b"the request body stalled (0 bytes in" in answer
        sock.close()
    assert sum("request body stalled" in r.getMessage() for r in caplog.records) == 4


def test_a_slow_but_steady_upload_is_not_cut_short(start_server, keys, src) -> None:
    pace = BodyPace(timeout_s=2, min_rate=1024)
    server = start_server(body_pace=pace)
    body, boundary = multipart(skill_files(skill_dir(src, files={"assets/pad.txt": b"x" * 15_000})))
    # 256 bytes every 50 ms: 5 KiB/s, five times the minimum rate, for over 3 s (the sleeps alone
    # take that long): well past the 2 s a stall may last, so a fixed deadline would cut it.
    piece = 256
    with _connect(server) as sock:
        sock.sendall(_upload_head(keys.writer, boundary, len(body)))
        assert read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 100 Continue")
        for i in range(0, len(body), piece):
            sock.sendall(body[i : i + piece])
            time.sleep(0.05)
        answer = read_until(sock, b"}")
    assert answer.startswith(b"HTTP/1.1 200 ") and b'"name":"demo"' in answer
