"""The HTTP plumbing both API shapes share: keys, request bodies within their caps, the access
log, and turning any failure into the shape's error body.

Request bodies are capped while they are read, never after: a declared ``Content-Length`` over
the cap is refused before a byte of the body is read, and a body without one (chunked) is
counted as it arrives and refused the moment it passes the cap. They are paced too
(``BodyPace``): a body that stalls, or trickles slower than the minimum rate, is answered 408
and its connection closed, so it holds an upload slot for a bounded time only.

Every field of every log line is escaped (``skillctl.serve.logsafe``).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Protocol

from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillctl.errors import ConfigError, SkillctlError
from skillctl.nesting import NestingError, loads_json
from skillctl.serve.errors import ApiError, bad_request, from_library
from skillctl.serve.keys import READ, KeyRing
from skillctl.serve.logsafe import escape_logs
from skillctl.serve.upload import Upload

log = logging.getLogger("skillctl.serve")
access_log = logging.getLogger("skillctl.serve.access")
escape_logs(log.name, access_log.name)

# The multipart field names the SDKs use for files: ``files[]`` for a list (directory upload),
# ``files`` for one file (a zip); ``files[N]`` is the other array style their encoders know.
FILE_FIELDS = ("files", "files[]")
MAX_FIELD_BYTES = 64 * 1024  # a form field that is not a file (display_name, default)
MAX_JSON_BYTES = 64 * 1024


class Shape(Protocol):
    """How one API family words errors and names its request-id header."""

    request_id_header: str

    def error(self, err: ApiError, request_id: str) -> Response: ...


# ---------------------------------------------------------------------------- keys


@dataclass(frozen=True)
class Access:
    """Who may do what. ``keys`` None: no keys file (then only ``public_read`` reads work)."""

    keys: KeyRing | None
    public_read: bool

    def check(self, request: Request, scope: str) -> str | None:
        """The name of the key that allows ``scope``, or None for an anonymous public read."""
        if scope == READ and self.public_read:
            return None  # reads are open; a key sent along (SDKs insist on one) is not looked at
        presented = presented_key(request)
        if presented is None:
            raise ApiError(401, "no API key: send one as 'Authorization: Bearer KEY' or 'x-api-key: KEY'", code="missing_api_key")
        if self.keys is None:
            raise ApiError(401, "this server takes no keys: it only serves reads (--public-read)", code="invalid_api_key")
        try:
            key = self.keys.authenticate(presented)
        except ConfigError as exc:
            log.error("refusing every key: %s", exc)
            raise ApiError(500, "the server cannot read its keys file; ask its operator to fix it") from None
        if key is None:
            raise ApiError(401, "invalid API key (revoked, mistyped, or for another server)", code="invalid_api_key")
        if scope not in key.scopes:
            has = ", ".join(sorted(key.scopes))
            raise ApiError(403, f"the key '{key.name}' may not {scope} (its scopes: {has}); use a key with the '{scope}' scope",
                           code="insufficient_scope")
        return key.name


def presented_key(request: Request) -> str | None:
    """The key in ``Authorization: Bearer`` (what the SDKs send) or ``x-api-key`` (what older
    Anthropic SDKs and curl examples send). Two different keys at once are refused."""
    bearer = None
    auth = request.headers.get("authorization")
    if auth is not None:
        scheme, _, value = auth.strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise ApiError(401, "the Authorization header must be 'Bearer KEY'", code="invalid_api_key")
        bearer = value.strip()
    header = request.headers.get("x-api-key")
    header = header.strip() if header is not None else None
    if bearer is not None and header is not None and bearer != header:
        raise ApiError(401, "two different keys (Authorization and x-api-key); send one", code="invalid_api_key")
    return bearer if bearer is not None else header


# ---------------------------------------------------------------------------- bodies


@dataclass(frozen=True)
class BodyPace:
    """How slowly a request body may arrive: it may stall for up to ``timeout_s`` seconds, and
    each byte buys ``1 / min_rate`` s more, never more than ``timeout_s`` ahead (a leaky bucket:
    a body sent at ``min_rate`` or faster, however long, is never cut; a stall is cut after
    ``timeout_s``; a trickle below the rate a little later)."""

    timeout_s: float = 30.0
    min_rate: int = 8 * 1024  # bytes per second


class BodyTooLarge(Exception):
    pass


class BodyStalled(Exception):
    def __init__(self, seen: int, elapsed_s: float) -> None:
        super().__init__(seen, elapsed_s)
        self.seen, self.elapsed_s = seen, elapsed_s


def _too_large(limit: int) -> ApiError:
    return ApiError(413, f"request body over the server's limit of {limit} bytes; upload a smaller skill", code="request_too_large")


def _stalled(request: Request, stall: BodyStalled, pace: BodyPace) -> ApiError:
    log.warning("request body stalled: %s %s from key %s, %d bytes in %.1fs; answered 408 and closed", request.method,
                request.url.path, getattr(request.state, "key", None) or "-", stall.seen, stall.elapsed_s)
    return ApiError(408, f"the request body stalled ({stall.seen} bytes in {stall.elapsed_s:.1f}s): this server waits "
                         f"{pace.timeout_s:g}s at most and takes bodies at {pace.min_rate} bytes/s or faster; send it again",
                    code="request_timeout")


def _capped(request: Request, limit: int, pace: BodyPace) -> Request:
    """``request`` whose body reading stops with BodyTooLarge past ``limit`` bytes, and with
    BodyStalled when it falls behind ``pace``; one with a declared length over the limit is
    refused before anything is read."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise _too_large(limit)
        except ValueError:
            raise bad_request("Content-Length is not a number") from None
    seen = 0
    done = False
    receive = request.receive
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + pace.timeout_s

    async def counted() -> Message:
        nonlocal seen, done, deadline
        if done:
            return await receive()
        try:
            async with asyncio.timeout_at(deadline):
                message = await receive()
        except TimeoutError:
            raise BodyStalled(seen, loop.time() - started) from None
        if message["type"] == "http.request":
            size = len(message.get("body", b""))
            seen += size
            if seen > limit:
                raise BodyTooLarge
            deadline = min(deadline + size / pace.min_rate, loop.time() + pace.timeout_s)
            done = not message.get("more_body", False)
        return message

    return Request(request.scope, counted)


async def read_upload(request: Request, limit: int, max_files: int, pace: BodyPace) -> tuple[Upload, dict[str, str]]:
    """The files and the other fields of a multipart upload, within ``limit`` bytes, at ``pace``."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "multipart/form-data":
        raise bad_request(f"send the skill as multipart/form-data (got {kind or 'no content type'})")
    capped = _capped(request, limit, pace)
    try:
        form = await capped.form(max_files=max_files, max_fields=16, max_part_size=MAX_FIELD_BYTES)
    except BodyTooLarge:
        raise _too_large(limit) from None
    except BodyStalled as stall:
        raise _stalled(request, stall, pace) from None
    except HTTPException as exc:  # the multipart parser's own refusals (too many parts, bad framing)
        raise bad_request(f"malformed upload: {exc.detail}") from None
    files: list[tuple[str, bytes]] = []
    fields: dict[str, str] = {}
    try:
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                if key not in FILE_FIELDS and not (key.startswith("files[") and key.endswith("]")):
                    raise bad_request(f"unexpected file field {key!r}; files go in 'files[]' (or one zip in 'files')", param=key)
                files.append((value.filename or "", await value.read()))
            elif key in fields:
                raise bad_request(f"the field {key!r} is given twice", param=key)
            else:
                fields[key] = value
    finally:
        await form.close()
    return Upload(files), fields


async def read_json(request: Request, pace: BodyPace) -> dict[str, Any]:
    capped = _capped(request, MAX_JSON_BYTES, pace)
    try:
        body = await capped.body()
    except BodyTooLarge:
        raise _too_large(MAX_JSON_BYTES) from None
    except BodyStalled as stall:
        raise _stalled(request, stall, pace) from None
    try:
        doc = loads_json(body or b"{}")
    except NestingError as exc:
        raise bad_request(f"the request body is {exc.problem}") from None
    except ValueError:
        raise bad_request("the request body is not JSON") from None
    if not isinstance(doc, dict):
        raise bad_request("the request body must be a JSON object")
    return doc


def only_fields(fields: dict[str, str], *allowed: str) -> None:
    """Refuse form fields the endpoint does not take (a typo must not pass for an option)."""
    extra = sorted(set(fields) - set(allowed))
    if extra:
        raise bad_request(f"unexpected form field(s): {', '.join(extra)}", param=extra[0])


def form_flag(fields: dict[str, str], name: str) -> bool | None:
    """A boolean form field as the SDKs encode it ("true"/"false"); None when absent."""
    value = fields.get(name)
    if value is None:
        return None
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise bad_request(f"{name} must be true or false, got {value!r}", param=name)


def int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"{name} must be an integer from {low} to {high}, got {raw!r}", param=name) from None
    if not low <= value <= high:
        raise bad_request(f"{name} must be from {low} to {high}, got {value}", param=name)
    return value


# ---------------------------------------------------------------------------- endpoints


Handler = Callable[[Request], Awaitable[Response]]


def endpoint(shape: Shape, access: Access, scope: str, handler: Handler) -> Handler:
    """``handler`` behind the key check, with every failure as ``shape``'s error body and a
    request id on every answer."""

    async def run(request: Request) -> Response:
        request_id = "req_" + secrets.token_hex(12)
        try:
            request.state.key = access.check(request, scope)
            response = await handler(request)
        except ApiError as err:
            response = shape.error(err, request_id)
            if err.status == 408:  # the rest of the body will not be read: the connection can carry no other request
                response.headers["connection"] = "close"
        except SkillctlError as exc:
            response = shape.error(from_library(exc), request_id)
        except Exception:
            log.exception("request %s (%s %s) failed", request_id, request.method, request.url.path)
            response = shape.error(ApiError(500, f"internal error; the server log has the details (request {request_id})"), request_id)
        response.headers[shape.request_id_header] = request_id
        return response

    return run


def not_routed(shape: Shape) -> Handler:
    async def run(request: Request) -> Response:
        return shape.error(ApiError(404, f"no endpoint {request.method} {request.url.path}"), "req_" + secrets.token_hex(12))

    return run


class AccessLog:
    """One line per request on the ``skillctl.serve.access`` logger: client, key name (never
    the key), request line, status, bytes sent, time taken."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status, sent = 0, 0

        async def watched(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            client = scope.get("client")
            who = f"{client[0]}:{client[1]}" if client else "-"
            key = (scope.get("state") or {}).get("key") or "-"
            query = scope.get("query_string", b"").decode("latin-1")
            target = scope.get("path", "") + (f"?{query}" if query else "")
            access_log.info('%s key=%s "%s %s HTTP/%s" %d %d %.1fms', who, key, scope.get("method"), target,
                            scope.get("http_version", "1.1"), status, sent, (time.perf_counter() - started) * 1000)
