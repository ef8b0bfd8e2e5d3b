"""What every route of a running server shares."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from skillctl.bundle import BundleLimits
from skillctl.serve.http import Access, BodyPace
from skillctl.serve.service import SkillService
from skillctl.serve.site import SiteCache
from skillctl.serve.workers import RegistryWorkers


@dataclass(frozen=True)
class ServeContext:
    service: SkillService
    workers: RegistryWorkers
    access: Access
    site: SiteCache
    limits: BundleLimits
    max_request_bytes: int
    body_pace: BodyPace
    upload_slots: asyncio.Semaphore  # uploads held in memory at once
