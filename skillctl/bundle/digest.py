"""Content digests in the one spelling skillctl uses everywhere: ``sha256:<64 hex>``."""

from __future__ import annotations

import hashlib

ALGORITHM = "sha256"


def sha256_digest(data: bytes) -> str:
    """``"sha256:" + hexdigest`` of ``data`` (the OCI / lockfile spelling)."""
    return f"{ALGORITHM}:{hashlib.sha256(data).hexdigest()}"


def format_digest(hexdigest: str) -> str:
    return f"{ALGORITHM}:{hexdigest}"
