"""The ASGI application: the two API shapes and the well-known site over one registry."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware

from skillctl.bundle import BundleLimits
from skillctl.errors import ConfigError
from skillctl.protocols import Registry
from skillctl.serve import anthropic_api, openai_api, site
from skillctl.serve.context import ServeContext
from skillctl.serve.http import AccessLog, Access, BodyPace
from skillctl.serve.keys import KeyRing
from skillctl.serve.service import SkillService
from skillctl.serve.workers import RegistryWorkers

MiB = 1024 * 1024
# The hosted APIs take zips of up to 50 MB; a multipart body adds a little framing.
DEFAULT_MAX_REQUEST_BYTES = BundleLimits().max_bundle_size + MiB


@dataclass(frozen=True)
class ServeSettings:
    """What a server serves and to whom.

    ``open_registry`` makes a registry client (called once per worker thread). ``keys``: the
    keys file (None: no keys, so only ``public_read`` reads are possible). ``refresh_s``: how
    late changes other writers make to the registry may show. ``audit_gate``: refuse uploads
    with audit findings at or above this severity (None: no audit, as ``skillctl publish``).
    ``body_pace``: how slowly request bodies may arrive before they are answered 408.
    """

    open_registry: Callable[[], Registry]
    registry_url: str
    keys: Path | None = None
    public_read: bool = False
    threads: int = 4
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    body_pace: BodyPace = BodyPace()
    refresh_s: float = 5.0
    audit_gate: str | None = None
    access_log: bool = True
    limits: BundleLimits = field(default_factory=BundleLimits)

    def check(self) -> None:
        if self.keys is None and not self.public_read:
            raise ConfigError("nobody could use this server: give --keys FILE (make one with: skillctl serve key add NAME "
                              "--scopes read,publish --keys FILE), or --public-read to let anyone read")
        if self.keys is not None and not Path(self.keys).is_file():
            raise ConfigError(f"keys file {self.keys} does not exist; make a key first: skillctl serve key add NAME "
                              f"--scopes read --keys {self.keys}")


def build(settings: ServeSettings) -> tuple[Starlette, RegistryWorkers]:
    """The application and its registry workers (not started: the caller starts them before
    serving, so a registry that cannot be opened fails start-up with its own message)."""
    settings.check()
    keys = KeyRing(settings.keys) if settings.keys is not None else None
    workers = RegistryWorkers(settings.open_registry, settings.threads)
    service = SkillService(limits=settings.limits, refresh_s=settings.refresh_s, audit_gate=settings.audit_gate)
    ctx = ServeContext(
        service=service,
        workers=workers,
        access=Access(keys, settings.public_read),
        site=site.SiteCache(lambda: service.generation, settings.refresh_s),
        limits=settings.limits,
        max_request_bytes=settings.max_request_bytes,
        body_pace=settings.body_pace,
        # One upload per worker thread in memory at a time: each may hold the body, its files
        # and the packed bundle (about three times --max-request-bytes).
        upload_slots=asyncio.Semaphore(settings.threads),
    )
    routes = [*openai_api.routes(ctx), *anthropic_api.routes(ctx), *site.routes(ctx)]
    middleware = [Middleware(AccessLog)] if settings.access_log else []
    return Starlette(routes=routes, middleware=middleware), workers
