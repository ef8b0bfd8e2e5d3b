"""A small client for the OCI distribution API: the dozen calls a skill registry needs.

Why not a library: ``oras`` (PyPI ``oras`` 0.2.x, the maintained ORAS Python SDK) installs here
but does not fit. Its ``do_request`` retries every failure, POST and PUT included, sleeping
2 + 3**n seconds up to five times (a registry that is down costs minutes, not a clear error);
it reads manifests whole with ``response.json()`` (no size cap); it never checks the sha256 of a
blob it downloads; it pushes files from disk rather than bytes; and its errors are bare
``ValueError``s. We would have to wrap or replace almost every call we use. The protocol subset
we need is small and stable (distribution spec 1.0), so this is a client on ``requests`` — already
installed with the ``docker`` SDK — that does exactly that subset, strictly:

- every body read is capped before it is read (manifests 4 MiB, tag lists 4 MiB, blobs at the
  bundle limit) and every blob and manifest is hashed against the digest it was asked by;
- connection refused / connect timeouts are retried for any request (nothing was sent), and
  read failures and 429/502/503/504 only for idempotent ones (GET, HEAD, PUT of a manifest), a
  few times with a short exponential backoff; then one line naming the registry;
- 401 runs the registry's challenge (Basic, or Bearer token from its realm) once, with
  credentials from ``auth``; a second 401 or a 403 is one line naming registry, user and source;
- the ``Authorization`` header is only ever sent to the registry's own host (pagination and
  upload locations pointing elsewhere get none).

Plain HTTP only when the caller asks (``insecure=True``); HTTPS certificates are verified (a
private CA can be given through ``REQUESTS_CA_BUNDLE``).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Callable, Iterator
from urllib.parse import quote, urljoin, urlsplit

import requests

from skillctl import __version__
from skillctl.errors import IntegrityError, RegistryError
from skillctl.registry.netfail import is_unsent as _is_unsent
from skillctl.registry.netfail import reason as _reason
from skillctl.registry.oci.auth import ENV_PASSWORD, ENV_USERNAME, Credentials, parse_challenge

MAX_LIST_BYTES = 4 * 1024 * 1024
MAX_ERROR_BYTES = 64 * 1024
PAGE_SIZE = 1000
MAX_PAGES = 1000
_RETRY_STATUS = frozenset({429, 502, 503, 504})


# How the messages of errors about reaching the registry at all begin (not about its content):
# callers that report content problems one by one (verify) let these end the whole run instead.
_ACCESS_MARKS = ("cannot reach registry", "TLS with registry", "requires credentials (HTTP 401)", "rejected the credentials", " denied ")


def is_access_error(exc: BaseException) -> bool:
    """True for 'cannot reach' / TLS / 401 / 403 failures raised by this client."""
    text = str(exc)
    return isinstance(exc, RegistryError) and any(mark in text for mark in _ACCESS_MARKS)


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
        timeout_s: tuple[float, float] = (5.0, 60.0),
    ) -> None:
        self.host = host
        self.insecure = insecure
        self.base = f"{'http' if insecure else 'https'}://{host}"
        self.attempts = max(1, attempts)
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self._credentials_fn = credentials
        self._creds: Credentials | None = None
        self._creds_loaded = False
        self._basic: str | None = None
        self._tokens: dict[str, str] = {}
        self.session = requests.Session()
        self.session.headers["User-Agent"] = f"skillctl/{__version__}"
        self.requests = 0  # for benchmarks and tests: how many HTTP requests were sent

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

    def _send(self, method: str, url: str, *, headers: dict[str, str], data: bytes | None, idempotent: bool) -> requests.Response:
        delay = self.backoff_s
        for attempt in range(1, self.attempts + 1):
            try:
                self.requests += 1
                resp = self.session.request(
                    method, url, headers=headers, data=data, stream=True, timeout=self.timeout_s, allow_redirects=True
                )
            except requests.exceptions.SSLError as exc:
                kind = "certificate not trusted" if "CERTIFICATE_VERIFY_FAILED" in str(exc) else "handshake failed"
                raise RegistryError(
                    f"TLS with registry {self.host} failed ({kind}); if it serves plain HTTP pass --insecure "
                    "(SKILLCTL_INSECURE=1), if it uses a private CA set REQUESTS_CA_BUNDLE"
                ) from None
            except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
                if attempt < self.attempts and (idempotent or _is_unsent(exc)):
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise RegistryError(
                    f"cannot reach registry {self.host} ({self.base}): {_reason(exc)} after {attempt} attempt(s); "
                    "check that it is running and that --registry / SKILLCTL_REGISTRY is right"
                ) from None
            if resp.status_code in _RETRY_STATUS and idempotent and attempt < self.attempts:
                resp.close()
                time.sleep(delay)
                delay *= 2
                continue
            return resp
        raise AssertionError("unreachable")  # pragma: no cover

    def _same_host(self, url: str) -> bool:
        return urlsplit(url).netloc == self.host

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
        """Send one request, answering an auth challenge once; 401/403 become RegistryError."""
        url = path_or_url if "://" in path_or_url else self.base + path_or_url
        own = self._same_host(url)
        hdrs = dict(headers or {})
        auth = self._auth_header(scope) if own else None
        if auth:
            hdrs["Authorization"] = auth
        resp = self._send(method, url, headers=hdrs, data=data, idempotent=idempotent)
        if resp.status_code == 401 and own:
            challenge = resp.headers.get("WWW-Authenticate", "")
            resp.close()
            sent_before = auth is not None
            self._answer_challenge(challenge, scope, what, already_sent=sent_before)
            hdrs["Authorization"] = self._auth_header(scope) or ""
            resp = self._send(method, url, headers=hdrs, data=data, idempotent=idempotent)
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

    def _answer_challenge(self, header: str, scope: str, what: str, *, already_sent: bool) -> None:
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
            self._tokens[scope] = "Bearer " + self._fetch_token(challenge.params, scope, creds, what)
            return
        raise RegistryError(f"registry {self.host} asks for '{challenge.scheme or 'unknown'}' authentication, which skillctl does not speak (Basic and Bearer only)")

    def _fetch_token(self, params: dict[str, str], scope: str, creds: Credentials | None, what: str) -> str:
        realm = params.get("realm")
        if not realm or urlsplit(realm).scheme not in ("http", "https"):
            raise RegistryError(f"registry {self.host} sent a Bearer challenge without a usable realm")
        query: dict[str, str] = {}
        if params.get("service"):
            query["service"] = params["service"]
        token_scope = params.get("scope") or scope
        if token_scope:
            query["scope"] = token_scope
        headers = {"Authorization": creds.basic_header()} if creds else {}
        try:
            self.requests += 1
            resp = self.session.get(realm, params=query, headers=headers, timeout=self.timeout_s, stream=True)
        except requests.exceptions.RequestException as exc:
            raise RegistryError(f"cannot reach the token service {realm} of registry {self.host}: {_reason(exc)}") from None
        with resp:
            if resp.status_code == 401:
                raise self._rejected(what) if creds else self._needs_credentials()
            if resp.status_code != 200:
                raise RegistryError(f"token service {realm} of registry {self.host} answered HTTP {resp.status_code} for {what}")
            try:
                doc = _json(read_capped(resp, MAX_ERROR_BYTES, f"token from {realm}"))
            except ValueError:
                doc = None
        token = doc.get("token") or doc.get("access_token") if isinstance(doc, dict) else None
        if not isinstance(token, str) or not token:
            raise RegistryError(f"token service {realm} of registry {self.host} answered without a token")
        return token

    def _error_detail(self, resp: requests.Response) -> str:
        """'CODE: message' from a distribution error body, or '' (body read capped)."""
        try:
            doc = _json(read_capped(resp, MAX_ERROR_BYTES, "error body"))
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

    # ------------------------------------------------------------------ lists

    def _pages(self, path: str, *, scope: str, what: str, key: str) -> Iterator[list[str]]:
        url: str | None = f"{path}?n={PAGE_SIZE}"
        for _ in range(MAX_PAGES):
            if url is None:
                return
            resp = self.request("GET", url, scope=scope, what=what)
            if resp.status_code == 404:
                resp.close()
                raise NotFoundPage
            if resp.status_code != 200:
                raise self.fail(resp, what)
            with resp:
                body = read_capped(resp, MAX_LIST_BYTES, what)
                nxt = resp.links.get("next", {}).get("url")
            try:
                doc = _json(body)
            except ValueError as exc:
                raise RegistryError(f"registry {self.host} answered {what} with invalid JSON ({exc})") from None
            items = doc.get(key) if isinstance(doc, dict) else None
            if items is None:
                items = []
            if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                raise RegistryError(f"registry {self.host} answered {what} with a malformed '{key}' list")
            yield items
            url = urljoin(self.base + path, nxt) if nxt else None
        raise RegistryError(f"registry {self.host} kept paginating {what} past {MAX_PAGES} pages; refusing")

    def tags(self, repo: str) -> list[str]:
        """Every tag of ``repo``; [] when the repository does not exist."""
        out: list[str] = []
        try:
            for page in self._pages(f"/v2/{repo}/tags/list", scope=f"repository:{repo}:pull", what=f"the tags of {repo}", key="tags"):
                out += page
        except NotFoundPage:
            return []
        return out

    def catalog(self) -> list[str]:
        what = "its catalog (/v2/_catalog)"
        out: list[str] = []
        try:
            for page in self._pages("/v2/_catalog", scope="registry:catalog:*", what=what, key="repositories"):
                out += page
        except NotFoundPage:
            raise RegistryError(
                f"registry {self.host} does not offer a catalog (/v2/_catalog), so it cannot list skills; "
                "ask for a skill by name instead (skillctl versions NAME)"
            ) from None
        except RegistryError as exc:
            if "UNSUPPORTED" in str(exc) or "HTTP 405" in str(exc):
                raise RegistryError(
                    f"registry {self.host} has its catalog (/v2/_catalog) disabled, so it cannot list skills or find ids; "
                    "ask for a skill by name instead (skillctl versions NAME)"
                ) from None
            raise
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
            body = read_capped(resp, max_bytes, f"{what} on {self.host}", kind="manifest")
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
        location = urljoin(self.base + "/", resp.headers["Location"])
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
            data = read_capped(resp, max_bytes, f"{what} on {self.host}", kind="blob")
        actual = "sha256:" + hashlib.sha256(data).hexdigest()
        if actual != digest:
            raise IntegrityError(f"registry {self.host} served {what} whose bytes hash to {actual[:19]}…; refusing it (damaged or tampered)")
        if len(data) != size:
            raise IntegrityError(f"registry {self.host} served {what} with {len(data)} bytes; its manifest says {size}")
        return data


class NotFoundPage(Exception):
    """Internal: a listing answered 404 (e.g. a repository that does not exist)."""


def read_capped(resp: requests.Response, cap: int, what: str, *, kind: str = "answer") -> bytes:
    """The response body, refused as soon as it would pass ``cap`` bytes."""
    declared = resp.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > cap:
        resp.close()
        raise RegistryError(f"{what}: {kind} of {int(declared)} bytes is over the {cap // 1048576 or cap} {'MiB' if cap >= 1048576 else 'byte'} cap; refusing it")
    buf = bytearray()
    for chunk in resp.iter_content(65536):
        buf += chunk
        if len(buf) > cap:
            resp.close()
            raise RegistryError(f"{what}: {kind} is over the {cap // 1048576 or cap} {'MiB' if cap >= 1048576 else 'byte'} cap; refusing it")
    return bytes(buf)


def _json(body: bytes) -> Any:
    import json

    return json.loads(body.decode("utf-8"))
