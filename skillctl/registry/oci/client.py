"""A small client for the OCI distribution API: the dozen calls a skill registry needs.

Why not a library: ``oras`` (PyPI ``oras`` 0.2.x, the maintained ORAS Python SDK) installs here
but does not fit. Its ``do_request`` retries every failure, POST and PUT included, sleeping
2 + 3**n seconds up to five times (a registry that is down costs minutes, not a clear error);
it reads manifests whole with ``response.json()`` (no size cap); it never checks the sha256 of a
blob it downloads; it pushes files from disk rather than bytes; and its errors are bare
``ValueError``s. We would have to wrap or replace almost every call we use. The protocol subset
we need is small and stable (distribution spec 1.0), so this is a client on ``requests`` — already
installed with the ``docker`` SDK — that does exactly that subset, strictly:

- every body read is capped before it is read (manifests 4 MiB, tag-list pages 4 MiB, blobs at
  the bundle limit) and every blob and manifest is hashed against the digest it was asked by;
  listings are bounded as a whole too (entries, bytes and pages: ``TAG_LIMITS``,
  ``CATALOG_LIMITS``), so a registry paginating for ever costs a bounded amount of memory;
- every exchange has a total deadline (``deadline_s``, default 300 s, ``SKILLCTL_REGISTRY_TIMEOUT``)
  covering connecting, sending, the headers and the body, retries, redirects and the auth
  challenge included — enforced on every send and receive (``transport``), so a server trickling
  bytes cannot hold a command; the error names the registry, the request and what it was doing;
- connection refused / connect timeouts are retried for any request (nothing was sent), and
  read failures and 429/502/503/504 only for idempotent ones (GET, HEAD, PUT of a manifest), a
  few times with a short exponential backoff inside that deadline; then one line;
- redirects are followed by hand, at most ``MAX_REDIRECTS``, only to http(s) URLs (no HTTPS →
  HTTP downgrade without ``insecure``); loops, other schemes and malformed ``Location`` or
  ``Link`` URLs are one line each, as is JSON nested too deeply to parse;
- 401 runs the registry's challenge (Basic, or Bearer token from its realm) once, with
  credentials from ``auth``; a second 401 or a 403 is one line naming registry, user and source;
- credentials go to a token realm only over HTTPS, or over plain HTTP when the realm is on the
  registry's own host and the caller asked for ``insecure`` (Docker's rule for realms elsewhere);
- the ``Authorization`` header is only ever sent to the origin it belongs to (the registry, or
  the token realm): redirects, pagination and upload locations pointing elsewhere get none.

Plain HTTP only when the caller asks (``insecure=True``); HTTPS certificates are verified (a
private CA can be given through ``REQUESTS_CA_BUNDLE``).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterator
from urllib.parse import quote, urlencode, urljoin, urlsplit

import requests

from skillctl import __version__
from skillctl.errors import IntegrityError, RegistryError
from skillctl.nesting import loads_json
from skillctl.registry.netfail import REDIRECT_STATUS, RETRY_STATUS
from skillctl.registry.netfail import is_unsent as _is_unsent
from skillctl.registry.netfail import reason as _reason
from skillctl.registry.oci.auth import ENV_PASSWORD, ENV_USERNAME, Credentials, parse_challenge
from skillctl.registry.oci.transport import DeadlineAdapter, deadline_for

ENV_TIMEOUT = "SKILLCTL_REGISTRY_TIMEOUT"
DEFAULT_DEADLINE_S = 300.0  # a 50 MiB bundle at 170 KiB/s; a stuck exchange never costs more
CONNECT_TIMEOUT_S = 5.0
IDLE_TIMEOUT_S = 30.0  # silence that counts as a failed attempt (retried when safe)
MAX_LIST_BYTES = 4 * 1024 * 1024  # one page
MAX_ERROR_BYTES = 64 * 1024
MAX_REDIRECTS = 5
PAGE_SIZE = 1000


@dataclass(frozen=True)
class ListLimits:
    """Bounds on one whole listing, every page together."""

    entries: int
    total_bytes: int
    pages: int


# A skill with 10,000 versions is far past any real one; registries page 100 to 1,000 tags.
TAG_LIMITS = ListLimits(entries=10_000, total_bytes=8 * 1024 * 1024, pages=100)
# The catalog lists every repository of the registry, other teams' included.
CATALOG_LIMITS = ListLimits(entries=100_000, total_bytes=32 * 1024 * 1024, pages=1_000)


# How the messages of errors about reaching the registry at all begin (not about its content):
# callers that report content problems one by one (verify) let these end the whole run instead.
_ACCESS_MARKS = (
    "cannot reach registry", "TLS with registry", "requires credentials (HTTP 401)", "rejected the credentials", " denied ",
    " timed out on ", "cannot reach the token service",
)


def is_access_error(exc: BaseException) -> bool:
    """True for 'cannot reach' / TLS / 401 / 403 / deadline failures raised by this client."""
    text = str(exc)
    return isinstance(exc, RegistryError) and any(mark in text for mark in _ACCESS_MARKS)


class _Session(requests.Session):
    """A session that never looks at redirects: the client follows them itself (``_exchange``).
    Even with ``allow_redirects=False``, requests parses the ``Location`` of every 3xx answer
    and reads its whole body in advance; a hostile one could fail there or send gigabytes."""

    def resolve_redirects(self, *args: object, **kwargs: object) -> Iterator[requests.Response]:
        return iter(())

    def merge_environment_settings(self, url: str, proxies: Any, stream: Any, verify: Any, cert: Any) -> dict[str, Any]:
        """requests reads the proxy variables and REQUESTS_CA_BUNDLE for every request, scanning
        the whole environment twice (about 1 ms, as much as a loopback exchange); here they are
        read once per origin for the session's life. Calls that pass their own settings (this
        client never does) are merged afresh."""
        if proxies or verify is not None or cert is not None:
            return super().merge_environment_settings(url, proxies, stream, verify, cert)
        key = (_origin(url), stream)
        cache: dict[tuple[str, Any], dict[str, Any]] = self.__dict__.setdefault("_skillctl_env", {})
        if key not in cache:
            cache[key] = super().merge_environment_settings(url, proxies, stream, verify, cert)
        return dict(cache[key], proxies=dict(cache[key]["proxies"]))


class DistributionClient:
    """One registry host. Methods take a repository name already checked by ``names``."""

    def __init__(
        self,
        host: str,
        *,
        insecure: bool = False,
        credentials: Callable[[], Credentials | None] = lambda: None,
        attempts: int = 3,
        backoff_s: float = 0.2,
        deadline_s: float = DEFAULT_DEADLINE_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
    ) -> None:
        if not deadline_s > 0:
            raise RegistryError(f"the registry deadline must be a positive number of seconds, got {deadline_s}")
        self.host = host
        self.insecure = insecure
        self.scheme = "http" if insecure else "https"
        self.base = f"{self.scheme}://{host}"
        self.attempts = max(1, attempts)
        self.backoff_s = backoff_s
        self.deadline_s = deadline_s
        self.connect_timeout_s = connect_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self._credentials_fn = credentials
        self._creds: Credentials | None = None
        self._creds_loaded = False
        self._basic: str | None = None
        self._tokens: dict[str, str] = {}
        self.session = _Session()
        adapter = DeadlineAdapter()
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        # requests would look each request's host up in ~/.netrc (a file read per request) and let
        # what it finds replace the Authorization header chosen here; credentials come from auth only.
        self.session.auth = _no_netrc
        self.session.headers["User-Agent"] = f"skillctl/{__version__}"
        # Blobs are gzip already; and nothing is inflated before the size caps see it.
        self.session.headers["Accept-Encoding"] = "identity"
        self.requests = 0  # for benchmarks and tests: how many HTTP requests were sent
        self.sent: Counter[str] = Counter()  # the same, by kind ("GET manifests", "GET tags", see _kind)

    def close(self) -> None:
        self.session.close()

    # ------------------------------------------------------------------ transport

    def _credentials(self) -> Credentials | None:
        if not self._creds_loaded:
            self._creds = self._credentials_fn()
            self._creds_loaded = True
        return self._creds

    def _who(self) -> str:
        creds = self._creds
        return f"'{creds.username}' (from {creds.source})" if creds else "anonymous access"

    def _timed_out(self, what: str, phase: str) -> RegistryError:
        return RegistryError(
            f"registry {self.host} timed out on {what}: no complete answer within the {self.deadline_s:g} s deadline ({phase}); "
            f"it covers connecting, headers and body, retries included — check the registry, or raise {ENV_TIMEOUT} for a slow link"
        )

    def _send(
        self, method: str, url: str, *, headers: dict[str, str], data: bytes | None, idempotent: bool, deadline: float, what: str,
        server: str,
    ) -> requests.Response:
        """One hop (no redirects followed), retried when safe, all inside ``deadline``."""
        delay = self.backoff_s
        for attempt in range(1, self.attempts + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._timed_out(what, "waiting to retry")
            exchange = None
            try:
                self.requests += 1
                self.sent[f"{method} {_kind(url)}"] += 1
                with deadline_for(deadline) as exchange:
                    resp = self.session.request(
                        method, url, headers=headers, data=data, stream=True, allow_redirects=False,
                        timeout=(min(self.connect_timeout_s, left), min(self.idle_timeout_s, left)),
                    )
            except requests.exceptions.SSLError as exc:
                kind = "certificate not trusted" if "CERTIFICATE_VERIFY_FAILED" in str(exc) else "handshake failed"
                raise RegistryError(
                    f"TLS with registry {self.host} failed ({kind}); if it serves plain HTTP pass --insecure "
                    "(SKILLCTL_INSECURE=1), if it uses a private CA set REQUESTS_CA_BUNDLE"
                ) from None
            except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
                if _past(deadline):
                    connecting = isinstance(exc, requests.exceptions.ConnectTimeout) or _is_unsent(exc) or exchange is None
                    raise self._timed_out(what, "connecting" if connecting else exchange.phase) from None
                if attempt < self.attempts and (idempotent or _is_unsent(exc)) and _pause(delay, deadline):
                    delay *= 2
                    continue
                raise RegistryError(
                    f"cannot reach {server}: {_reason(exc)} after {attempt} attempt(s); "
                    "check that it is running and that --registry / SKILLCTL_REGISTRY is right"
                ) from None
            except (requests.exceptions.RequestException, ValueError) as exc:
                # what requests refuses before sending (an unusable URL or header): one line too
                raise RegistryError(f"registry {self.host}: cannot send {what} to {_short(url)} ({type(exc).__name__})") from None
            resp.skillctl_deadline = deadline  # type: ignore[attr-defined]  # read_body reports against it
            if resp.status_code in RETRY_STATUS and idempotent and attempt < self.attempts and time.monotonic() + delay < deadline:
                resp.close()
                _pause(delay, deadline)
                delay *= 2
                continue
            return resp
        raise AssertionError("unreachable")  # pragma: no cover

    def _exchange(
        self,
        method: str,
        url: str,
        *,
        what: str,
        deadline: float,
        headers: dict[str, str] | None = None,
        data: bytes | None = None,
        idempotent: bool = True,
        auth: tuple[str, str] | None = None,
        server: str = "",
    ) -> requests.Response:
        """``url`` with its redirects followed by hand. ``auth`` is (origin, header value): the
        header goes only to URLs of that origin (scheme://host:port), never across a redirect."""
        server = server or f"registry {self.host} ({self.base})"
        seen = [url]
        for _ in range(MAX_REDIRECTS + 1):
            hop = dict(headers or {})
            if auth is not None and _origin(url) == auth[0]:
                hop["Authorization"] = auth[1]
            resp = self._send(method, url, headers=hop, data=data, idempotent=idempotent, deadline=deadline, what=what, server=server)
            if resp.status_code not in REDIRECT_STATUS:
                return resp
            resp.close()
            location = resp.headers.get("Location")
            if not location:
                raise RegistryError(f"registry {self.host} answered {what} with HTTP {resp.status_code} but no Location; refusing")
            target = self.checked_url(url, location, f"redirected {what}")
            if target in seen:
                loop = " → ".join(_short(u) for u in [*seen[seen.index(target):], target])
                raise RegistryError(f"registry {self.host} redirected {what} in a loop ({loop}); refusing")
            seen.append(target)
            if resp.status_code in (301, 302, 303) and method not in ("GET", "HEAD"):
                method, data = "GET", None  # as browsers and requests do: only 307/308 repeat the body
            url = target
        raise RegistryError(f"registry {self.host} redirected {what} more than {MAX_REDIRECTS} times; refusing")

    def checked_url(self, current: str, target: str, how: str, *, allow_http: bool | None = None) -> str:
        """``target`` (a Location or a Link) made absolute against ``current``, or one line
        saying why it is not followed: not http(s), malformed, or a downgrade to plain HTTP
        (allowed only with ``insecure``, unless ``allow_http`` says otherwise)."""
        shown = target[:100]
        try:
            if any(ord(c) < 33 or ord(c) == 127 for c in target.strip()):
                raise ValueError("control characters or spaces")
            url = urljoin(current, target.strip())
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
        except ValueError:
            raise RegistryError(f"registry {self.host} {how} to a malformed URL {shown!r}; refusing") from None
        if parts.scheme not in ("http", "https"):
            raise RegistryError(
                f"registry {self.host} {how} to a {parts.scheme or 'scheme-less'} URL ({shown}); only http(s) URLs are followed"
            )
        if not parts.hostname:
            raise RegistryError(f"registry {self.host} {how} to a malformed URL {shown!r} (no host); refusing")
        if parts.scheme == "http" and not (self.insecure if allow_http is None else allow_http):
            raise RegistryError(
                f"registry {self.host} {how} to plain HTTP ({_short(url)}) from HTTPS; refusing (--insecure allows plain HTTP)"
            )
        return url

    def _same_host(self, url: str) -> bool:
        return _origin(url) == _origin(self.base)

    def _auth_header(self, scope: str) -> str | None:
        return self._tokens.get(scope) or self._basic

    def request(
        self,
        method: str,
        path_or_url: str,
        *,
        scope: str,
        what: str,
        headers: dict[str, str] | None = None,
        data: bytes | None = None,
        idempotent: bool = True,
    ) -> requests.Response:
        """Send one request, answering an auth challenge once; 401/403 become RegistryError.
        The whole of it — retries, redirects, the challenge and reading the body the caller
        streams from the response — shares one deadline of ``deadline_s``."""
        deadline = time.monotonic() + self.deadline_s
        url = path_or_url if "://" in path_or_url else self.base + path_or_url
        origin = _origin(self.base)
        auth = self._auth_header(scope)
        resp = self._exchange(
            method, url, what=what, deadline=deadline, headers=headers, data=data, idempotent=idempotent,
            auth=(origin, auth) if auth else None,
        )
        if resp.status_code == 401 and self._same_host(resp.url):
            challenge = resp.headers.get("WWW-Authenticate", "")
            resp.close()
            self._answer_challenge(challenge, scope, what, already_sent=auth is not None and self._same_host(url), deadline=deadline)
            resp = self._exchange(
                method, url, what=what, deadline=deadline, headers=headers, data=data, idempotent=idempotent,
                auth=(origin, self._auth_header(scope) or ""),
            )
            if resp.status_code == 401:
                resp.close()
                raise self._rejected(what)
        if resp.status_code == 403:
            detail = self._error_detail(resp)
            raise RegistryError(
                f"registry {self.host} denied {self._who()} {what} (HTTP 403{': ' + detail if detail else ''}); "
                f"the account needs {'push' if 'push' in scope else 'pull'} rights there"
            )
        return resp

    def _needs_credentials(self) -> RegistryError:
        return RegistryError(
            f"registry {self.host} requires credentials (HTTP 401); run `docker login {self.host}`, "
            f"set {ENV_USERNAME} and {ENV_PASSWORD}, or pass --username with --password-stdin"
        )

    def _rejected(self, what: str) -> RegistryError:
        if self._creds is None:
            return self._needs_credentials()
        return RegistryError(
            f"registry {self.host} rejected the credentials of {self._who()} for {what} (HTTP 401); check the username and password"
        )

    def _answer_challenge(self, header: str, scope: str, what: str, *, already_sent: bool, deadline: float) -> None:
        challenge = parse_challenge(header)
        creds = self._credentials()
        if challenge.scheme == "basic":
            if creds is None:
                raise self._needs_credentials()
            if already_sent and self._basic is not None:
                raise self._rejected(what)
            self._basic = creds.basic_header()
            return
        if challenge.scheme == "bearer":
            self._tokens[scope] = "Bearer " + self._fetch_token(challenge.params, scope, creds, what, deadline)
            return
        raise RegistryError(f"registry {self.host} asks for '{challenge.scheme or 'unknown'}' authentication, which skillctl does not speak (Basic and Bearer only)")

    def _realm_allowed(self, realm: str) -> bool:
        """Whether credentials may go to ``realm``: over HTTPS anywhere (as Docker does), over
        plain HTTP only on the registry's own host, and only when plain HTTP was asked for."""
        parts = urlsplit(realm)
        return parts.scheme == "https" or (self.insecure and parts.hostname == urlsplit(self.base).hostname)

    def _fetch_token(self, params: dict[str, str], scope: str, creds: Credentials | None, what: str, deadline: float) -> str:
        raw = params.get("realm") or ""
        try:
            # plain HTTP is judged below, with the credentials in view: an anonymous token may come over it
            realm = self.checked_url(self.base + "/", raw, "points its Bearer realm", allow_http=True).split("#", 1)[0] if raw else ""
        except RegistryError:
            realm = ""
        if not realm:
            raise RegistryError(f"registry {self.host} sent a Bearer challenge without a usable realm ({raw[:100]!r})")
        if creds is not None and not self._realm_allowed(realm):
            raise RegistryError(
                f"registry {self.host} asks for the credentials of {self._who()} to be sent to {realm} over plain HTTP; "
                "skillctl sends them to a token service only over HTTPS (or over HTTP on the registry's own host with "
                "--insecure) — refusing; the registry's token realm needs https://"
            )
        query: dict[str, str] = {}
        if params.get("service"):
            query["service"] = params["service"]
        token_scope = params.get("scope") or scope
        if token_scope:
            query["scope"] = token_scope
        url = f"{realm}{'&' if '?' in realm else '?'}{urlencode(query)}" if query else realm
        token_what = f"a token for {what} from {_short(realm)}"
        resp = self._exchange(
            "GET", url, what=token_what, deadline=deadline, auth=(_origin(realm), creds.basic_header()) if creds else None,
            server=f"the token service {_short(realm)} of registry {self.host}",
        )
        with resp:
            if resp.status_code == 401:
                raise self._rejected(what) if creds else self._needs_credentials()
            if resp.status_code != 200:
                raise RegistryError(f"token service {realm} of registry {self.host} answered HTTP {resp.status_code} for {what}")
            try:
                doc = loads_json(self.read_body(resp, MAX_ERROR_BYTES, token_what))
            except ValueError:
                doc = None
        token = doc.get("token") or doc.get("access_token") if isinstance(doc, dict) else None
        if not isinstance(token, str) or not token:
            raise RegistryError(f"token service {realm} of registry {self.host} answered without a token")
        return token

    def _error_detail(self, resp: requests.Response) -> str:
        """'CODE: message' from a distribution error body, or '' (body read capped)."""
        try:
            doc = loads_json(self.read_body(resp, MAX_ERROR_BYTES, "error body"))
            err = doc["errors"][0]
            return f"{err.get('code', '')}: {err.get('message', '')}".strip(": ")[:200]
        except Exception:  # noqa: BLE001 - any unreadable body means no detail
            return ""
        finally:
            resp.close()

    def fail(self, resp: requests.Response, what: str) -> RegistryError:
        detail = self._error_detail(resp)
        verb = "failed" if resp.status_code >= 500 else "refused"
        return RegistryError(f"registry {self.host} {verb} {what}: HTTP {resp.status_code}{' ' + detail if detail else ''}")

    def read_body(self, resp: requests.Response, cap: int, what: str, *, kind: str = "answer") -> bytes:
        """The response body, refused as soon as it would pass ``cap`` bytes; a stall or a cut
        connection while reading is one line too. ``what`` names the request ("reading …")."""
        unit = f"{cap // 1048576} MiB" if cap >= 1048576 else f"{cap} byte"
        declared = resp.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > cap:
            resp.close()
            raise RegistryError(f"{what} on {self.host}: {kind} of {int(declared)} bytes is over the {unit} cap; refusing it")
        buf = bytearray()
        try:
            for chunk in resp.iter_content(65536):
                buf += chunk
                if len(buf) > cap:
                    resp.close()
                    raise RegistryError(f"{what} on {self.host}: {kind} is over the {unit} cap; refusing it")
        except requests.exceptions.RequestException as exc:
            resp.close()
            if _past(getattr(resp, "skillctl_deadline", float("inf"))):
                raise self._timed_out(what, "reading the body") from None
            raise RegistryError(f"registry {self.host}: {_reason(exc)} while reading {what}; try again") from None
        return bytes(buf)

    # ------------------------------------------------------------------ lists

    def _listing(self, path: str, *, scope: str, what: str, key: str, limits: ListLimits) -> list[str] | None:
        """Every entry of a paginated list (``key`` of each page), or None on 404 (no such
        repository). Refused in one line past ``limits``, counted over all pages together."""
        url = f"{self.base}{path}?n={PAGE_SIZE}"
        out: list[str] = []
        total = 0
        for page in range(1, limits.pages + 1):
            resp = self.request("GET", url, scope=scope, what=what)
            if resp.status_code == 404:
                resp.close()
                return None
            if resp.status_code != 200:
                raise self.fail(resp, what)
            with resp:
                body = self.read_body(resp, MAX_LIST_BYTES, what)
                nxt = resp.links.get("next", {}).get("url")
            total += len(body)
            if total > limits.total_bytes:
                raise RegistryError(
                    f"registry {self.host} answered {what} with more than {limits.total_bytes // 1048576} MiB over {page} pages; "
                    "skillctl reads no more than that — refusing"
                )
            try:
                doc = loads_json(body)
            except ValueError as exc:
                raise RegistryError(f"registry {self.host} answered {what} with invalid JSON ({exc})") from None
            items = doc.get(key) if isinstance(doc, dict) else None
            if items is None:
                items = []
            if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                raise RegistryError(f"registry {self.host} answered {what} with a malformed '{key}' list")
            out += items
            if len(out) > limits.entries:
                raise RegistryError(
                    f"registry {self.host} lists more than {limits.entries} entries in {what} (page {page}); "
                    "skillctl reads no more than that — refusing"
                )
            if not nxt:
                return out
            url = self.checked_url(url, nxt, f"sent a next-page link for {what}")
        raise RegistryError(f"registry {self.host} kept paginating {what} past {limits.pages} pages; refusing")

    def tags(self, repo: str) -> list[str] | None:
        """Every tag of ``repo``; None when the repository does not exist."""
        return self._listing(
            f"/v2/{repo}/tags/list", scope=f"repository:{repo}:pull", what=f"the tags of {repo}", key="tags", limits=TAG_LIMITS
        )

    def catalog(self) -> list[str]:
        what = "its catalog (/v2/_catalog)"
        try:
            out = self._listing("/v2/_catalog", scope="registry:catalog:*", what=what, key="repositories", limits=CATALOG_LIMITS)
        except RegistryError as exc:
            if "UNSUPPORTED" in str(exc) or "HTTP 405" in str(exc):
                raise RegistryError(
                    f"registry {self.host} has its catalog (/v2/_catalog) disabled, so it cannot list skills or find ids; "
                    "ask for a skill by name instead (skillctl versions NAME)"
                ) from None
            raise
        if out is None:
            raise RegistryError(
                f"registry {self.host} does not offer a catalog (/v2/_catalog), so it cannot list skills; "
                "ask for a skill by name instead (skillctl versions NAME)"
            )
        return out

    # ------------------------------------------------------------------ manifests

    def get_manifest(self, repo: str, reference: str, *, accept: str, max_bytes: int) -> tuple[bytes, str] | None:
        """(bytes, digest) of a manifest by tag or digest, or None if absent. The digest is
        computed here; the server's Docker-Content-Digest must agree when it sends one."""
        what = f"manifest {repo}:{reference}"
        resp = self.request("GET", f"/v2/{repo}/manifests/{reference}", scope=f"repository:{repo}:pull", what=f"reading {what}", headers={"Accept": accept})
        if resp.status_code == 404:
            resp.close()
            return None
        if resp.status_code != 200:
            raise self.fail(resp, f"reading {what}")
        with resp:
            body = self.read_body(resp, max_bytes, f"reading {what}", kind="manifest")
            claimed = resp.headers.get("Docker-Content-Digest")
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        if claimed and claimed != digest:
            raise IntegrityError(f"registry {self.host} served {what} with digest {digest[:19]}… but labelled it {claimed[:19]}…; refusing it")
        if reference.startswith("sha256:") and reference != digest:
            raise IntegrityError(f"registry {self.host} served {what} whose bytes hash to {digest[:19]}…; refusing it")
        return body, digest

    def put_manifest(self, repo: str, tag: str, body: bytes, media_type: str) -> str:
        what = f"pushing manifest {repo}:{tag}"
        resp = self.request(
            "PUT", f"/v2/{repo}/manifests/{tag}", scope=f"repository:{repo}:pull,push", what=what,
            headers={"Content-Type": media_type}, data=body, idempotent=True,
        )
        if resp.status_code not in (200, 201):
            raise self.fail(resp, what)
        resp.close()
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        claimed = resp.headers.get("Docker-Content-Digest")
        if claimed and claimed != digest:
            raise IntegrityError(f"registry {self.host} stored {repo}:{tag} as {claimed[:19]}…, not the {digest[:19]}… sent; check the registry")
        return digest

    # ------------------------------------------------------------------ blobs

    def blob_exists(self, repo: str, digest: str) -> bool:
        resp = self.request("HEAD", f"/v2/{repo}/blobs/{digest}", scope=f"repository:{repo}:pull", what=f"checking blob {digest[:19]}… in {repo}")
        resp.close()
        if resp.status_code == 200:
            return True
        if resp.status_code == 404:
            return False
        raise self.fail(resp, f"checking blob {digest[:19]}… in {repo}")

    def push_blob(self, repo: str, data: bytes, digest: str, *, check_exists: bool = True) -> bool:
        """Upload ``data`` as ``digest`` unless the repository has it; True if uploaded."""
        if check_exists and self.blob_exists(repo, digest):
            return False
        what = f"uploading blob {digest[:19]}… to {repo}"
        scope = f"repository:{repo}:pull,push"
        # distribution 2.8 answers a monolithic POST with 202 and ignores its body, so: POST, then PUT.
        resp = self.request("POST", f"/v2/{repo}/blobs/uploads/", scope=scope, what=what, headers={"Content-Length": "0"}, idempotent=False)
        if resp.status_code != 202 or not resp.headers.get("Location"):
            raise self.fail(resp, what)
        resp.close()
        location = self.checked_url(resp.url, resp.headers["Location"], f"answered {what} with an upload Location")
        sep = "&" if "?" in location else "?"
        resp = self.request(
            "PUT", f"{location}{sep}digest={quote(digest)}", scope=scope, what=what,
            headers={"Content-Type": "application/octet-stream"}, data=data, idempotent=False,
        )
        if resp.status_code not in (201, 204):
            raise self.fail(resp, what)
        resp.close()
        return True

    def get_blob(self, repo: str, digest: str, *, size: int, max_bytes: int) -> bytes:
        """The blob ``digest`` of ``repo``, refused unless it hashes to ``digest`` and has ``size`` bytes."""
        what = f"blob {digest[:19]}… of {repo}"
        if size > max_bytes:
            raise RegistryError(f"{what} on {self.host} claims {size} bytes, over the {max_bytes}-byte cap; refusing it")
        resp = self.request("GET", f"/v2/{repo}/blobs/{digest}", scope=f"repository:{repo}:pull", what=f"reading {what}")
        if resp.status_code == 404:
            resp.close()
            raise IntegrityError(f"{what} is missing on registry {self.host} although a manifest names it; the registry is damaged")
        if resp.status_code != 200:
            raise self.fail(resp, f"reading {what}")
        with resp:
            data = self.read_body(resp, max_bytes, f"reading {what}", kind="blob")
        actual = "sha256:" + hashlib.sha256(data).hexdigest()
        if actual != digest:
            raise IntegrityError(f"registry {self.host} served {what} whose bytes hash to {actual[:19]}…; refusing it (damaged or tampered)")
        if len(data) != size:
            raise IntegrityError(f"registry {self.host} served {what} with {len(data)} bytes; its manifest says {size}")
        return data


def _past(deadline: float) -> bool:
    """Whether a failed receive was ended by ``deadline``: socket timeouts are rounded to the
    clock's resolution, so one that fires a hair early counts too."""
    return time.monotonic() >= deadline - 0.05


def _pause(delay: float, deadline: float) -> bool:
    """Sleep ``delay`` before a retry if the deadline leaves room for one; False if it does not."""
    if time.monotonic() + delay >= deadline:
        return False
    time.sleep(delay)
    return True


def _no_netrc(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """The session's auth: changes nothing, and so keeps requests from consulting ~/.netrc."""
    return request


def _kind(url: str) -> str:
    """What a request URL asks for, for counting: the distribution route (``manifests``,
    ``blobs``, ``uploads``, ``tags``, ``referrers``, ``catalog``, ``base`` for /v2/), else
    ``other`` (a token realm, a redirect target elsewhere). Matched at the end of the path, so a
    repository named like a route is not mistaken for one."""
    path = urlsplit(url).path
    if path.rstrip("/") == "/v2":
        return "base"
    if path == "/v2/_catalog":
        return "catalog"
    found = _ROUTE_RE.search(path) if path.startswith("/v2/") else None
    return next(k for k in found.groups() if k) if found else "other"


_ROUTE_RE = re.compile(r"/blobs/(uploads)/[^/]*$|/(manifests|blobs|referrers)/[^/]+$|/(tags)/list$")


def _origin(url: str) -> str:
    """scheme://host[:port], lowercased: what an Authorization header is bound to."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _short(url: str) -> str:
    """A URL for a message: without its query (upload and token URLs carry state there)."""
    return url.split("?", 1)[0][:120]
