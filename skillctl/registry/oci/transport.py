"""HTTP exchanges with a total deadline: connecting, the headers and the body together.

``requests`` (on urllib3) has per-operation timeouts only: one for connecting, and one for each
read that restarts with every byte received. A server that trickles one byte every few seconds,
in its status line, its headers or its body, holds such a request open for ever. Here the
socket's timeout is set again before every single receive, to what is left of the exchange's
deadline (or the idle timeout, if smaller), so a receive fails with a timeout at the moment the
deadline passes — whether urllib3 is parsing the status line, a header or the body.

How: ``DeadlineAdapter`` gives its connection pools connections that send with the socket's
timeout set to the time left (``sendall`` applies it to the whole send: urllib3 would otherwise
give an upload only the connect timeout) and whose responses read the socket through
``_DeadlineReader``. The deadline is the one of the exchange in progress, set by ``deadline_for``
around ``session.request``; the response keeps it, so streaming the body later is bound by the
same deadline. ``Exchange.phase`` says what the exchange was doing, for the error message.
"""

from __future__ import annotations

import contextvars
import http.client
import io
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

@dataclass
class Exchange:
    deadline: float  # time.monotonic() by which everything must be done
    phase: str = "connecting"


_CURRENT: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar("skillctl_http_exchange", default=None)


class DeadlinePassed(TimeoutError):
    """A send or receive was due after the exchange's deadline (a socket timeout, for urllib3)."""


@contextmanager
def deadline_for(at: float) -> Iterator[Exchange]:
    """Requests sent inside this block, and the responses they get, stop at ``at``
    (``time.monotonic()``), whenever their body is read."""
    exchange = Exchange(at)
    token = _CURRENT.set(exchange)
    try:
        yield exchange
    finally:
        _CURRENT.reset(token)


def _left(exchange: Exchange) -> float:
    left = exchange.deadline - time.monotonic()
    if left <= 0:
        raise DeadlinePassed("the exchange's deadline passed")
    return left


class _DeadlineReader(io.RawIOBase):
    """The socket's own raw reader (so its reference counting is kept), with the timeout set to
    the time left before each receive."""

    def __init__(self, sock: Any, exchange: Exchange) -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._exchange = exchange
        self._idle = sock.gettimeout()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        left = _left(self._exchange)
        self._sock.settimeout(left if self._idle is None else min(left, self._idle))
        return self._raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    def __init__(self, sock: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        exchange = _CURRENT.get()
        if exchange is not None:
            exchange.phase = "waiting for the status line and headers"
            self.fp.close()  # the plain reader made by the base class: nothing was read from it yet
            self.fp = io.BufferedReader(_DeadlineReader(sock, exchange))


class _DeadlineSend:
    """Sending (headers and body) may take what is left of the deadline, all of it and no more."""

    sock: Any

    def send(self, data: Any) -> None:
        exchange = _CURRENT.get()
        if exchange is not None:
            exchange.phase = "sending the request"
            left = _left(exchange)
            if self.sock is not None:
                self.sock.settimeout(left)
        super().send(data)  # type: ignore[misc]


class _HTTPConnection(_DeadlineSend, HTTPConnection):
    response_class = _DeadlineResponse


class _HTTPSConnection(_DeadlineSend, HTTPSConnection):
    response_class = _DeadlineResponse


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


_POOLS = {"http": _HTTPPool, "https": _HTTPSPool}


class DeadlineAdapter(HTTPAdapter):
    """A requests adapter whose responses honour ``deadline_for`` (direct and through proxies)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOLS)

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **kwargs)
        if hasattr(manager, "pool_classes_by_scheme") and not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = dict(_POOLS)
        return manager
