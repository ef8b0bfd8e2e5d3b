"""Request size caps are enforced while the body is read, never after: a declared length over
the cap is refused before any body is sent, and a body without a declared length is refused as
soon as it passes the cap. Each test leaves the body unfinished, so a server that waited for the
whole body would never answer (and the test would fail on its socket deadline)."""

from __future__ import annotations

import socket
from pathlib import Path

import anthropic
import openai
import pytest

from skillctl.bundle import BundleLimits

from .helpers import anthropic_client, openai_client, skill_dir, skill_files

CAP = 64 * 1024


def _answer(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def _connect(server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=60)


def test_a_declared_length_over_the_cap_is_refused_before_the_body(start_server, keys) -> None:
    server = start_server(max_request_bytes=CAP)
    with _connect(server) as sock:
        sock.sendall(
            b"POST /openai/v1/skills HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keys.writer.encode()
            + b"\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 1000000000\r\n\r\n"
        )
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 413 ")


def test_a_chunked_body_is_cut_off_when_it_passes_the_cap(start_server, keys) -> None:
    server = start_server(max_request_bytes=CAP)
    with _connect(server) as sock:
        sock.sendall(
            b"POST /anthropic/v1/skills HTTP/1.1\r\nHost: x\r\nx-api-key: " + keys.writer.encode()
            + b"\r\nContent-Type: multipart/form-data; boundary=b\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        part = b"--b\r\nContent-Disposition: form-data; name=\"files[]\"; filename=\"demo/big.bin\"\r\n\r\n"
        sock.sendall(b"%x\r\n%s\r\n" % (len(part), part))
        block = b"\0" * 8192
        for _ in range(2 * CAP // len(block)):  # twice the cap, and no final chunk
            sock.sendall(b"%x\r\n%s\r\n" % (len(block), block))
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 413 ")


def test_the_sdks_get_their_too_large_errors(start_server, keys, tmp_path: Path) -> None:
    server = start_server(max_request_bytes=CAP)
    big = skill_files(skill_dir(tmp_path / "src", files={"assets/big.bin": b"\x01" * (CAP + 1)}))
    with pytest.raises(openai.APIStatusError) as caught:
        openai_client(server, keys.writer).skills.create(files=big)
    assert caught.value.status_code == 413 and "over the server's limit of 65536 bytes" in caught.value.message
    with pytest.raises(anthropic.APIStatusError) as too_large:
        anthropic_client(server, keys.writer).skills.create(files=big)
    assert too_large.value.status_code == 413 and too_large.value.type == "request_too_large"


def test_more_parts_than_a_skill_may_have_files_is_refused(start_server, keys) -> None:
    server = start_server(limits=BundleLimits(max_files=3))
    parts = [(f"demo/f{i}.md", b"x") for i in range(4)]
    with pytest.raises(openai.BadRequestError, match="Too many files"):
        openai_client(server, keys.writer).skills.create(files=parts)


def test_a_skill_over_the_bundle_limits_is_refused_like_publish_refuses_it(start_server, keys, tmp_path: Path) -> None:
    server = start_server(limits=BundleLimits(max_file_size=1024))
    files = skill_files(skill_dir(tmp_path / "src", files={"assets/big.bin": b"\x01" * 2048}))
    with pytest.raises(openai.BadRequestError, match="over the limit of 1024.*max_file_size"):
        openai_client(server, keys.writer).skills.create(files=files)


def test_an_upload_that_is_not_multipart_is_refused(server, keys) -> None:
    client = openai_client(server, keys.writer)
    with pytest.raises(openai.BadRequestError, match="multipart/form-data"):
        client.post("/skills", body={"files": ["x"]}, cast_to=object)
