"""A real static web server on loopback for well-known sites, honest or hostile.

``SiteServer(root)`` serves the files under ``root`` as a plain static host does: GET and HEAD,
404 for anything missing, the format's content types, an ``ETag`` (sha256 of the file) with
``If-None-Match`` answered by 304, and a ``Cache-Control`` chosen by the test. Every request is
logged (method, path, request headers) so tests can count what the client asked for.

``routes`` replace what a path answers, to play a hostile or broken server: each maps a path to a
function ``(handler) -> None`` that writes the whole answer itself (wrong bytes, a lying
Content-Length, a redirect loop, a trickle…).

``tls=(certfile, keyfile)`` serves HTTPS instead (see ``make_test_ca``).
"""

from __future__ import annotations

import hashlib
import os
import ssl
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

from skillctl.registry.wellknown.format import content_type


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)


class SiteServer:
    def __init__(self, root: Path, *, cache_control: str = "no-cache", tls: tuple[Path, Path] | None = None) -> None:
        self.root = Path(root)
        self.cache_control = cache_control
        self.tls = tls
        self.routes: dict[str, Callable[[BaseHTTPRequestHandler], None]] = {}
        self.log: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body leave in two writes; with Nagle's algorithm the second waits for
            # the client's delayed ACK (40 ms a request). Real servers avoid this too.
            disable_nagle_algorithm = True

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _serve(self, head: bool) -> None:
                path = self.path.split("?", 1)[0]
                with server._lock:
                    server.log.append(Request(self.command, path, dict(self.headers)))
                route = server.routes.get(path)
                if route is not None:
                    route(self)
                    return
                target = (server.root / path.lstrip("/")).resolve()
                if not str(target).startswith(str(server.root.resolve()) + os.sep) or not target.is_file():
                    self.send_response(404)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", "9")
                    self.end_headers()
                    if not head:
                        self.wfile.write(b"not found")
                    return
                body = target.read_bytes()
                etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
                if self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.send_header("Cache-Control", server.cache_control)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", content_type(path))
                self.send_header("Content-Length", str(len(body)))
                self.send_header("ETag", etag)
                self.send_header("Cache-Control", server.cache_control)
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._serve(head=False)

            def do_HEAD(self) -> None:  # noqa: N802
                self._serve(head=True)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="site-server", daemon=True)

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def start(self) -> "SiteServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "SiteServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def requests(self, method: str = "GET") -> list[str]:
        with self._lock:
            return [r.path for r in self.log if r.method == method]

    def clear(self) -> None:
        with self._lock:
            self.log.clear()


def reply(handler: BaseHTTPRequestHandler, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
    """Write a whole answer from a route (Content-Length set from ``body`` unless given)."""
    handler.send_response(status)
    hdrs = {"Content-Length": str(len(body)), **(headers or {})}
    for key, value in hdrs.items():
        handler.send_header(key, value)
    handler.end_headers()
    if handler.command != "HEAD":
        try:
            handler.wfile.write(body)
        except OSError:
            pass  # the client gave up first, which is what some tests want


def make_test_ca(folder: Path) -> tuple[Path, Path, Path]:
    """(ca.pem, server.pem, server.key): a throwaway CA and a certificate for 127.0.0.1 and
    localhost signed by it, made with the openssl command line."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_pem = folder / "ca.key", folder / "ca.pem"
    key, csr, pem, ext = folder / "server.key", folder / "server.csr", folder / "server.pem", folder / "san.ext"

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca_pem), "-days", "2",
            "-subj", "/CN=skillctl test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1")
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_pem), "-CAkey", str(ca_key), "-CAcreateserial", "-out", str(pem),
            "-days", "2", "-extfile", str(ext))
    return ca_pem, pem, key
