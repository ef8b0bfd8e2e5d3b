"""The mitmproxy addon that enforces a run's network policy (runs in the proxy process only).

Per request, in mitmproxy's hook order:

- ``http_connect``: a CONNECT to a host outside ``allowed_domains`` is answered 403.
- ``requestheaders``: the host is checked again (plain HTTP has no CONNECT), a ``Host`` header
  naming another host is refused, and the upstream address is chosen *now*: the
  ``--egress-resolve`` mapping, or DNS — refusing loopback, link-local and private answers —
  and the address that passed is the one ``server_connect`` dials (no second lookup a
  rebinding DNS could answer differently). Placeholders of the secrets bound to this host are
  replaced in headers and URL — only in HTTPS requests, whose upstream TLS is verified for
  that host name (the upstream SNI is always the request's host, never a name the client
  chose); placeholders of other secrets, and of any secret in plain HTTP, are left and reported.
- ``tls_clienthello``: a client whose TLS server name (SNI) differs from its CONNECT host is
  noted, and every request on that connection refused.
- ``request`` (buffered bodies) or a stream callback (large bodies): the same in the body.
- ``responseheaders``/``response``: every real value is replaced by its placeholder — in the
  reason phrase, header names and values, body and trailers, plain or encoded the ways APIs
  echo values back (``rules.Replacements.scrubbing``). Identity-encoded bodies stream through a
  ``Rewriter``; their length may change, so they are re-framed chunked. Compressed bodies are
  buffered, decoded, scrubbed, re-encoded.
- ``tcp_start``: anything that is not HTTP(S) is refused.

Each request ends as one record passed to ``emit``, built from the request as the container
sent it (placeholders, never real values) and scrubbed field by field all the same.
"""

from __future__ import annotations

import base64
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from mitmproxy import http
from mitmproxy.net.http import url
from mitmproxy.net.http.http1 import expected_http_body_size

from skillctl.egress.dial import vet_upstream
from skillctl.egress.rules import (
    LOOPBACK_ONLY_ENV,
    Replacements,
    Rewriter,
    egress_record,
    now_iso,
    first_match,
    guard_refusal,
    normalize_host,
    redact_query,
)

# Request bodies up to this size are buffered (Content-Length stays exact); larger ones stream.
STREAM_REQUEST_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Secret:
    name: str
    domains: tuple[str, ...]
    placeholder: bytes
    value: bytes


@dataclass
class FlowState:
    """What the log record of one request needs, gathered across hooks."""

    decision: str = "allowed"
    reason: str = ""
    upstream: str | None = None
    sent_path: str | None = None  # the path as the container sent it, before any injection
    injected: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    request_bytes: int = 0
    response_bytes: int = 0


def _stream(fn: Callable[[bytes], bytes], count: Callable[[int], None]) -> Callable[[bytes], list[bytes]]:
    """A mitmproxy stream callback: never yields an empty chunk (HTTP/1 would frame it as the
    terminating ``0\\r\\n\\r\\n``)."""

    def callback(chunk: bytes) -> list[bytes]:
        count(len(chunk))
        out = fn(chunk)
        return [out] if out else []

    return callback


def _rechunk(message: http.Message) -> None:
    """The body's length will change while streaming: frame it chunked instead."""
    message.headers.pop("content-length", None)
    message.headers["transfer-encoding"] = "chunked"


_BASIC = re.compile(rb"^(\s*basic\s+)([A-Za-z0-9+/=]+)(\s*)$", re.IGNORECASE)
_CREDENTIAL_HEADERS = (b"authorization", b"proxy-authorization")


def _inject_header(name: bytes, value: bytes, rewriter: Rewriter) -> bytes:
    """A header with placeholders replaced; also inside Basic credentials, which carry them
    base64-encoded (``git`` and ``curl -u user:$TOKEN`` send a token as the password)."""
    m = _BASIC.match(value) if name.lower() in _CREDENTIAL_HEADERS else None
    if m is not None:
        try:
            decoded = base64.b64decode(m.group(2), validate=True)
        except ValueError:
            return rewriter.replace(value)
        replaced = rewriter.replace(decoded)
        if replaced != decoded:
            return m.group(1) + base64.b64encode(replaced) + m.group(3)
    return rewriter.replace(value)


# mitmproxy's error text when the client closes its connection during a flow.
CLIENT_HUNG_UP = "Client disconnected"


class EgressAddon:
    def __init__(self, config: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> None:
        self.allowed: list[str] = list(config["allowed_domains"])
        self.policy_text: str = config.get("policy", "the run's network policy")
        self.resolve_map = {normalize_host(h): (a, int(p)) for h, (a, p) in config.get("resolve", {}).items()}
        self.secrets = [
            Secret(s["name"], tuple(s["domains"]), s["placeholder"].encode(), s["value"].encode())
            for s in config.get("secrets", [])
        ]
        # Real values → placeholders, in every form a response can carry them (compiled once).
        self.scrub_table = Replacements.scrubbing({s.value: s.placeholder for s in self.secrets})
        self.scrubbing = bool(self.secrets)
        self._inject_tables: dict[tuple[str, bool], tuple[Replacements, frozenset[bytes]]] = {}
        # Client connections whose TLS server name differs from their CONNECT host: id -> why.
        self._sni_refusals: dict[str, str] = {}
        self.loopback_only = bool(os.environ.get(LOOPBACK_ONLY_ENV))
        self._out = emit
        self._vetted: dict[tuple[str, str, int], tuple[str, int]] = {}
        self._dialling: dict[str, tuple[str, int]] = {}  # server connection id -> the name it stands for
        # Requests whose record is not written yet. A streamed response's ``response`` hook (which
        # writes the record) runs after its last byte went to the client, so a command can end
        # before its request's record exists; a sync waits for these (see ``proxy_main``).
        self.open_flows: set[str] = set()

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _state(flow: http.HTTPFlow) -> FlowState:
        return flow.metadata.setdefault("skillctl", FlowState())

    def _deny(self, flow: http.HTTPFlow, reason: str) -> None:
        state = self._state(flow)
        state.decision, state.reason = "denied", reason
        body = (
            f"skillctl egress proxy: request refused by {self.policy_text}: {reason}.\n"
            f"Allowed domains: {', '.join(self.allowed) or 'none'}.\n"
        )
        flow.response = http.Response.make(
            403, body, {"content-type": "text/plain; charset=utf-8", "x-skillctl-egress": "denied"}
        )

    def emit(self, record: dict[str, Any]) -> None:
        """Hand a record on with every text in it scrubbed: records are built from what the
        container sent, but a real value could still come in through an error message."""
        scrub = Rewriter(self.scrub_table)

        def clean(value: Any) -> Any:
            if isinstance(value, str):
                return scrub.replace_text(value)
            if isinstance(value, list):
                return [clean(v) for v in value]
            return value

        self._out({k: clean(v) for k, v in record.items()})

    def _record(self, flow: http.HTTPFlow, *, error: str | None = None) -> None:
        state = self._state(flow)
        req = flow.request
        path = state.sent_path if state.sent_path is not None else req.path
        self.emit(
            egress_record(
                method=req.method,
                scheme=req.scheme,
                host=normalize_host(req.host),
                port=req.port,
                path="" if req.method == "CONNECT" else redact_query(path),
                status=flow.response.status_code if flow.response is not None else None,
                request_bytes=state.request_bytes,
                response_bytes=state.response_bytes,
                duration_ms=round((time.time() - req.timestamp_start) * 1000, 1) if req.timestamp_start else None,
                decision=state.decision,
                reason=state.reason,
                upstream=state.upstream,
                secrets=sorted(state.injected),
                warnings=state.warnings,
                error=error,
            )
        )
        self.open_flows.discard(flow.id)  # after the record is queued: a sync then follows it

    def _request_rewriter(self, flow: http.HTTPFlow) -> tuple[Rewriter, frozenset[bytes]]:
        """Placeholders of this host's secrets → real values, if the request goes upstream over
        TLS (``server_connect`` makes mitmproxy verify that for the request's host name); every
        other placeholder maps to itself, so it is only noticed."""
        host, tls = normalize_host(flow.request.host), flow.request.scheme == "https"
        key = (host, tls)
        if key not in self._inject_tables:
            if len(self._inject_tables) >= 1024:  # a run visiting endless subdomains
                self._inject_tables.clear()
            mine = frozenset(s.placeholder for s in self.secrets if tls and first_match(s.domains, host))
            mapping = {s.placeholder: (s.value if s.placeholder in mine else s.placeholder) for s in self.secrets}
            self._inject_tables[key] = (Replacements.literal(mapping), mine)
        table, mine = self._inject_tables[key]
        return Rewriter(table), mine

    def _settle(self, flow: http.HTTPFlow, rewriter: Rewriter, mine: frozenset[bytes]) -> None:
        """Turn what a request rewriter found into the record's secret names and warnings."""
        state = self._state(flow)
        host = normalize_host(flow.request.host)
        for s in self.secrets:
            if s.placeholder not in rewriter.found:
                continue
            if s.placeholder in mine:
                state.injected.add(s.name)
                continue
            if first_match(s.domains, host):
                warning = (f"placeholder of {s.name} not injected: plain HTTP to {host}; "
                           "secrets go only into HTTPS requests (use https://)")
            else:
                warning = f"placeholder of {s.name} sent to {host}, which is not its domain; left as is"
            if warning not in state.warnings:
                state.warnings.append(warning)

    async def _vet(self, host: str, port: int) -> tuple[tuple[str, int] | None, str]:
        return await vet_upstream(host, port, self.resolve_map, loopback_only=self.loopback_only)

    # ------------------------------------------------------------------ hooks

    def http_connect(self, flow: http.HTTPFlow) -> None:
        host = normalize_host(flow.request.host)
        if first_match(self.allowed, host) is None:
            self._deny(flow, f"{host} is not in allowed_domains")
            self._record(flow)

    async def requestheaders(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None:
            return
        self.open_flows.add(flow.id)
        req = flow.request
        host, port = normalize_host(req.host), req.port
        self._state(flow).sent_path = req.path
        refusal = self._sni_refusals.get(flow.client_conn.id)
        if refusal is not None:
            self._deny(flow, refusal)
            return
        pattern = first_match(self.allowed, host)
        if pattern is None:
            self._deny(flow, f"{host} is not in allowed_domains")
            return
        if req.host_header:
            named, _ = url.parse_authority(req.host_header, check=False)
            if normalize_host(named) != host:
                self._deny(flow, f"the Host header names {normalize_host(named)}, but the request goes to {host}")
                return
        address, why = await self._vet(host, port)
        if address is None:
            self._deny(flow, why)
            return
        state = self._state(flow)
        state.upstream = f"{address[0]}:{address[1]}"
        state.reason = f"matches {pattern}" + (f"; {why}" if why else "")
        self._vetted[(flow.client_conn.id, host, port)] = address

        rewriter, mine = self._request_rewriter(flow)
        req.headers.fields = tuple((k, _inject_header(k, v, rewriter)) for k, v in req.headers.fields)
        req.data.path = rewriter.replace(req.data.path)
        if self.scrubbing:
            # A compressed response could only be scrubbed after buffering it whole.
            req.headers["accept-encoding"] = "identity"
        try:
            size = expected_http_body_size(req)
        except ValueError:
            size = None
        if size is not None and size > STREAM_REQUEST_BYTES:
            if mine:
                _rechunk(req)

            def count(n: int) -> None:
                state.request_bytes += n

            req.stream = _stream(rewriter, count)
            flow.metadata["skillctl.rewriter"] = (rewriter, mine)
        else:
            self._settle(flow, rewriter, mine)

    def request(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None or self._state(flow).decision == "denied":
            return
        req = flow.request
        if req.stream:
            return
        rewriter, mine = self._request_rewriter(flow)
        content = req.get_content(strict=False) or b""
        state = self._state(flow)
        state.request_bytes = len(req.raw_content or b"")
        replaced = rewriter.replace(content)
        if replaced != content:
            req.set_content(replaced)
        if req.trailers:
            req.trailers.fields = tuple((k, rewriter.replace(v)) for k, v in req.trailers.fields)
        self._settle(flow, rewriter, mine)

    def server_connect(self, data: Any) -> None:
        host, port = normalize_host(data.server.address[0]), data.server.address[1]
        address = self._vetted.get((data.client.id, host, port))
        if address is None:
            data.server.error = f"skillctl egress: no vetted address for {host}:{port}"
            return
        if self.loopback_only and (why := guard_refusal(address[0])):
            data.server.error = why
            return
        if data.server.tls:
            # Upstream TLS names — and is verified for — the host the request was vetted for:
            # never a name the client chose in its own ClientHello (a CDN routes by SNI).
            data.server.sni = host
        # mitmproxy dials whatever address the connection holds; it gets the name back once
        # connected (``server_connected``), because reuse of kept-alive connections matches on
        # it: left as the address, every request opened a new connection, and the sixth waited
        # forever for mitmproxy's cap of five connections per address.
        self._dialling[data.server.id] = data.server.address
        data.server.address = address

    def server_connected(self, data: Any) -> None:
        named = self._dialling.pop(data.server.id, None)
        if named is not None:
            # Server refuses a new address once open (an addon would expect it to re-route);
            # this only puts back the name the connection was opened for.
            object.__setattr__(data.server, "address", named)

    def server_connect_error(self, data: Any) -> None:
        self._dialling.pop(data.server.id, None)

    def client_disconnected(self, client: Any) -> None:
        for key in [k for k in self._vetted if k[0] == client.id]:
            del self._vetted[key]
        self._sni_refusals.pop(client.id, None)

    def tls_clienthello(self, data: Any) -> None:
        """A tunnel's TLS must name the host its CONNECT named: otherwise the policy would have
        checked one name while the client speaks to another."""
        sni, target = data.client_hello.sni, data.context.server.address
        if not sni or target is None:
            return
        connect_host = normalize_host(str(target[0]))
        if normalize_host(sni) != connect_host:
            self._sni_refusals[data.context.client.id] = (
                f"the TLS server name (SNI) {normalize_host(sni)} differs from the CONNECT host {connect_host}")

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        state = self._state(flow)
        resp = flow.response
        if resp is None or state.decision == "denied":
            return
        if "skillctl.rewriter" in flow.metadata:
            self._settle(flow, *flow.metadata.pop("skillctl.rewriter"))
        scrub = Rewriter(self.scrub_table)
        if self.scrubbing:
            resp.data.reason = scrub.replace(resp.data.reason)
            resp.headers.fields = tuple((scrub.replace(k), scrub.replace(v)) for k, v in resp.headers.fields)
        try:
            size = expected_http_body_size(flow.request, resp)
        except ValueError:
            size = None
        if size == 0:
            return
        encoded = resp.headers.get("content-encoding", "identity").lower() not in ("", "identity")
        if self.scrubbing and (encoded or flow.request.http_version == "HTTP/1.0"):
            return  # buffered: decoded and scrubbed whole in `response` (HTTP/1.0 cannot be chunked)
        if self.scrubbing:
            _rechunk(resp)

        def count(n: int) -> None:
            state.response_bytes += n

        resp.stream = _stream(scrub, count)

    def response(self, flow: http.HTTPFlow) -> None:
        state = self._state(flow)
        resp = flow.response
        if resp is not None and state.decision != "denied" and not resp.stream:
            state.response_bytes = len(resp.raw_content or b"")
            if self.scrubbing:
                content = resp.get_content(strict=False) or b""
                scrubbed = Rewriter(self.scrub_table).replace(content)
                if scrubbed != content:
                    resp.set_content(scrubbed)
        if resp is not None and resp.trailers and self.scrubbing:
            scrub = Rewriter(self.scrub_table)
            resp.trailers.fields = tuple((scrub.replace(k), scrub.replace(v)) for k, v in resp.trailers.fields)
        self._record(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        message = flow.error.msg if flow.error else "unknown error"
        if flow.response is not None and message.startswith(CLIENT_HUNG_UP):
            # The upstream answered and the answer was being passed on when the client went away
            # (a script that reads the status and exits): an allowed, served request, not a failure.
            state = self._state(flow)
            if state.decision != "denied":
                state.reason += "; the client closed the connection before the end of the response"
                self._record(flow)
                return
        self._record(flow, error=message)

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        message = flow.websocket.messages[-1] if flow.websocket else None
        if message is None:
            return
        if message.from_client:
            rewriter, mine = self._request_rewriter(flow)
            message.content = rewriter.replace(message.content)
            self._settle(flow, rewriter, mine)
        else:
            message.content = Rewriter(self.scrub_table).replace(message.content)

    def tcp_start(self, flow: Any) -> None:
        # Raw TCP inside an allowed CONNECT would bypass every check above.
        flow.kill()
        host, port = flow.server_conn.address or ("?", 0)
        reason = "only HTTP and HTTPS are proxied; this connection carried something else"
        self.emit(egress_record(method="TCP", scheme="tcp", host=normalize_host(str(host)), port=port, decision="denied", reason=reason))

    def tls_failed_client(self, data: Any) -> None:
        sni = data.context.client.sni or "?"
        self.emit(
            {
                "type": "egress_tls_error",
                "time": now_iso(),
                "host": sni,
                "error": f"the client refused the proxy's certificate for {sni}: {data.conn.error or 'handshake failed'} "
                "(does the tool trust SSL_CERT_FILE?)",
            }
        )
