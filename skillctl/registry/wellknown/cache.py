"""The local cache for well-known sites: artifacts by digest, documents by URL with validators.

    CACHE/blobs/sha256/<hex>        bodies (artifacts and documents), named by their sha256
    CACHE/documents/<sha256(url)>   JSON: url, digest of the body, ETag, Last-Modified, when it
                                    was stored and for how long the server said it stays fresh
    CACHE/tmp/                      writes in flight (same file system: rename is atomic)

Artifacts are content-addressed: an index that names digest D is served from ``blobs/D``
without a request, and a blob is re-hashed whenever it is read (a damaged one is dropped and
fetched again). Documents follow the server's ``Cache-Control``: ``no-store`` is never written,
``max-age`` (less the ``Age`` it had already spent in caches) makes a copy fresh for that long,
``no-cache`` or no lifetime at all means "ask again", with ``If-None-Match`` / ``If-Modified-Since``
so an unchanged document costs a 304 and no body. Several processes may share the cache: every
file is written to ``tmp/`` and renamed into place. Nothing is evicted; delete the folder to
reclaim space (``SKILLCTL_CACHE_DIR`` chooses it; default: the user cache folder).

Private sites. A document fetched with a site's key is stored (``keyed``) but never taken as
fresh, whatever its ``max-age``: each use asks the server again (with validators, so it costs a
304), and the server checks the key that run sends. A run without the key, or with a revoked one,
gets the server's 401/403, not the copy. Artifacts need no such flag: they are found by the digest
an index names, and every index comes through that check first. What the cache holds is readable
by whoever can read its folder, so the folders it makes are 0700 and its files 0600.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from skillctl.bundle import sha256_digest
from skillctl.nesting import loads_json

ENV_CACHE_DIR = "SKILLCTL_CACHE_DIR"


def default_cache_dir() -> Path:
    env = os.environ.get(ENV_CACHE_DIR)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("skillctl")) / "sites"


@dataclass(frozen=True)
class CachePolicy:
    """What a response's headers say about keeping it."""

    store: bool
    max_age: int | None  # seconds the copy is fresh from when it was stored; None: revalidate
    etag: str
    last_modified: str

    @classmethod
    def from_headers(cls, headers: dict[str, str]) -> "CachePolicy":
        lower = {k.lower(): v for k, v in headers.items()}
        directives: dict[str, str] = {}
        for part in lower.get("cache-control", "").split(","):
            key, _, value = part.strip().partition("=")
            if key:
                directives[key.lower()] = value.strip().strip('"')
        max_age: int | None = None
        if "no-cache" not in directives and directives.get("max-age", "").isdigit():
            age = lower.get("age", "0").strip()
            max_age = max(0, int(directives["max-age"]) - (int(age) if age.isdigit() else 0))
        return cls("no-store" not in directives, max_age, lower.get("etag", ""), lower.get("last-modified", ""))


@dataclass(frozen=True)
class CachedDocument:
    url: str
    body: bytes
    stored_at: float
    policy: CachePolicy
    keyed: bool = False  # fetched with a site's key: the server must see each use

    def fresh(self, now: float) -> bool:
        return not self.keyed and self.policy.max_age is not None and now - self.stored_at < self.policy.max_age

    def validators(self) -> dict[str, str]:
        out = {}
        if self.policy.etag:
            out["If-None-Match"] = self.policy.etag
        if self.policy.last_modified:
            out["If-Modified-Since"] = self.policy.last_modified
        return out


class SiteCache:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _blob_path(self, digest: str) -> Path:
        algo, _, hexd = digest.partition(":")
        if algo != "sha256" or len(hexd) != 64 or not all(c in "0123456789abcdef" for c in hexd):
            raise ValueError(f"malformed digest {digest!r}")
        return self.root / "blobs" / "sha256" / hexd

    def _doc_path(self, url: str) -> Path:
        return self.root / "documents" / hashlib.sha256(url.encode("utf-8")).hexdigest()

    def _write(self, target: Path, data: bytes) -> None:
        tmp_dir = self.root / "tmp"
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp_dir.mkdir(exist_ok=True, mode=0o700)
            for folder in reversed(target.relative_to(self.root).parents[:-1]):
                (self.root / folder).mkdir(exist_ok=True, mode=0o700)
            tmp = tmp_dir / f"{target.name}.{os.getpid()}.{secrets.token_hex(4)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except OSError:
            pass  # a cache that cannot be written is a slower cache, not an error

    def blob(self, digest: str) -> bytes | None:
        """The cached bytes with this digest, re-hashed; None when absent or damaged."""
        try:
            path = self._blob_path(digest)
        except ValueError:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if sha256_digest(data) != digest:
            try:
                path.unlink()
            except OSError:
                pass
            return None
        return data

    def put_blob(self, data: bytes) -> str:
        digest = sha256_digest(data)
        path = self._blob_path(digest)
        if not path.exists():
            self._write(path, data)
        return digest

    def document(self, url: str) -> CachedDocument | None:
        try:
            meta = loads_json(self._doc_path(url).read_text("utf-8"))
            policy = CachePolicy(True, meta["max_age"], meta["etag"], meta["last_modified"])
            if meta["url"] != url:
                return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        body = self.blob(meta.get("digest", ""))
        if body is None:
            return None
        return CachedDocument(url, body, float(meta["stored_at"]), policy, meta.get("keyed", False) is not False)

    def put_document(self, url: str, body: bytes, policy: CachePolicy, *, now: float | None = None, keyed: bool = False) -> None:
        if not policy.store:
            try:
                self._doc_path(url).unlink()
            except OSError:
                pass
            return
        digest = self.put_blob(body)
        meta = {
            "url": url, "digest": digest, "etag": policy.etag, "last_modified": policy.last_modified,
            "max_age": policy.max_age, "stored_at": time.time() if now is None else now, "keyed": keyed,
        }
        self._write(self._doc_path(url), json.dumps(meta, sort_keys=True).encode("utf-8"))
