"""Hostile registries on loopback: servers that answer as a broken or malicious registry would.

A real distribution server never trickles, loops, floods or points credentials elsewhere, so
these speak just enough of the API by hand: ``answer(handler)`` gets every request (a
``BaseHTTPRequestHandler``: ``command``, ``path``, ``headers``) and writes whatever it likes to
``handler.wfile`` — a clean reply (``send``), a reply trickled byte by byte (``trickle``), or
nothing at all. Every request is recorded in ``seen``. ``tls=`` serves HTTPS with a certificate
from ``make_cert``; ``read_bodies=False`` leaves request bodies for ``answer`` to read (slowly,
or never). Whatever a handler is doing when the test ends, it stops: sleeps wait on
``stop``, and writes to a client that went away end the handler.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]


class Hostile:
    def __init__(
        self, answer: Callable[[Any], None], *, bind: str = "127.0.0.1", tls: tuple[Path, Path] | None = None, read_bodies: bool = True
    ) -> None:
        self.answer = answer
        self.seen: list[Seen] = []
        self.stop = threading.Event()
        hostile = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length and read_bodies:
                    self.rfile.read(length)
                hostile.seen.append(Seen(self.command, self.path, dict(self.headers.items())))
                try:
                    hostile.answer(self)
                except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                    self.close_connection = True

            do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        self.server = ThreadingHTTPServer((bind, 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.bind = bind
        self.port = self.server.server_address[1]
        self.scheme = "https" if tls else "http"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def host(self) -> str:
        return f"{self.bind}:{self.port}"

    @property
    def base(self) -> str:
        return f"{self.scheme}://{self.host}"

    def url(self, namespace: str = "ns") -> str:
        return f"oci://{self.host}/{namespace}"

    def requests_to(self, fragment: str) -> list[Seen]:
        return [s for s in self.seen if fragment in s.path]

    def __enter__(self) -> "Hostile":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def send(h: Any, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
    """A complete, well-formed reply."""
    h.send_response(status)
    for key, value in (headers or {}).items():
        h.send_header(key, value)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    if h.command != "HEAD":
        h.wfile.write(body)


def send_json(h: Any, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
    send(h, status, doc if isinstance(doc, bytes) else json.dumps(doc).encode(), {"Content-Type": "application/json", **(headers or {})})


def not_found(h: Any) -> None:
    send_json(h, 404, {"errors": [{"code": "MANIFEST_UNKNOWN", "message": "manifest unknown"}]})


def trickle(h: Any, data: bytes, every_s: float, stop: threading.Event) -> None:
    """``data`` one byte at a time, ``every_s`` apart, until done or the test ends."""
    for i in range(len(data)):
        if stop.wait(every_s):
            return
        h.wfile.write(data[i:i + 1])
        h.wfile.flush()
    h.close_connection = True


def make_cert(folder: Path, ips: tuple[str, ...] = ("127.0.0.1", "127.0.0.2")) -> tuple[Path, Path]:
    """A self-signed certificate for these loopback addresses (``openssl`` CLI): (cert, key).
    Clients trust it through ``REQUESTS_CA_BUNDLE=cert``."""
    cert, key = folder / "tls.crt", folder / "tls.key"
    san = ",".join(f"IP:{ip}" for ip in ips)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
         "-subj", f"/CN={ips[0]}", "-addext", f"subjectAltName={san}"],
        check=True, capture_output=True,
    )
    return cert, key
