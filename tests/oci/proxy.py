"""A reverse proxy in front of a real distribution server.

As teams deploy one (nginx ``auth_basic`` + ``limit_except GET HEAD``): users are checked here,
readers may only read, and the catalog can be switched off as GHCR or Docker Hub do — the 403s
and 404s a plain distribution never sends. With ``tamper`` it is a compromised registry (or a
man in the middle on plain HTTP): it rewrites answers of the real server, e.g. to serve a
manifest larger than distribution would ever store. The registry behind it is the real one.
"""

from __future__ import annotations

import base64
import http.client
import threading
from typing import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def forward(port: int, method: str, path: str, headers, body: bytes | None, *, drop: tuple[str, ...] = ()) -> tuple[int, bytes, dict]:
    """Send one request to the real server on ``port``: (status, body, headers to pass back)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    sent = {k: v for k, v in headers if k.lower() not in ("content-length", "connection", *drop)}
    if body is not None:
        sent["Content-Length"] = str(len(body))
    conn.request(method, path, body=body, headers=sent)
    resp = conn.getresponse()
    data = resp.read()
    out = {k: v for k, v in resp.getheaders() if k.lower() not in ("content-length", "connection", "transfer-encoding")}
    conn.close()
    return resp.status, data, out


class AuthorizingProxy:
    def __init__(
        self,
        upstream_port: int,
        users: dict[str, tuple[str, bool]] | None = None,
        *,
        catalog: bool = True,
        tamper: Callable[[str, str, bytes], bytes | None] | None = None,
        chunked: bool = False,
    ) -> None:
        """``users``: name -> (password, may_write), None for anonymous access. ``tamper(method,
        path, body)`` may return other bytes to send (headers kept, length fixed up);
        ``chunked`` sends tampered bodies without a Content-Length."""
        self.upstream_port = upstream_port
        self.users = users
        self.catalog = catalog
        self.tamper = tamper
        self.chunked = chunked
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _reply(self, status: int, body: bytes = b"", headers: dict | None = None, chunked: bool = False) -> None:
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                if chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command == "HEAD":
                    return
                if not chunked:
                    self.wfile.write(body)
                    return
                for i in range(0, len(body), 65536):
                    part = body[i:i + 65536]
                    self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                user = proxy._user(self.headers.get("Authorization", "")) if proxy.users is not None else ""
                if user is None:
                    return self._reply(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}',
                                       {"WWW-Authenticate": 'Basic realm="proxy"', "Content-Type": "application/json"})
                if self.path.startswith("/v2/_catalog") and not proxy.catalog:
                    return self._reply(404, b'{"errors":[{"code":"NOT_FOUND","message":"catalog is not offered"}]}')
                if proxy.users is not None and self.command not in ("GET", "HEAD") and not proxy.users[user][1]:
                    return self._reply(403, b'{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}',
                                       {"Content-Type": "application/json"})
                status, data, out = forward(proxy.upstream_port, self.command, self.path, self.headers.items(), body,
                                            drop=("authorization",))
                changed = proxy.tamper(self.command, self.path, data) if proxy.tamper else None
                if changed is not None:
                    return self._reply(status, changed, out, chunked=proxy.chunked)
                self._reply(status, data, out)

            do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _user(self, header: str) -> str | None:
        assert self.users is not None
        if not header.startswith("Basic "):
            return None
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except Exception:  # noqa: BLE001 - any garbage is "not authenticated"
            return None
        return user if user in self.users and self.users[user][0] == password else None

    def __enter__(self) -> "AuthorizingProxy":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
