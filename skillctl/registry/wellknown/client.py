"""Reading a well-known site through the cache: documents by URL, artifacts by digest.

``document`` honours the server's caching headers (see ``cache``), except that a document fetched
with the site's key is always asked for again; ``artifact`` never downloads
what the cache already holds under the digest the index names, and verifies every download
against that digest before anyone sees a byte of it (a mismatch is refused and not cached).
"""

from __future__ import annotations

import time

from skillctl.bundle import sha256_digest
from skillctl.errors import IntegrityError
from skillctl.registry.wellknown.cache import CachePolicy, SiteCache
from skillctl.registry.wellknown.transport import HttpClient, inflate_capped


class SiteClient:
    def __init__(self, http: HttpClient, cache: SiteCache | None) -> None:
        self.http = http
        self.cache = cache

    def close(self) -> None:
        self.http.close()

    def document(self, url: str, *, max_bytes: int, what: str) -> bytes | None:
        """The body at ``url`` (None for 404), from the cache while the server says it is fresh,
        else fetched (conditionally when the cache has validators)."""
        cached = self.cache.document(url) if self.cache is not None else None
        now = time.time()
        if cached is not None and cached.fresh(now):
            return cached.body
        answer = self.http.get(url, max_bytes=max_bytes, what=what, headers=cached.validators() if cached else None)
        if answer.status == 404:
            return None
        policy = CachePolicy.from_headers(answer.headers)
        if answer.status == 304:
            if cached is None:  # a 304 to a request without validators: nothing to reuse
                answer = self.http.get(url, max_bytes=max_bytes, what=what)
                if answer.status != 200:
                    return None
            else:
                # The 304's headers update the stored ones (RFC 9111 section 4.3.4).
                merged = CachePolicy(policy.store, policy.max_age, policy.etag or cached.policy.etag,
                                     policy.last_modified or cached.policy.last_modified)
                if self.cache is not None:
                    self.cache.put_document(url, cached.body, merged, now=now, keyed=cached.keyed or answer.keyed)
                return cached.body
        body = inflate_capped(answer.body, answer.encoding, max_bytes, what) if answer.encoding else answer.body
        if self.cache is not None:
            self.cache.put_document(url, body, CachePolicy.from_headers(answer.headers), now=now, keyed=answer.keyed)
        return body

    def artifact(self, url: str, digest: str, *, max_bytes: int, what: str, use_cache: bool = True) -> bytes:
        """The artifact with ``digest``: from the cache, else downloaded from ``url`` and
        verified. IntegrityError when the bytes served are not the ones the index promised."""
        if use_cache and self.cache is not None:
            hit = self.cache.blob(digest)
            if hit is not None:
                return hit
        answer = self.http.get(url, max_bytes=max_bytes, what=what)
        if answer.status != 200:
            raise IntegrityError(f"{what}: {url} is missing (HTTP 404) although the index lists it; the site is broken")
        data = answer.body
        actual = sha256_digest(data)
        if actual != digest and answer.encoding:
            # Some servers gzip what they serve (Apache's AddEncoding for .gz): the digest covers
            # the file as published, so the raw bytes count first, the decoded ones second.
            data = inflate_capped(data, answer.encoding, max_bytes, what)
            actual = sha256_digest(data)
        if actual != digest:
            raise IntegrityError(
                f"{what}: {url} serves bytes hashing to {actual[:19]}…, but the index promises {digest[:19]}…; "
                "refusing them (damaged or tampered) — nothing was unpacked"
            )
        if self.cache is not None:
            self.cache.put_blob(data)
        return data
