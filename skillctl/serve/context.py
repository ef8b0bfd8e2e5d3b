"""What every route of a running server shares."""

from __future__ import annotations

from dataclasses import dataclass

from skillctl.bundle import BundleLimits
from skillctl.serve.http import Access
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
