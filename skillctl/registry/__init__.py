"""Registries: where published skill versions live.

Backends by URL, imported lazily: a plain path (or ``file://``) is the embedded folder registry;
``oci://HOST[:PORT]/NAMESPACE`` is an OCI distribution registry. The default is a folder in the
user's data directory; ``SKILLCTL_REGISTRY`` or ``--registry`` choose another.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from skillctl.errors import RegistryError

ENV_VAR = "SKILLCTL_REGISTRY"


def default_registry_url() -> str:
    env = os.environ.get(ENV_VAR)
    if env:
        return env
    from platformdirs import user_data_dir

    return str(Path(user_data_dir("skillctl")) / "registry")


def open_registry(url: str | None = None, **options: Any) -> Any:
    """The registry at ``url`` (default: ``SKILLCTL_REGISTRY``, else the user data folder)."""
    url = url or default_registry_url()
    if url.startswith("oci://"):
        try:
            from skillctl.registry.oci import OciRegistry  # noqa: PLC0415 - lazy: only OCI users pay for it
        except ImportError:
            raise RegistryError("the OCI registry backend is not available in this build of skillctl") from None
        return OciRegistry.from_url(url, **options)
    if "://" in url and not url.startswith("file://"):
        scheme = url.split("://", 1)[0]
        raise RegistryError(f"unknown registry scheme '{scheme}://'; use a folder path, file://PATH or oci://HOST/NAMESPACE")
    from skillctl.registry.local import LocalRegistry

    path = url[len("file://"):] if url.startswith("file://") else url
    return LocalRegistry(Path(path).expanduser(), create=options.get("create", True))
