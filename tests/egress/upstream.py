"""Upstream servers for the egress tests: HTTPS and HTTP on 127.0.0.1, under a test CA.

The CA and the server certificate are made with the ``openssl`` CLI; the certificate names
``*.example.test``, ``example.test`` and ``other.test`` (reserved names, RFC 2606/6761: they can
never be real hosts). The tests map those names with ``--egress-resolve`` to these servers, and
the loopback-only guard keeps the proxy from ever dialling anything else.

Endpoints (GET unless said otherwise):

- ``/echo`` (any method): JSON of method, path, headers and body as received; every request
  is also appended to ``seen`` (with its trailers and, over TLS, the server name the client
  asked for) so a test can check what really arrived upstream.
- ``/reveal``: the real secret value in a header and in the body; ``?gzip=1`` compresses the
  body (``Content-Encoding: gzip``).
- ``/reveal-split``: 100 KB around the secret value, sent in two writes a moment apart with the
  cut inside the value, so the proxy receives it in two pieces.
- ``/bytes/N``: N bytes of a fixed pattern, streamed with a Content-Length.
- ``/reflect``: what an API does with a credential it was sent (the ``x-reflect`` header, a
  real value once the proxy injected it): back in a JSON body that escapes ``/`` as ``\\/``
  (PHP's ``json_encode``), percent-encoded in ``Location``, base64-encoded alone and inside a
  longer base64 text, and with ``\\u`` escapes for every character that is not a letter or digit.
- ``/reflect-status``: the reflected value in the status line's reason phrase and in a header *name*.
- ``/trailers``: a chunked body in several chunks, with the reflected value in a chunk and in
  a trailer (``Trailer: x-checksum``).
"""

from __future__ import annotations

import base64
import gzip
import json
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

PATTERN = bytes(range(256)) * 256  # 64 KiB


def pattern_bytes(n: int) -> bytes:
    """The first ``n`` bytes ``/bytes/N`` serves."""
    return (PATTERN * (n // len(PATTERN) + 1))[:n]


def make_test_ca(folder: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key), made with openssl."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = folder / "ca.key", folder / "ca.pem"
    key, csr, cert, ext = folder / "server.key", folder / "server.csr", folder / "server.pem", folder / "ext.cnf"

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=120)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca_cert), "-days", "2",
            "-subj", "/CN=skillctl egress test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=example.test")
    ext.write_text(
        "subjectAltName=DNS:example.test,DNS:*.example.test,DNS:*.sub.example.test,DNS:other.test\n"
        "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
    )
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key), "-CAcreateserial",
            "-out", str(cert), "-days", "2", "-extfile", str(ext))
    return ca_cert, cert, key


class Upstream:
    """One loopback server (HTTPS when given a certificate). ``secret`` is what ``/reveal`` leaks;
    ``host`` binds another local address (the benchmark's container ceiling only)."""

    def __init__(self, *, cert: Path | None = None, key: Path | None = None, secret: str = "", host: str = "127.0.0.1") -> None:
        self.seen: list[dict[str, Any]] = []
        self.secret = secret
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as two writes; with Nagle's algorithm the second waits for
            # the client's delayed ACK (~40 ms) on every kept-alive request.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> bytes:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    return self.rfile.read(length)
                if "chunked" in self.headers.get("transfer-encoding", ""):
                    data = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        if size == 0:
                            while line := self.rfile.readline().rstrip(b"\r\n"):  # trailer fields, then a blank line
                                self.trailers.append(line.decode("latin-1"))
                            return data
                        data += self.rfile.read(size)
                        self.rfile.readline()
                return b""

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self) -> None:
                self.trailers: list[str] = []
                body = self._body()
                record = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                          "body": body.decode("latin-1"), "client_port": self.client_address[1], "trailers": self.trailers,
                          "sni": getattr(self.connection, "skillctl_sni", None)}
                upstream.seen.append(record)
                if self.path.startswith("/bytes/"):
                    n = int(self.path.split("/")[2])
                    self.send_response(200)
                    self.send_header("content-type", "application/octet-stream")
                    self.send_header("content-length", str(n))
                    self.end_headers()
                    sent = 0
                    while sent < n:
                        chunk = PATTERN[: min(len(PATTERN), n - sent)]
                        self.wfile.write(chunk)
                        sent += len(chunk)
                elif self.path.startswith("/reflect-status"):
                    value = self.headers.get("x-reflect", "")
                    self.send_response(401, f"bad token {value}")
                    self.send_header(f"x-{value}", "1")
                    self.send_header("content-length", "0")
                    self.end_headers()
                elif self.path.startswith("/reflect"):
                    value = self.headers.get("x-reflect", "")
                    raw = value.encode()
                    body = json.dumps({
                        "php": value.replace("/", "\\/"),
                        "base64": base64.b64encode(raw).decode(),
                        "base64url": base64.urlsafe_b64encode(raw).decode().rstrip("="),
                        "inside": base64.b64encode(b"user:" + raw + b"@host").decode(),
                        "unicode": "".join(c if c.isalnum() else f"\\u{ord(c):04x}" for c in value),
                    }).replace("\\\\", "\\")  # the escapes above as JSON sends them, not doubled
                    self._send(200, body.encode(), {"content-type": "application/json",
                                                    "location": f"https://api.example.test/next?token={quote(value, safe='')}"})
                elif self.path.startswith("/trailers"):
                    value = self.headers.get("x-reflect", "").encode()
                    self.send_response(200)
                    self.send_header("transfer-encoding", "chunked")
                    self.send_header("trailer", "x-checksum")
                    self.end_headers()
                    for chunk in (b"first chunk\n", b"the value: " + value + b"\n", b"last chunk\n"):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.write(b"0\r\nx-checksum: " + value + b"\r\n\r\n")
                elif self.path.startswith("/reveal-split"):
                    value = upstream.secret.encode()
                    first, second = b"a" * 50_000 + value[:5], value[5:] + b"b" * 50_000
                    self.send_response(200)
                    self.send_header("content-length", str(len(first) + len(second)))
                    self.end_headers()
                    self.wfile.write(first)
                    self.wfile.flush()
                    time.sleep(0.3)  # two TLS records, two reads on the proxy's side
                    self.wfile.write(second)
                elif self.path.startswith("/reveal"):
                    text = f"the token is {upstream.secret}, keep it safe".encode()
                    headers = {"x-token": upstream.secret, "content-type": "text/plain"}
                    if "gzip=1" in self.path:
                        text, headers["content-encoding"] = gzip.compress(text), "gzip"
                    self._send(200, text, headers)
                else:
                    self._send(200, json.dumps(record).encode(), {"content-type": "application/json"})

            do_GET = do_POST = do_PUT = _handle

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        if cert is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(cert), str(key))

            def remember_sni(sock: ssl.SSLSocket, name: str | None, _ctx: ssl.SSLContext) -> None:
                sock.skillctl_sni = name  # type: ignore[attr-defined]  # the name the client asked for

            context.sni_callback = remember_sni
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name="upstream", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
