"""HTTP/1 trailers through mitmproxy, which passes them on HTTP/2 and HTTP/3 but not HTTP/1:
its HTTP/1 reader raises ``NotImplementedError("HTTP trailers are not implemented yet.")`` on a
chunked body that ends with trailer fields, and the flow dies with the body cut short (the
client reports an incomplete chunked read). Its HTTP layer already carries trailers between
the two sides (``RequestTrailers``/``ResponseTrailers`` events, ``Message.trailers``); only the
HTTP/1 reader and writers lack them. ``install`` adds them there, and nothing else:

- reading: the body reader for chunked bodies keeps the trailer fields aside and ends the
  message without them; when the connection then reports the end of the message, the trailers
  event is reported first — what the HTTP/2 layer does;
- writing: a trailers event on a chunked message becomes the last chunk followed by the
  fields, and the end of the message then writes nothing more. A message sent unchunked cannot
  carry trailers; they are dropped there (RFC 9110 §6.5.1 lets a recipient discard them).

Runs in the proxy process only (it imports mitmproxy). The addon scrubs and injects in
``Message.trailers`` like in headers.
"""

from __future__ import annotations

from typing import Any, Callable, Generator

import h11
from mitmproxy import http
from mitmproxy.proxy.layers.http import _http1
from mitmproxy.proxy.layers.http._base import ReceiveHttp
from mitmproxy.proxy.layers.http._events import (
    RequestEndOfMessage,
    RequestTrailers,
    ResponseEndOfMessage,
    ResponseTrailers,
)
from mitmproxy.proxy import commands

_INSTALLED = "_skillctl_trailers"


class _TrailerKeepingReader(_http1.ChunkedReader):  # type: ignore[misc]
    """h11's chunked reader, handing over its trailer fields instead of ending with them."""

    trailers: list[tuple[bytes, bytes]] | None = None

    def __call__(self, buf: Any) -> Any:
        event = super().__call__(buf)
        if isinstance(event, h11.EndOfMessage) and event.headers:
            items = event.headers.raw_items() if hasattr(event.headers, "raw_items") else list(event.headers)
            self.trailers = [(bytes(k), bytes(v)) for k, v in items]
            return h11.EndOfMessage()
        return event


def _wrap_read_body(read_body: Callable[..., Generator[Any, Any, Any]]) -> Callable[..., Generator[Any, Any, Any]]:
    def wrapped(self: Any, event: Any) -> Generator[Any, Any, Any]:
        inner = read_body(self, event)
        sent: Any = None
        while True:
            try:
                command = inner.send(sent)
            except StopIteration as stop:
                return stop.value
            if isinstance(command, ReceiveHttp) and isinstance(command.event, (RequestEndOfMessage, ResponseEndOfMessage)):
                trailers = getattr(self.body_reader, "trailers", None)
                if trailers:
                    self.body_reader.trailers = None
                    kind = RequestTrailers if isinstance(command.event, RequestEndOfMessage) else ResponseTrailers
                    yield ReceiveHttp(kind(command.event.stream_id, http.Headers(trailers)))
            sent = yield command

    return wrapped


def _wrap_send(send: Callable[..., Generator[Any, Any, Any]], trailers_event: type, end_event: type,
               message: str) -> Callable[..., Generator[Any, Any, Any]]:
    """``message`` names the attribute (``request``/``response``) holding the message sent."""

    def wrapped(self: Any, event: Any) -> Generator[Any, Any, Any]:
        if isinstance(event, trailers_event):
            sent_message = getattr(self, message)
            if sent_message is not None and "chunked" in sent_message.headers.get("transfer-encoding", "").lower():
                fields = b"".join(k + b": " + v + b"\r\n" for k, v in event.trailers.fields)
                yield commands.SendData(self.conn, b"0\r\n" + fields + b"\r\n")
                setattr(self, _INSTALLED, True)  # the last chunk is written: the end adds nothing
            return
        if isinstance(event, end_event) and getattr(self, _INSTALLED, False):
            setattr(self, _INSTALLED, False)
            yield from self.mark_done(**{message: True})
            return
        yield from send(self, event)

    return wrapped


def install() -> None:
    """Teach mitmproxy's HTTP/1 layer trailers (idempotent)."""
    if getattr(_http1, _INSTALLED, False):
        return
    _http1.ChunkedReader = _TrailerKeepingReader
    _http1.Http1Connection.read_body = _wrap_read_body(_http1.Http1Connection.read_body)
    _http1.Http1Server.send = _wrap_send(_http1.Http1Server.send, ResponseTrailers, ResponseEndOfMessage, "response")
    _http1.Http1Client.send = _wrap_send(_http1.Http1Client.send, RequestTrailers, RequestEndOfMessage, "request")
    setattr(_http1, _INSTALLED, True)
