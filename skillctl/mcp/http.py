"""``skillctl mcp serve --transport http``: the MCP server on streamable HTTP, at ``/mcp``.

The SDK's streamable-HTTP app (sessions, SSE, DNS-rebinding protection on a loopback address)
behind what ``skillctl serve`` puts in front of its own app: the connection gate (a deadline for
each request head, bounds on connections waiting for one; ``skillctl.serve.gate``) and the same
API keys (``skillctl serve key add NAME --scopes read``, kept as hashes, re-read when the file
changes). With ``--keys`` every request needs ``Authorization: Bearer <key>`` of a key with the
``read`` scope: none or an unknown one is 401, a key without ``read`` 403. Without keys the
server listens on a loopback address only — anyone who can reach it could read it.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable

from skillctl.errors import ConfigError
from skillctl.mcp.catalog import Catalog
from skillctl.mcp.server import build_server

PATH = "/mcp"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def check_listen(host: str, keys: Path | None) -> None:
    if keys is None and host not in LOOPBACK:
        raise ConfigError(f"refusing to serve skills on {host} without keys: anyone who can reach it could read them; "
                          "give --keys FILE (skillctl serve key add NAME --scopes read --keys FILE) or listen on 127.0.0.1")


class _KeyCheck:
    """ASGI middleware: every HTTP request needs a key with the ``read`` scope."""

    def __init__(self, app: Any, keyring: Any) -> None:
        self.app = app
        self.keyring = keyring

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from skillctl.serve.keys import READ

        headers = dict(scope.get("headers") or ())
        auth = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, presented = auth.partition(" ")
        try:
            key = self.keyring.authenticate(presented.strip()) if scheme.lower() == "bearer" and presented.strip() else None
        except ConfigError:
            await _refuse(send, 503, "the server's keys file is unusable; ask its operator")
            return
        if key is None:
            await _refuse(send, 401, "this server needs a key: send Authorization: Bearer <key> (skillctl serve key add NAME --scopes read)")
            return
        if READ not in key.scopes:
            await _refuse(send, 403, f"the key {key.name} has no read scope")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Any, status: int, message: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="skillctl"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class McpHttpServer:
    """The catalog over streamable HTTP; ``run()`` until SIGINT/SIGTERM, or ``start()``/``stop()``
    in a background thread (tests, benchmarks). The socket is bound at once: ``port=0`` picks a free
    port and ``url`` names it."""

    def __init__(self, catalog: Catalog, *, host: str = "127.0.0.1", port: int = 8766, keys: Path | None = None) -> None:
        import uvicorn

        from skillctl.serve.gate import Gate, GateLimits, within_open_files
        from skillctl.serve.keys import KeyRing
        from skillctl.serve.protocol import GuardedH11Protocol
        from skillctl.serve.server import Listen, _bind, _Server

        check_listen(host, keys)
        keyring = KeyRing(keys) if keys is not None else None
        self.host = host
        server = build_server(catalog, private=keyring is not None)
        app: Any = server.streamable_http_app(streamable_http_path=PATH, host=host)
        if keyring is not None:
            app = _KeyCheck(app, keyring)
        listen = Listen(host=host, port=port)
        self.gate = Gate(within_open_files(GateLimits(header_timeout_s=listen.header_timeout_s, max_served=listen.max_connections,
                                                      max_waiting=listen.max_waiting,
                                                      max_waiting_per_client=listen.max_waiting_per_client)))
        self.sock = _bind(host, port)
        config = uvicorn.Config(self.gate.limited(app), http=functools.partial(GuardedH11Protocol, gate=self.gate, tls=None),  # type: ignore[arg-type]
                                ws="none", log_config=None, access_log=False, lifespan="on", server_header=False,
                                timeout_graceful_shutdown=5, limit_concurrency=None)
        config.load()
        self.server = _Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        port = self.sock.getsockname()[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{port}{PATH}"

    def run(self, on_ready: Callable[[], None] = lambda: None) -> None:
        try:
            on_ready()
            self.server.run(sockets=[self.sock])
        finally:
            self.sock.close()

    def start(self) -> "McpHttpServer":
        self._thread = threading.Thread(target=self.run, name="skillctl-mcp-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the MCP server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> "McpHttpServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
