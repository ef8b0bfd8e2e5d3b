"""Registries: where published skill versions live.

Backends by URL, imported lazily: a plain path (or ``file://``) is the embedded folder registry;
``oci://HOST[:PORT]/NAMESPACE`` is an OCI distribution registry; ``https://HOST`` (or
``http://HOST`` with ``insecure``) is a site publishing the Agent Skills well-known URI, read-only.
The default is a folder in the user's data directory; ``SKILLCTL_REGISTRY`` or ``--registry``
choose another. Every backend is a ``skillctl.protocols.Registry``; what it can do besides reading
is in its ``capabilities``.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any, Callable

from skillctl.errors import RegistryError
from skillctl.protocols import Registry

ENV_VAR = "SKILLCTL_REGISTRY"


def default_registry_url() -> str:
    env = os.environ.get(ENV_VAR)
    if env:
        return env
    from platformdirs import user_data_dir

    return str(Path(user_data_dir("skillctl")) / "registry")


def _checked(opener: Callable[..., Registry], kind: str, url: str, options: dict[str, Any]) -> Registry:
    """``opener(url, **options)``, after refusing options it does not take (one line, listing
    the valid ones) instead of letting them vanish or surface as a TypeError."""
    params = inspect.signature(opener).parameters
    valid = sorted(n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise RegistryError(
            f"unknown option(s) for {kind}: {', '.join(unknown)}; valid: {', '.join(valid) or 'none'}"
        )
    return opener(url, **options)


def open_registry(
    url: str | None = None,
    *,
    create: bool = True,
    insecure: bool | None = None,
    username: str | None = None,
    password: str | None = None,
    **options: Any,
) -> Registry:
    """The registry at ``url`` (default: ``SKILLCTL_REGISTRY``, else the user data folder).

    ``create=False`` requires a folder registry to exist already. ``insecure``, ``username`` and
    ``password`` say how to reach a remote registry; a folder needs none of them, so there they
    have no use. Any other option belongs to the backend (``oci://``: ``attempts``,
    ``backoff_s``); one it does not take is a ``RegistryError``.
    """
    url = url or default_registry_url()
    if url.startswith("oci://"):
        try:
            from skillctl.registry.oci import OciRegistry  # noqa: PLC0415 - lazy: only OCI users pay for it
        except ImportError:
            raise RegistryError("the OCI registry backend is not available in this build of skillctl") from None
        access = {"insecure": insecure, "username": username, "password": password}
        return _checked(OciRegistry.from_url, "an oci:// registry", url, {**access, **options})
    if url.startswith(("https://", "http://")):
        from skillctl.registry.wellknown import WellKnownRegistry  # noqa: PLC0415 - lazy, as above

        # A site is read anonymously: credentials given for it are refused, not ignored.
        access = {k: v for k, v in (("username", username), ("password", password)) if v is not None}
        return _checked(WellKnownRegistry.from_url, "a well-known site (https://)", url, {"insecure": insecure, **access, **options})
    if "://" in url and not url.startswith("file://"):
        scheme = url.split("://", 1)[0]
        raise RegistryError(
            f"unknown registry scheme '{scheme}://'; use a folder path, file://PATH, oci://HOST/NAMESPACE or https://HOST"
        )
    from skillctl.registry.local import LocalRegistry

    if options:
        raise RegistryError(f"unknown option(s) for a folder registry: {', '.join(sorted(options))}; it takes none")
    path = url[len("file://"):] if url.startswith("file://") else url
    return LocalRegistry(Path(path).expanduser(), create=create)
