"""uvicorn's HTTP/1.1 protocol (h11) reporting to the gate (``skillctl.serve.gate``).

One ``GuardedH11Protocol`` is made per accepted connection. It waits at the gate from the moment
it is accepted, becomes served when h11 has parsed a request head, and waits again after each
response. Over TLS it starts the handshake itself (``loop.start_tls`` on the accepted socket)
rather than leaving it to asyncio's server, which would give every handshake 60 s of its own,
in any number, before the protocol even heard of the connection: here the handshake runs
against the same deadline and counts in the same bounds.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle
from uvicorn.server import ServerState

from skillctl.serve.gate import Gate, client_group

_TIMEOUT_BODY = b"the request head (request line and headers) did not arrive in time; send it at once\n"
REQUEST_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
                   b"content-length: %d\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY))


class GuardedH11Protocol(H11Protocol):
    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None, *, gate: Gate, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.gate = gate
        self.tls = tls
        self.client_group = ""
        self._socket: asyncio.Transport | None = None  # the accepted connection, under TLS if any
        self._early = bytearray()  # TLS: data that came with the end of the handshake, before start_tls returned
        self._lost = False
        self._handshake: asyncio.Task[None] | None = None
        self._head_of: RequestResponseCycle | None = None  # the request whose head the gate was told of

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._socket = transport
        self.client_group = client_group(transport.get_extra_info("peername"))
        self.gate.wait(self)
        if self.tls is None:
            super().connection_made(transport)
        else:
            self._handshake = self.loop.create_task(self._start_tls(transport))

    async def _start_tls(self, accepted: asyncio.Transport) -> None:
        tls = None
        try:
            tls = await self.loop.start_tls(accepted, self, self.tls, server_side=True,  # type: ignore[arg-type]
                                            ssl_handshake_timeout=self.gate.limits.header_timeout_s)
        except OSError:
            pass  # a failed handshake, or one cut at the deadline: start_tls has closed the connection
        finally:
            if tls is None or self._lost:
                self.gate.forget(self)
        if tls is None or self._lost:
            return
        super().connection_made(tls)
        if self._early:
            early, self._early = bytes(self._early), bytearray()
            super().data_received(early)

    def data_received(self, data: bytes) -> None:
        if self.transport is None:
            self._early += data
            return
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and self.cycle is not self._head_of:
            self._head_of = self.cycle
            self.gate.serve(self)

    def on_response_complete(self) -> None:
        # Waiting again before h11 looks at what the client sent meanwhile: a pipelined head
        # already there makes the connection served again at once.
        if not self.transport.is_closing():
            self.gate.wait(self)
        super().on_response_complete()

    def give_up(self) -> None:
        if self.transport is None:  # still in the TLS handshake (or about to start it): nothing to say yet
            assert self._socket is not None and self._handshake is not None
            self._handshake.cancel()
            self._socket.abort()
            return
        if self.transport.is_closing():  # already closing (uvicorn's keep-alive timeout), maybe still sending
            return
        if self.tls is not None:
            # No TLS goodbye: asyncio would wait up to 30 s for the client's, with the
            # connection outside the gate's bounds meanwhile.
            self.transport.abort()
            return
        if self.conn.trailing_data[0]:  # part of a head came: say why the connection ends
            self.transport.write(REQUEST_TIMEOUT)
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self.gate.forget(self)
        if self.transport is not None:
            super().connection_lost(exc)
