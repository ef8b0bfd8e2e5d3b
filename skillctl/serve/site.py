"""``/.well-known/agent-skills/…``: the registry as an Agent Skills well-known site.

The files are exactly those ``skillctl site build`` writes (``SiteBuilder``: the latest
``index.json``, per skill ``versions.json``, and per version an immutable snapshot index beside
its artifact), made in memory and served with the format's content types, GET and HEAD, an
``ETag`` (``If-None-Match`` answered with 304), ``Cache-Control`` saying which files never change,
and 404 for anything else.

The site is rebuilt when the registry changed: at once after a write through this server, and
about ``refresh_s`` seconds late for writes by others (then one request rebuilds it while the
others are answered from the previous build). A rebuild reuses every snapshot whose
version still has the same bundle digest, so it costs one pass over the registry's records, not
one artifact per version. Building a version's artifact reads its bundle, which the folder
registry counts as a download (such a version can then be yanked but no longer deleted).
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from skillctl.protocols import Registry
from skillctl.registry.wellknown.format import WELL_KNOWN_DIR
from skillctl.registry.wellknown.site import SiteBuilder, SiteFile
from skillctl.serve.errors import ApiError
from skillctl.serve.http import endpoint
from skillctl.serve.keys import READ

if TYPE_CHECKING:
    from skillctl.serve.context import ServeContext

IMMUTABLE = "public, max-age=31536000, immutable"
MUTABLE = "no-cache"


@dataclass(frozen=True)
class Served:
    """One file as the server answers with it."""

    data: bytes
    content_type: str
    etag: str
    cache_control: str


def _served(f: SiteFile) -> Served:
    etag = '"' + hashlib.sha256(f.data).hexdigest()[:32] + '"'
    return Served(f.data, f.content_type, etag, IMMUTABLE if f.immutable else MUTABLE)


def _version_of(path: str) -> tuple[str, str] | None:
    """(name, version) of a snapshot file ``…/NAME/vVERSION/FILE``."""
    parts = path[len(WELL_KNOWN_DIR) + 1 :].split("/")
    if len(parts) == 3 and parts[1].startswith("v"):
        return parts[0], parts[1][1:]
    return None


class SiteCache:
    def __init__(self, generation: Callable[[], int], refresh_s: float = 5.0) -> None:
        self._generation = generation
        self.refresh_s = refresh_s
        self._lock = threading.Lock()
        self._files: dict[str, SiteFile] = {}
        self._served: dict[str, Served] = {}
        self._digests: dict[tuple[str, str], str] = {}
        self._built_generation: int | None = None
        self._built_at = 0.0

    def get(self, reg: Registry, path: str) -> Served | None:
        """The file at ``path`` (relative to the site root, e.g. ``.well-known/agent-skills/index.json``).

        After a write through this server the site is rebuilt before anyone reads it; a site
        that is merely old is rebuilt by one caller while the others keep reading it."""
        generation = self._generation()
        if self._built_generation == generation:
            fresh = time.monotonic() - self._built_at <= self.refresh_s
            if fresh or not self._lock.acquire(blocking=False):
                return self._served.get(path)
            try:
                self._rebuild(reg, generation)
            finally:
                self._lock.release()
            return self._served.get(path)
        with self._lock:
            generation = self._generation()
            if self._built_generation != generation:
                self._rebuild(reg, generation)
            return self._served.get(path)

    def _rebuild(self, reg: Registry, generation: int) -> None:
        old_files, old_digests = self._files, self._digests
        current: dict[tuple[str, str], str] = {}

        def existing(path: str) -> bytes | None:
            """A snapshot file from the last build, while its version's bundle is unchanged."""
            key = _version_of(path)
            old = old_files.get(path)
            if key is None or old is None or not old.immutable:
                return None
            return old.data if old_digests.get(key) is not None and old_digests.get(key) == current.get(key) else None

        builder = SiteBuilder(reg, existing=existing)
        for name, versions in builder.skills().items():
            for v in versions:
                if v.record is not None:
                    current[(name, v.version)] = v.record.digest
        files = {f.path: f for f in builder.files()}
        old_served = self._served

        def served(path: str, f: SiteFile) -> Served:
            old = old_files.get(path)
            return old_served[path] if old is not None and old.data is f.data and path in old_served else _served(f)

        self._files, self._digests = files, current
        self._served = {path: served(path, f) for path, f in files.items()}
        self._built_generation, self._built_at = generation, time.monotonic()


class SiteShape:
    """Refusals on the well-known paths: plain text, as a static web server would answer."""

    request_id_header = "x-request-id"

    def error(self, err: ApiError, request_id: str) -> Response:
        headers = {"www-authenticate": "Bearer"} if err.status == 401 else {}
        return PlainTextResponse(err.message + "\n", status_code=err.status, headers=headers)


def routes(ctx: "ServeContext") -> list[BaseRoute]:
    shape = SiteShape()

    async def serve_file(request: Request) -> Response:
        path = f"{WELL_KNOWN_DIR}/{request.path_params['path']}"
        found = await ctx.workers.run(ctx.site.get, path)
        if found is None:
            raise ApiError(404, f"not found: /{path}")
        headers = {"etag": found.etag, "cache-control": found.cache_control}
        if request.headers.get("if-none-match") == found.etag:
            return Response(status_code=304, headers=headers)
        if request.method == "HEAD":
            return Response(status_code=200, headers={**headers, "content-type": found.content_type,
                                                      "content-length": str(len(found.data))})
        return Response(found.data, headers={**headers, "content-type": found.content_type})

    handler = endpoint(shape, ctx.access, READ, serve_file)
    return [Route(f"/{WELL_KNOWN_DIR}/{{path:path}}", handler, methods=["GET", "HEAD"])]
