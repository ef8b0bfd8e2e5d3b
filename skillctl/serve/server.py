"""Running the application on uvicorn: listening socket, TLS, logs, graceful shutdown.

``SkillServer(settings, listen)`` binds its socket at once (``port=0`` picks a free one, and
``url`` says which), so a port in use or unreadable TLS files fail before anything starts.
Connections go through the gate (``skillctl.serve.gate``): a deadline for each request head,
bounds on connections waiting for one, and a connection limit that counts only requests being
served; TLS is started by the connection's protocol, so the handshake is inside all three.
``run()`` serves until SIGINT or SIGTERM, then stops accepting connections, lets requests in
flight finish (up to ``shutdown_timeout_s``), closes the registry clients and returns. ``start()``
and ``stop()`` do the same in a background thread (tests, benchmarks).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import signal
import socket
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import uvicorn
from uvicorn.config import SSL_PROTOCOL_VERSION, create_ssl_context

from skillctl.errors import ConfigError
from skillctl.serve.app import ServeSettings, build
from skillctl.serve.gate import Gate, GateLimits, within_open_files
from skillctl.serve.logsafe import escape_logs, escaping
from skillctl.serve.protocol import GuardedH11Protocol


@dataclass(frozen=True)
class Listen:
    """Where and how to listen. The ``ssl_*`` options are uvicorn's, with its meaning: a
    certificate chain and its key make the server HTTPS; ``ssl_ca_certs`` with
    ``ssl_cert_reqs=2`` (``ssl.CERT_REQUIRED``) also asks clients for certificates.

    ``max_connections``: requests served at once (beyond: 503); connections still sending a
    request head do not count. ``header_timeout_s``: from accepting a connection (or from the end
    of its last response) to the complete head of its next request, TLS handshake included.
    ``max_waiting`` / ``max_waiting_per_client``: connections waiting for a request head, in
    all and from one client; one more closes the oldest (see ``skillctl.serve.gate``)."""

    host: str = "127.0.0.1"
    port: int = 8765
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_keyfile_password: str | None = None
    ssl_ca_certs: Path | None = None
    ssl_cert_reqs: int = ssl.CERT_NONE
    ssl_ciphers: str = "TLSv1"
    shutdown_timeout_s: float = 30.0
    max_connections: int | None = 512
    keep_alive_s: int = 5
    header_timeout_s: float = 10.0
    max_waiting: int = 1024
    max_waiting_per_client: int = 128

    @property
    def tls(self) -> bool:
        return self.ssl_certfile is not None


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's handling of SIGINT/SIGTERM (the first stops gracefully, a second SIGINT
        forces), without raising the signal again once stopped: stopping on a signal is how
        this server is meant to end, so it closes its registries and exits 0."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


def _bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host!r}: {exc.strerror}; give an IP address or a host name of this machine") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        # Listening from now on: connections made before the server loop runs wait in the
        # backlog instead of being refused.
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}; choose another --port or --host") from None
    return sock


def _tls_context(listen: Listen) -> ssl.SSLContext | None:
    if listen.ssl_certfile is None:
        return None
    try:
        return create_ssl_context(listen.ssl_certfile, listen.ssl_keyfile, listen.ssl_keyfile_password, SSL_PROTOCOL_VERSION,
                                  listen.ssl_cert_reqs, listen.ssl_ca_certs, listen.ssl_ciphers)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot use the TLS certificate or key: {getattr(exc, 'strerror', None) or exc}") from None


def configure_logging(access_log: bool) -> None:
    """Server and access lines on stderr, one per event (stdout stays free)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%dT%H:%M:%S"))
    escaping(handler)  # records of every logger it writes, also those no logger filter saw
    for name in ("skillctl.serve", "uvicorn.error"):  # the access logger propagates to the first
        logger = logging.getLogger(name)
        if handler.__class__ not in {type(h) for h in logger.handlers}:
            logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    logging.getLogger("skillctl.serve.access").disabled = not access_log


class SkillServer:
    def __init__(self, settings: ServeSettings, listen: Listen = Listen()) -> None:
        self.settings = settings
        self.listen = listen
        self.app, self.workers = build(settings)
        escape_logs("uvicorn.error")  # its lines can carry exception texts made of request data
        tls = _tls_context(listen)  # reads the TLS files now: a bad one is a one-line error, not a traceback later
        self.gate = Gate(within_open_files(GateLimits(header_timeout_s=listen.header_timeout_s, max_served=listen.max_connections,
                                                      max_waiting=listen.max_waiting,
                                                      max_waiting_per_client=listen.max_waiting_per_client)))
        self.sock = _bind(listen.host, listen.port)
        config = uvicorn.Config(
            self.gate.limited(self.app),
            http=functools.partial(GuardedH11Protocol, gate=self.gate, tls=tls),  # type: ignore[arg-type]
            ws="none",  # no WebSocket routes; an upgraded connection would leave the gate's books
            log_config=None,
            access_log=False,  # our own access log names the key; uvicorn's cannot
            lifespan="off",
            server_header=False,
            timeout_graceful_shutdown=listen.shutdown_timeout_s,
            timeout_keep_alive=listen.keep_alive_s,
            limit_concurrency=None,  # the gate's: uvicorn's would count connections still sending their head
        )
        config.load()
        self.server = _Server(config)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    @property
    def url(self) -> str:
        host = self.listen.host
        host = f"[{host}]" if ":" in host else host
        return f"{'https' if self.listen.tls else 'http'}://{host}:{self.port}"

    def run(self, on_ready: Callable[[], None] = lambda: None) -> None:
        """Serve until SIGINT/SIGTERM (or ``stop``), then shut down gracefully. ``on_ready`` is
        called once the registry clients are open, just before connections are accepted."""
        self.workers.start()
        try:
            on_ready()
            self.server.run(sockets=[self.sock])
        finally:
            self.workers.stop()
            self.sock.close()

    def start(self) -> "SkillServer":
        """``run`` in a background thread; returns once the server accepts connections."""
        self.workers.start()
        self._thread = threading.Thread(target=self._serve_in_thread, name="skillctl-serve", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the server did not start; see the log")
            time.sleep(0.01)
        return self

    def _serve_in_thread(self) -> None:
        try:
            self.server.run(sockets=[self.sock])
        finally:
            self.sock.close()

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.workers.stop()

    def __enter__(self) -> "SkillServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
