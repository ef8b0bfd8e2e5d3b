"""Connections before their request: a deadline, bounds, and no place in the connection limit.

uvicorn alone counts every open connection toward ``limit_concurrency``, arms no timer before
a connection's first request, and stops its keep-alive timer at the first byte of the next one.
So a few hundred connections that send part of a request head and nothing more (slowloris)
take every slot, and keep them: the server answers 503 to everyone else. The gate instead
tells two states apart:

    waiting   accepted (before any TLS handshake), or done with a response, and the head of the
              next request (request line and headers) not complete yet
    served    from a complete head until its response is complete

- Only served connections count toward ``max_served``; beyond it a request gets 503.
- A waiting connection has ``header_timeout_s`` to complete its head, TLS handshake included;
  then it is closed (``Waiter.give_up``). uvicorn's keep-alive timeout still closes an idle
  connection sooner.
- At most ``max_waiting`` connections wait at once, ``max_waiting_per_client`` of them from one
  client (an IPv4 address, or an IPv6 /64: one host's share); one more closes the oldest waiting
  connection in the bound it passes. The oldest, because a client that sends its request at once
  waits for microseconds: long waiters are the ones not sending. So an attacker cannot hold file
  descriptors beyond the bounds, nor keep a new client out for longer than that client takes to
  send its head.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import resource
from dataclasses import dataclass, replace
from typing import Protocol

from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.flow_control import service_unavailable

log = logging.getLogger("skillctl.serve")

# Files the process needs besides its connections: the listening socket, the registry clients
# (SQLite, HTTP sessions), the keys file, logs.
RESERVED_FILES = 64


@dataclass(frozen=True)
class GateLimits:
    header_timeout_s: float = 10.0
    max_served: int | None = 512
    max_waiting: int = 1024
    max_waiting_per_client: int = 128


class Waiter(Protocol):
    """A connection as the gate sees it."""

    client_group: str  # what the per-client bound counts by (``client_group``)

    def give_up(self) -> None:
        """Close the connection: its head is late, or it is the oldest in a full bound."""


def client_group(peer: object) -> str:
    """The client a peer address (``transport.get_extra_info("peername")``) counts for."""
    host = peer[0] if isinstance(peer, tuple) and peer else ""
    try:
        address = ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return str(host)  # a Unix socket, or no address at all: one group
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def within_open_files(limits: GateLimits) -> GateLimits:
    """``limits`` with ``max_waiting`` lowered to what the process's open-file limit leaves
    beside ``max_served`` connections: past that limit the server could accept nobody."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return limits
    room = max(16, soft - (limits.max_served or 0) - RESERVED_FILES)
    if limits.max_waiting <= room:
        return limits
    log.warning("the open-file limit (%d) leaves room for %d connections waiting for their request beside %s served; "
                "raise it (ulimit -n) for more", soft, room, limits.max_served)
    return replace(limits, max_waiting=room, max_waiting_per_client=min(limits.max_waiting_per_client, room))


class Gate:
    """The waiting connections, oldest first, with their deadlines; the served ones."""

    def __init__(self, limits: GateLimits) -> None:
        self.limits = limits
        self._waiting: dict[Waiter, asyncio.TimerHandle] = {}  # insertion order: oldest first
        self._by_client: dict[str, dict[Waiter, None]] = {}
        self.served: set[Waiter] = set()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def wait(self, conn: Waiter) -> None:
        """``conn`` waits for a request head from now on (making room for it if need be)."""
        self._leave(conn)
        self.served.discard(conn)
        group = self._by_client.get(conn.client_group, {})
        if len(group) >= self.limits.max_waiting_per_client:
            self._give_up(next(iter(group)))
        if len(self._waiting) >= self.limits.max_waiting:
            self._give_up(next(iter(self._waiting)))
        timer = asyncio.get_running_loop().call_later(self.limits.header_timeout_s, self._give_up, conn)
        self._waiting[conn] = timer
        self._by_client.setdefault(conn.client_group, {})[conn] = None

    def serve(self, conn: Waiter) -> None:
        """``conn`` sent a complete head: it counts toward ``max_served`` until ``wait`` or ``forget``."""
        self._leave(conn)
        self.served.add(conn)

    def forget(self, conn: Waiter) -> None:
        """``conn`` is closed."""
        self._leave(conn)
        self.served.discard(conn)

    def _give_up(self, conn: Waiter) -> None:
        self._leave(conn)
        conn.give_up()

    def _leave(self, conn: Waiter) -> None:
        timer = self._waiting.pop(conn, None)
        if timer is None:
            return
        timer.cancel()
        group = self._by_client[conn.client_group]
        del group[conn]
        if not group:
            del self._by_client[conn.client_group]

    def limited(self, app: ASGIApp) -> ASGIApp:
        """``app`` behind ``max_served``: a request beyond it gets uvicorn's 503."""
        limit = self.limits.max_served

        async def gated(scope: Scope, receive: Receive, send: Send) -> None:
            if limit is not None and scope["type"] == "http" and len(self.served) > limit:
                log.warning("%d requests in flight, over the limit of %d (--max-connections): answered 503", len(self.served), limit)
                await service_unavailable(scope, receive, send)  # type: ignore[arg-type]
                return
            await app(scope, receive, send)

        return gated
