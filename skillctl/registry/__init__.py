"""Registries: where published skill versions live.

Backends by URL, imported lazily: a plain path (or ``file://``) is the embedded folder registry;
``oci://HOST[:PORT]/NAMESPACE`` is an OCI distribution registry; ``https://HOST`` (or
``http://HOST`` with ``insecure``) is a site publishing the Agent Skills well-known URI, read-only;
``mcp+stdio:'COMMAND ARGS'`` or ``mcp+https://HOST/PATH`` is an MCP server serving the skills
extension, read-only.
The default is a folder in the user's data directory; ``SKILLCTL_REGISTRY`` or ``--registry``
choose another. Opening a folder that holds no registry is a ``NoRegistryError`` — reading
never creates one; a writer asks for that with ``create=True`` (``publish``, ``copy``'s
target). Every backend is a ``skillctl.protocols.Registry``; what it can do besides reading is
in its ``capabilities``.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from skillctl.errors import NoRegistryError, RegistryError, UnsupportedError
from skillctl.protocols import Registry

if TYPE_CHECKING:
    from skillctl.registry.local import LocalRegistry
    from skillctl.registry.rebuild import RebuildReport

ENV_VAR = "SKILLCTL_REGISTRY"
MCP_PREFIX = "mcp+"  # skillctl.mcp.client.PREFIX, kept here so checking a URL imports nothing
MCP_TOKEN_ENV = "SKILLCTL_MCP_TOKEN"


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
    create: bool = False,
    on_create: Callable[[str], None] | None = None,
    allow_damaged: bool = False,
    insecure: bool | None = None,
    username: str | None = None,
    password: str | None = None,
    token: str | None = None,
    **options: Any,
) -> Registry:
    """The registry at ``url`` (default: ``SKILLCTL_REGISTRY``, else the user data folder).

    A folder registry must exist already (else ``NoRegistryError``, naming the path and where it
    came from): a read creates nothing. ``create=True`` makes a missing one, for writers
    (``publish``, the target of a copy), and then calls ``on_create`` with its path, so the
    caller can say so; an OCI namespace or a site has nothing to create. ``allow_damaged=True`` opens a
    folder registry whose index is missing or damaged instead of refusing it (``verify`` reports
    that; nothing else works until ``rebuild_index``). ``insecure``, ``username`` and
    ``password`` say how to reach an oci:// registry; a folder needs none of them, so there they
    have no use. ``token`` is the key of a private well-known site (default there:
    ``SKILLCTL_SITE_TOKEN``); given for any other registry it is a ``RegistryError``, since it
    would go nowhere. Any other option belongs to the backend (``oci://``: ``attempts``,
    ``backoff_s``, ``deadline_s``); one it does not take is a ``RegistryError``.
    """
    given = url
    url = url or default_registry_url()
    site = url.startswith(("https://", "http://"))
    if url.startswith(MCP_PREFIX):
        from skillctl.registry.mcp import McpRegistry  # noqa: PLC0415 - lazy: only MCP users pay for the SDK

        if username is not None or password is not None:
            raise RegistryError(f"an MCP server takes a key ({MCP_TOKEN_ENV}), not a user name or password")
        return _checked(McpRegistry.from_url, "an MCP server (mcp+…)", url, {"insecure": insecure, "token": token, **options})
    if token is not None and not site:
        kind = "an oci:// registry, which takes --username/--password-stdin" if url.startswith("oci://") else "a folder registry"
        raise RegistryError(f"a site key (--token-stdin, token=) is only for a well-known site (https://HOST); {url} is {kind}")
    if url.startswith("oci://"):
        try:
            from skillctl.registry.oci import OciRegistry  # noqa: PLC0415 - lazy: only OCI users pay for it
        except ImportError:
            raise RegistryError("the OCI registry backend is not available in this build of skillctl") from None
        access = {"insecure": insecure, "username": username, "password": password}
        return _checked(OciRegistry.from_url, "an oci:// registry", url, {**access, **options})
    if site:
        from skillctl.registry.wellknown import WellKnownRegistry  # noqa: PLC0415 - lazy, as above

        if username is not None or password is not None:
            raise RegistryError("a well-known site takes a key (--token-stdin or SKILLCTL_SITE_TOKEN), not a user name or "
                                "password; give the key instead")
        return _checked(WellKnownRegistry.from_url, "a well-known site (https://)", url, {"insecure": insecure, "token": token, **options})
    path = _folder_path(url)
    if options:
        raise RegistryError(f"unknown option(s) for a folder registry: {', '.join(sorted(options))}; it takes none")
    return _open_folder(given, path, create=create, allow_damaged=allow_damaged, on_create=on_create)


def check_registry_url(url: str) -> None:
    """Refuse a registry URL that no backend could open, for its spelling alone (an unknown
    scheme, an unclosed ``[``, no host or namespace), before anything is opened or asked: the
    same parsers ``open_registry`` uses, a ``RegistryError`` naming what to write."""
    if url.startswith("oci://"):
        from skillctl.registry.oci.names import parse_oci_url  # noqa: PLC0415 - lazy, as in open_registry

        parse_oci_url(url)
    elif url.startswith(MCP_PREFIX):
        from skillctl.registry.mcp import McpRegistry  # noqa: PLC0415 - lazy, as in open_registry

        McpRegistry.from_url(url, insecure=True)  # spelling only: whether http is allowed is decided when opened
    elif url.startswith(("https://", "http://")):
        from skillctl.registry.wellknown import index_url_for  # noqa: PLC0415 - lazy, as in open_registry

        index_url_for(url)
    else:
        _folder_path(url)


def rebuild_index(url: str | None = None, *, progress: Callable[[str], None] | None = None) -> "RebuildReport":
    """Rebuild the missing or damaged index of the folder registry at ``url`` from its blobs (see
    ``skillctl.registry.rebuild``). Only a folder registry has such an index: elsewhere (an OCI
    registry's tags and manifests, a site's index) this is an ``UnsupportedError``."""
    given = url
    url = url or default_registry_url()
    if url.startswith(("oci://", "https://", "http://", MCP_PREFIX)):
        raise UnsupportedError(
            f"only a folder registry has an index for skillctl to rebuild; {url} keeps its own record (an OCI registry's "
            "tags and manifests, a site's index) — check it with skillctl registry verify"
        )
    with _open_folder(given, _folder_path(url), create=False, allow_damaged=True) as reg:
        return reg.rebuild_index(progress=progress)


def _open_folder(given: str | None, path: Path, **options: Any) -> "LocalRegistry":
    """The folder registry at ``path``; a missing one named by no ``url`` (``given``) says it
    was the default or ``SKILLCTL_REGISTRY``'s, so the message tells what to change."""
    from skillctl.registry.local import LocalRegistry

    try:
        return LocalRegistry(path, **options)
    except NoRegistryError as exc:
        if given or exc.origin:
            raise
        raise NoRegistryError(exc.path, "SKILLCTL_REGISTRY" if os.environ.get(ENV_VAR) else "default") from None


def _folder_path(url: str) -> Path:
    if "://" in url and not url.startswith("file://"):
        scheme = url.split("://", 1)[0]
        raise RegistryError(
            f"unknown registry scheme '{scheme}://'; use a folder path, file://PATH, oci://HOST/NAMESPACE, https://HOST or "
            "mcp+stdio:'COMMAND ARGS' / mcp+https://HOST/PATH"
        )
    return Path(url[len("file://"):] if url.startswith("file://") else url).expanduser()
