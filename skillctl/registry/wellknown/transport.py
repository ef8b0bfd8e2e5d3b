"""HTTP for well-known sites: one GET at a time, each bounded in time, size and redirects.

Any web server or CDN may be a skill site, so every answer is treated as hostile:

- **a total deadline per exchange** (redirects, retries and the whole body included). The exchange
  runs in a worker thread and the caller stops waiting when the deadline passes, so a server that
  trickles its headers or body one byte at a time cannot hold the caller longer; the worker is
  told to stop and its connection is closed;
- **size caps while streaming**: a ``Content-Length`` over the cap is refused before a byte of
  the body is read, and a body without one is cut off as soon as it passes the cap;
- **bounded redirects**: at most ``max_redirects`` hops, a loop is named as one, only http(s)
  targets, and never from https down to plain http unless plain http was allowed (``insecure``);
- **no decoding surprises**: ``Accept-Encoding: identity`` is asked for and the raw bytes are
  read; a server that compresses anyway (``Content-Encoding: gzip``) is decoded here, bounded by
  the same cap, so a compression bomb costs one chunk;
- **retries** only where nothing can have changed: a connection that was never made, or a
  429/502/503/504 answer, a few times with a short backoff inside the deadline;
- every failure is one line naming the URL and saying what to do.

TLS certificates are always verified (a private CA through ``REQUESTS_CA_BUNDLE`` or ``ca_bundle``);
plain ``http://`` URLs are refused unless ``insecure`` is set.

Credentials: a site's key (``SiteKey``) goes as ``Authorization: Bearer KEY`` to the site's own
origin (scheme, host and port) and nowhere else: not to a redirect target on another origin, not
to an artifact URL on another host, not to an index a lock names elsewhere. Each request is sent
with an explicit auth hook, so requests' own sources (``~/.netrc``, ``user:password@`` in a URL)
never add one either. 401 and 403 are one line saying whether a key is missing or refused and
how to give one; the key itself is never part of a message.
"""

from __future__ import annotations

import http.client
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
import requests.auth
import urllib3

from skillctl import __version__
from skillctl.errors import RegistryError
from skillctl.registry.netfail import REDIRECT_STATUS, RETRY_STATUS, is_unsent, reason

CHUNK = 64 * 1024


@dataclass(frozen=True)
class Answer:
    """What a GET ended with after redirects: 200 with a body, 304 (not modified) or 404."""

    url: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    encoding: str = ""  # a Content-Encoding the server applied anyway; ``body`` is still encoded
    keyed: bool = False  # the site's key went with a request of this exchange


_DEFAULT_PORTS = {"http": 80, "https": 443}
KEY_HINT = "give one with --token-stdin or SKILLCTL_SITE_TOKEN"


def origin_of(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of ``url``, the unit a key is bound to; None when it has none."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        return None
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme]


@dataclass(frozen=True)
class SiteKey:
    """The key of one site: sent to ``origin`` alone. ``token`` stays out of ``repr`` so that
    no traceback or debug print shows it."""

    site: str  # scheme://host[:port], for messages
    token: str = field(repr=False)

    @property
    def origin(self) -> tuple[str, str, int] | None:
        return origin_of(self.site)

    def applies_to(self, url: str) -> bool:
        return self.origin is not None and origin_of(url) == self.origin


class _Bearer(requests.auth.AuthBase):
    """What requests puts in ``Authorization``: the key, or (token None) nothing. Being an auth
    hook at all keeps requests from filling the header from ~/.netrc or the URL's user info."""

    def __init__(self, token: str | None) -> None:
        self._token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers.pop("Authorization", None)
        if self._token is not None:
            request.headers["Authorization"] = f"Bearer {self._token}"
        return request


_NO_AUTH = _Bearer(None)


def inflate_capped(body: bytes, encoding: str, cap: int, what: str) -> bytes:
    """Undo a Content-Encoding a server applied although identity was asked for, stopping as
    soon as the output passes ``cap``."""
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}.get(encoding)
    if wbits is None:
        raise RegistryError(f"{what}: the server sent Content-Encoding {encoding!r}, which skillctl does not decode; serve it uncompressed")
    inflater = zlib.decompressobj(wbits)
    out = bytearray()
    pending: bytes = body
    try:
        while pending or not inflater.eof:
            chunk = inflater.decompress(pending, CHUNK)
            pending = inflater.unconsumed_tail
            out += chunk
            if len(out) > cap:
                raise RegistryError(f"{what}: decompresses to more than {cap} bytes; refusing it")
            if not chunk and not pending:
                break
    except zlib.error as exc:
        raise RegistryError(f"{what}: its {encoding} encoding is corrupt ({exc})") from None
    if not inflater.eof:
        raise RegistryError(f"{what}: its {encoding} encoding is truncated")
    return bytes(out)


class HttpClient:
    """GETs against well-known sites (see the module docstring for the rules)."""

    def __init__(
        self,
        *,
        insecure: bool = False,
        ca_bundle: str | None = None,
        deadline_s: float = 60.0,
        connect_timeout_s: float = 10.0,
        max_redirects: int = 5,
        attempts: int = 3,
        backoff_s: float = 0.2,
        key: SiteKey | None = None,
        site: str = "",
    ) -> None:
        """``key``: sent to its site's origin only; ``site`` (scheme://host[:port]) names the
        site in 401/403 messages when there is no key."""
        self.insecure = insecure
        self.key = key
        self.site = key.site if key is not None else site
        self.verify: bool | str = ca_bundle or True
        self.deadline_s = deadline_s
        self.connect_timeout_s = connect_timeout_s
        self.max_redirects = max_redirects
        self.attempts = max(1, attempts)
        self.backoff_s = backoff_s
        self.session = requests.Session()
        self.session.headers["User-Agent"] = f"skillctl/{__version__}"
        self.session.headers["Accept-Encoding"] = "identity"
        self.requests = 0  # for tests and benchmarks: how many requests went out

    def close(self) -> None:
        self.session.close()

    def check_url(self, url: str, what: str) -> None:
        scheme = urlsplit(url).scheme
        if scheme == "http" and not self.insecure:
            raise RegistryError(
                f"{url} is plain http ({what}); pass --insecure (SKILLCTL_INSECURE=1) to read a site without TLS, or use https://"
            )
        if scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise RegistryError(f"{url[:200]} is not an http(s) URL ({what})")

    def get(self, url: str, *, max_bytes: int, what: str, headers: dict[str, str] | None = None) -> Answer:
        """GET ``url`` following redirects: 200 (body capped at ``max_bytes``), 304 or 404;
        anything else, and any failure, is a one-line RegistryError naming ``what``."""
        self.check_url(url, what)
        result: dict[str, Any] = {}
        done = threading.Event()
        cancel = threading.Event()
        deadline = time.monotonic() + self.deadline_s

        def work() -> None:
            try:
                result["answer"] = self._exchange(url, max_bytes, what, dict(headers or {}), deadline, cancel, result)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                result["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name="skillctl-site-get", daemon=True).start()
        if not done.wait(self.deadline_s):
            cancel.set()
            response = result.get("response")
            if response is not None:
                response.close()
            raise RegistryError(
                f"{what}: {url} gave no complete answer within {self.deadline_s:g} s; the server is too slow or stalled"
            )
        if "error" in result:
            raise result["error"]
        return result["answer"]

    def _exchange(
        self, url: str, max_bytes: int, what: str, headers: dict[str, str], deadline: float, cancel: threading.Event, shared: dict
    ) -> Answer:
        seen = [url]
        current = url
        keyed = False
        while True:
            # The origin check already keeps a key off plain http unless the site itself is
            # http (which needs insecure); the scheme test keeps it so for any caller.
            sent_key = (self.key is not None and self.key.applies_to(current)
                        and (urlsplit(current).scheme == "https" or self.insecure))
            keyed = keyed or sent_key
            resp = self._send(current, headers, what, deadline, cancel, sent_key)
            shared["response"] = resp
            if resp.status_code in REDIRECT_STATUS:
                location = resp.headers.get("Location")
                resp.close()
                if not location:
                    raise RegistryError(f"{what}: {current} redirects without a Location")
                target = urljoin(current, location)
                if target in seen:
                    raise RegistryError(f"{what}: redirect loop ({' -> '.join(seen[-3:])} -> {target}); the site is misconfigured")
                if len(seen) > self.max_redirects:
                    raise RegistryError(f"{what}: more than {self.max_redirects} redirects from {url}; refusing to follow more")
                if urlsplit(current).scheme == "https" and urlsplit(target).scheme == "http" and not self.insecure:
                    raise RegistryError(f"{what}: {current} redirects from https to plain http ({target}); refusing the downgrade")
                self.check_url(target, what)
                seen.append(target)
                current = target
                continue
            with resp:
                if resp.status_code == 304:
                    return Answer(current, 304, dict(resp.headers), keyed=keyed)
                if resp.status_code in (404, 410):
                    return Answer(current, 404, dict(resp.headers), keyed=keyed)
                if resp.status_code in (401, 403):
                    raise RegistryError(self._refused(current, resp.status_code, what, sent_key))
                if resp.status_code != 200:
                    verb = "failed" if resp.status_code >= 500 else "refused"
                    raise RegistryError(f"{what}: {current} {verb} with HTTP {resp.status_code}")
                body = self._read(resp, current, max_bytes, what, deadline, cancel)
                encoding = resp.headers.get("Content-Encoding", "").strip().lower()
                return Answer(current, 200, dict(resp.headers), body, "" if encoding == "identity" else encoding, keyed)

    def _refused(self, url: str, status: int, what: str, sent_key: bool) -> str:
        """The one line for a 401/403: a key missing, a key refused, or credentials wanted by
        an origin the key is never sent to."""
        site = self.site or url
        on_site = origin_of(url) == origin_of(site)
        if not on_site:
            return (f"{what}: {url} answered HTTP {status} (it wants credentials); it is not {site}, and skillctl "
                    "sends a site's key to that site's own origin only")
        if sent_key and status == 401:
            return (f"{what}: {site} does not accept the key given (HTTP 401: unknown, revoked, or for another site); "
                    "give a valid one with --token-stdin or SKILLCTL_SITE_TOKEN")
        if sent_key:
            return (f"{what}: {site} does not allow the key given to read {url} (HTTP 403); "
                    "give a key with read access through --token-stdin or SKILLCTL_SITE_TOKEN")
        if status == 401:
            return f"{what}: {site} needs a key to read it (HTTP 401); {KEY_HINT}"
        return f"{what}: {site} refuses {url} without a key (HTTP 403); if it takes keys, {KEY_HINT}"

    def _send(self, url: str, headers: dict[str, str], what: str, deadline: float, cancel: threading.Event,
              sent_key: bool = False) -> requests.Response:
        delay = self.backoff_s
        for attempt in range(1, self.attempts + 1):
            remaining = deadline - time.monotonic()
            if cancel.is_set() or remaining <= 0:
                raise RegistryError(f"{what}: {url} gave no complete answer within {self.deadline_s:g} s")
            try:
                self.requests += 1
                # The socket timeouts only back up the deadline, which the caller's thread enforces:
                # they are longer, so a stalled server always ends as "no complete answer".
                resp = self.session.get(
                    url, headers=headers, stream=True, allow_redirects=False, verify=self.verify,
                    auth=_Bearer(self.key.token) if sent_key and self.key is not None else _NO_AUTH,
                    timeout=(min(self.connect_timeout_s, remaining), remaining + 5),
                )
            except requests.exceptions.SSLError as exc:
                raise RegistryError(
                    f"{what}: TLS with {urlsplit(url).netloc} failed ({reason(exc)}); if the site uses a private CA "
                    "set REQUESTS_CA_BUNDLE to its certificate"
                ) from None
            except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
                if attempt < self.attempts and is_unsent(exc) and deadline - time.monotonic() > delay:
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise RegistryError(
                    f"{what}: cannot reach {url} ({reason(exc)} after {attempt} attempt(s)); check the URL and that the site is up"
                ) from None
            if resp.status_code in RETRY_STATUS and attempt < self.attempts and deadline - time.monotonic() > delay:
                resp.close()
                time.sleep(delay)
                delay *= 2
                continue
            return resp
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _read(resp: requests.Response, url: str, cap: int, what: str, deadline: float, cancel: threading.Event) -> bytes:
        declared = resp.headers.get("Content-Length", "").strip()
        if declared.isdigit() and int(declared) > cap:
            raise RegistryError(f"{what}: {url} announces {int(declared)} bytes, over the {cap}-byte cap; refusing it unread")
        buf = bytearray()
        try:
            while True:
                if cancel.is_set() or time.monotonic() > deadline:
                    raise RegistryError(f"{what}: {url} did not finish its answer in time")
                chunk = resp.raw.read1(CHUNK, decode_content=False)
                if not chunk:
                    break
                buf += chunk
                if len(buf) > cap:
                    raise RegistryError(f"{what}: {url} sent more than {cap} bytes; refusing it")
        except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
            raise RegistryError(f"{what}: reading {url} failed ({reason(exc)})") from None
        if declared.isdigit() and len(buf) != int(declared):
            raise RegistryError(f"{what}: {url} announced {declared} bytes and sent {len(buf)}; the answer is incomplete")
        return bytes(buf)
