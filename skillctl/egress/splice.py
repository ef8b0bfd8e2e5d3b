"""The proxy's front door: passthrough domains are spliced here, everything else goes to mitmproxy.

Every connection from the container is accepted here first. Its first bytes are *peeked*
(``MSG_PEEK``: nothing consumed), so a connection that is not a ``CONNECT`` to a passthrough
host reaches mitmproxy's handler byte for byte as if mitmproxy had accepted it — intercepted
domains pay one peek per connection, nothing per request.

A ``CONNECT host:port`` whose host ``passes`` (allowed, listed in ``passthrough_domains``, no
secret bound to it) is handled here instead:

1. the upstream address is chosen as for intercepted requests (``dial.vet_upstream``: the
   ``--egress-resolve`` mapping, else DNS with every answer checked); a refusal is a 403;
2. ``200`` goes back, and the client's TLS ClientHello is read and parsed: it must be TLS,
   name a server (SNI) equal to the ``CONNECT`` host, and carry no Encrypted Client Hello
   (which would hide the real name); otherwise a TLS ``access_denied`` alert, and the record
   says why — so the policy never checks one name while the client talks to another;
3. the upstream is dialled at the vetted address, the ClientHello passed on unchanged, and the
   bytes relayed both ways by two threads. On Linux ``os.splice`` moves them socket → pipe →
   socket inside the kernel (no copy through Python, the GIL released throughout); elsewhere
   ``recv_into`` a 1 MiB buffer and ``sendall``.

Each spliced connection ends as one record (``mode: passthrough``): host, port, bytes each
way, duration, upstream — and ``not_seen``, because the proxy never sees method, path, status,
headers or bodies there, so it can neither log nor scrub them.

Standard library only, plus ``rules`` and ``dial`` (the proxy process's interpreter).
"""

from __future__ import annotations

import asyncio
import fcntl
import itertools
import os
import socket
import threading
import time
from typing import Any, Awaitable, Callable, Mapping

from skillctl.egress.dial import vet_upstream
from skillctl.egress.rules import egress_record, first_match, guard_refusal, normalize_host

CONNECT_PREFIX = b"CONNECT "
MAX_HEAD = 8192  # a CONNECT head longer than this is not ours to parse: mitmproxy answers it
HEAD_WAIT_S = 10.0  # a client that sent "CONNECT " and stalls is handed over after this
HELLO_TIMEOUT_S = 30.0
DIAL_TIMEOUT_S = 30.0
MAX_HELLO = 64 * 1024  # a ClientHello larger than this (post-quantum key shares are ~2 KB) is refused
CHUNK = 1 << 20  # per splice or recv: large moves, few system calls
NOT_SEEN = "method, path, status, headers and bodies: TLS passed through unopened (passthrough_domains)"
# A fatal TLS alert, access_denied (49), so the client's error says it was refused.
ACCESS_DENIED_ALERT = b"\x15\x03\x03\x00\x02\x02\x31"
_SPLICE = hasattr(os, "splice")
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class Refused(Exception):
    """A ClientHello that may not pass; the message says why."""


# ---------------------------------------------------------------------------- ClientHello


def parse_client_hello(hs: bytes) -> tuple[str | None, bool]:
    """(server name, whether it offers Encrypted Client Hello) from a whole handshake message
    (type, 3-byte length, ClientHello body); ``Refused`` if it is not a well-formed ClientHello."""
    if len(hs) < 4 or hs[0] != 1:
        raise Refused("the first TLS handshake message is not a ClientHello")
    body = memoryview(hs)[4 : 4 + int.from_bytes(hs[1:4], "big")]
    try:
        pos = 2 + 32  # legacy_version, random
        pos += 1 + body[pos]  # session id
        pos += 2 + int.from_bytes(body[pos : pos + 2], "big")  # cipher suites
        pos += 1 + body[pos]  # compression methods
        if pos == len(body):
            return None, False  # no extensions at all
        end = pos + 2 + int.from_bytes(body[pos : pos + 2], "big")
        pos += 2
        if end > len(body):
            raise IndexError
        sni, ech = None, False
        while pos < end:
            kind, size = int.from_bytes(body[pos : pos + 2], "big"), int.from_bytes(body[pos + 2 : pos + 4], "big")
            data = body[pos + 4 : pos + 4 + size]
            if len(data) != size:
                raise IndexError
            if kind == 0:  # server_name: a list of (type, name); type 0 is a host name
                at = 2
                while at < len(data):
                    name_type, length = data[at], int.from_bytes(data[at + 1 : at + 3], "big")
                    if name_type == 0:
                        sni = bytes(data[at + 3 : at + 3 + length]).decode("ascii")
                    at += 3 + length
            elif kind == 0xFE0D:  # encrypted_client_hello
                ech = True
            pos += 4 + size
        return sni, ech
    except (IndexError, UnicodeDecodeError):
        raise Refused("the TLS ClientHello is malformed") from None


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def read_client_hello(sock: socket.socket) -> tuple[bytes, str | None, bool]:
    """(the bytes read, to pass on unchanged; the server name; ECH offered). The ClientHello may
    span several TLS records; ``Refused`` for anything that is not one, ``EOFError`` if the
    client closes first."""
    raw, hs = bytearray(), bytearray()
    need: int | None = None
    while need is None or len(hs) < need:
        header = _recv_exact(sock, 5)
        raw += header
        if header[0] != 0x16:
            raise Refused("the tunnel does not carry TLS; a passthrough domain is reached over TLS only")
        length = int.from_bytes(header[3:5], "big")
        if length == 0 or length > 16384 + 2048:
            raise Refused("the TLS record is malformed")
        body = _recv_exact(sock, length)
        raw += body
        hs += body
        if need is None and len(hs) >= 4:
            need = 4 + int.from_bytes(hs[1:4], "big")
            if need > MAX_HELLO:
                raise Refused(f"the TLS ClientHello is larger than {MAX_HELLO} bytes")
    sni, ech = parse_client_hello(bytes(hs[:need]))
    return bytes(raw), sni, ech


# ---------------------------------------------------------------------------- relaying


def _splice_loop(src: socket.socket, dst: socket.socket, counts: list[int], i: int) -> None:
    r, w = os.pipe()
    try:
        try:
            fcntl.fcntl(w, _F_SETPIPE_SZ, CHUNK)  # one splice moves up to 1 MiB (the default pipe holds 64 KiB)
        except OSError:
            pass
        s, d = src.fileno(), dst.fileno()
        while True:
            n = os.splice(s, w, CHUNK, flags=os.SPLICE_F_MOVE)
            if n == 0:
                return
            counts[i] += n
            while n:
                n -= os.splice(r, d, n, flags=os.SPLICE_F_MOVE)
    finally:
        os.close(r)
        os.close(w)


def _copy_loop(src: socket.socket, dst: socket.socket, counts: list[int], i: int) -> None:
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    while True:
        n = src.recv_into(buf)
        if n == 0:
            return
        counts[i] += n
        dst.sendall(view[:n])


def pump(src: socket.socket, dst: socket.socket, counts: list[int], i: int) -> None:
    """Relay ``src`` → ``dst`` until ``src`` ends, then end ``dst``'s sending side (TLS's close
    then travels on); on an error, cut both connections so the other direction ends too."""
    try:
        try:
            (_splice_loop if _SPLICE else _copy_loop)(src, dst, counts, i)
        except OSError as exc:
            if not _SPLICE or exc.errno not in (22, 95):  # EINVAL/EOPNOTSUPP: splice unusable here
                raise
            _copy_loop(src, dst, counts, i)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# ---------------------------------------------------------------------------- the front door


def connect_target(head: bytes) -> tuple[str, int] | None:
    """(host, port) of a complete ``CONNECT host:port HTTP/1.x`` head, or None."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or parts[0] != "CONNECT" or not parts[2].startswith("HTTP/1."):
        return None
    host, sep, port = parts[1].rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536 or not host:
        return None
    return normalize_host(host), int(port)


class Front:
    """See the module docstring. ``passes(host)`` says whether a host is spliced; ``hand_off``
    gives mitmproxy an untouched connection; ``emit`` takes records (from any thread)."""

    def __init__(
        self,
        listener: socket.socket,
        *,
        passes: Callable[[str], bool],
        allowed: list[str],
        passthrough: list[str],
        resolve_map: Mapping[str, tuple[str, int]],
        loopback_only: bool,
        policy_text: str,
        hand_off: Callable[[socket.socket], Awaitable[None]],
        emit: Callable[[dict[str, Any]], None],
    ) -> None:
        self.listener = listener
        self.passes = passes
        self.allowed, self.passthrough = allowed, passthrough
        self.resolve_map, self.loopback_only = resolve_map, loopback_only
        self.policy_text = policy_text
        self.hand_off, self.emit = hand_off, emit
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._open: dict[int, list[socket.socket]] = {}  # spliced connections not yet recorded
        self._threads: set[threading.Thread] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.listener.getsockname()[:2]
        return host, port

    def open_ids(self) -> set[str]:
        """The spliced connections whose record is not written yet (a sync waits for them)."""
        with self._lock:
            return {f"splice-{n}" for n in self._open}

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        self.listener.setblocking(False)
        while not self._closing:
            try:
                conn, _ = await loop.sock_accept(self.listener)
            except OSError:
                if self._closing:
                    return
                await asyncio.sleep(0.05)  # EMFILE and the like: try again rather than stop serving
                continue
            task = asyncio.create_task(self._handle(conn))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def close(self, wait_s: float = 2.0) -> None:
        """Stop accepting, cut the spliced connections still open, wait for their records."""
        self._closing = True
        self.listener.close()
        with self._lock:
            socks = [s for pair in self._open.values() for s in pair]
            threads = list(self._threads)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + wait_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # ------------------------------------------------------------------ per connection

    async def _peek_head(self, conn: socket.socket) -> bytes:
        """The connection's first bytes, left unread: up to a whole request head if it is a
        ``CONNECT``, else whatever shows it is not one."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + HEAD_WAIT_S
        while True:
            try:
                data = conn.recv(MAX_HEAD, socket.MSG_PEEK)
            except BlockingIOError:
                ready = loop.create_future()
                loop.add_reader(conn.fileno(), lambda: ready.done() or ready.set_result(None))
                try:
                    await asyncio.wait_for(ready, max(0.0, deadline - loop.time()))
                except asyncio.TimeoutError:
                    return b""
                finally:
                    loop.remove_reader(conn.fileno())
                continue
            except OSError:
                return b""
            if not data or data[: len(CONNECT_PREFIX)] != CONNECT_PREFIX[: len(data)]:
                return data  # closed, or not a CONNECT: mitmproxy's
            if b"\r\n\r\n" in data or len(data) >= MAX_HEAD or loop.time() > deadline:
                return data
            await asyncio.sleep(0.002)  # a head arriving in pieces; the peeked part stays readable

    async def _handle(self, conn: socket.socket) -> None:
        head = await self._peek_head(conn)
        target = connect_target(head) if b"\r\n\r\n" in head else None
        if target is None or not self.passes(target[0]):
            await self.hand_off(conn)
            return
        host, port = target
        started = time.monotonic()
        try:
            end = head.index(b"\r\n\r\n") + 4
            while end:  # peeked whole above, so it is all in the buffer: consume the head only
                end -= len(conn.recv(end))
            address, why = await vet_upstream(host, port, self.resolve_map, loopback_only=self.loopback_only)
            if address is None:
                self._record(host, port, started, decision="denied", reason=why, status=403)
                body = (f"skillctl egress proxy: request refused by {self.policy_text}: {why}.\n"
                        f"Allowed domains: {', '.join(self.allowed) or 'none'}.\n").encode()
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain; charset=utf-8\r\nx-skillctl-egress: denied\r\n"
                             b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
                conn.close()
                return
            conn.setblocking(True)
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        except OSError:
            conn.close()
            return
        reason = f"matches {first_match(self.allowed, host)}; passthrough ({first_match(self.passthrough, host)})"
        if why:
            reason += f"; {why}"
        n = next(self._ids)
        thread = threading.Thread(target=self._splice, args=(n, conn, host, port, address, reason, started),
                                  name=f"splice-{host}", daemon=True)
        with self._lock:
            self._open[n] = [conn]  # from now on a sync waits for its record
            self._threads.add(thread)
        thread.start()

    def _splice(self, n: int, conn: socket.socket, host: str, port: int, address: tuple[str, int], reason: str,
                started: float) -> None:
        counts = [0, 0]
        upstream: socket.socket | None = None
        fields: dict[str, Any] = {"reason": reason, "upstream": f"{address[0]}:{address[1]}"}
        try:
            conn.settimeout(HELLO_TIMEOUT_S)
            try:
                hello, sni, ech = read_client_hello(conn)
            except Refused as exc:
                raise _Deny(str(exc)) from None
            if not sni:
                raise _Deny(f"the TLS ClientHello names no server (SNI); a passthrough tunnel must name its CONNECT host {host}")
            if normalize_host(sni) != host:
                raise _Deny(f"the TLS server name (SNI) {normalize_host(sni)} differs from the CONNECT host {host}")
            if ech:
                raise _Deny("the TLS ClientHello offers Encrypted Client Hello, which hides the server name")
            if self.loopback_only and (why := guard_refusal(address[0])):
                raise _Deny(why)
            try:
                upstream = socket.create_connection(address, timeout=DIAL_TIMEOUT_S)
            except OSError as exc:
                fields["error"] = f"cannot connect to {address[0]}:{address[1]}: {exc.strerror or exc}"
                return
            with self._lock:
                self._open[n].append(upstream)
            for sock in (conn, upstream):
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            upstream.sendall(hello)
            counts[0] += len(hello)
            down = threading.Thread(target=pump, args=(upstream, conn, counts, 1), name=f"splice-{host}-down", daemon=True)
            down.start()
            pump(conn, upstream, counts, 0)
            down.join()
        except _Deny as exc:
            fields.update(decision="denied", reason=str(exc))
            try:
                conn.sendall(ACCESS_DENIED_ALERT)
            except OSError:
                pass
        except EOFError:
            fields["error"] = "the client closed the tunnel before its TLS ClientHello"
        except (OSError, socket.timeout) as exc:
            fields["error"] = f"passthrough failed: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
        finally:
            for sock in (conn, upstream):
                if sock is not None:
                    sock.close()
            self._record(host, port, started, request_bytes=counts[0], response_bytes=counts[1], **fields)
            with self._lock:
                self._open.pop(n, None)
                self._threads.discard(threading.current_thread())

    def _record(self, host: str, port: int, started: float, **fields: Any) -> None:
        self.emit(egress_record(mode="passthrough", method="CONNECT", scheme="tls", host=host, port=port,
                                duration_ms=round((time.monotonic() - started) * 1000, 1), not_seen=NOT_SEEN, **fields))


class _Deny(Exception):
    """A passthrough tunnel refused after its 200 (at its ClientHello)."""
