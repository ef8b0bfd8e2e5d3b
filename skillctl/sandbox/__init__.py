"""Sandboxes: where the agent's shell commands run (MISSION D1–D5).

Backends are chosen by name and imported only when used, so importing this package costs
nothing and does not need the Docker SDK:

    docker   a hardened container per run (the default; see ``docker_backend``)
    local    plain subprocesses in a temporary folder, no isolation (authoring only; refused
             unless ``allow_unsafe_local=True``)

``open_sandbox(name, **settings)`` returns an unstarted ``skillctl.protocols.Sandbox``; start it
with ``with sandbox:`` (or ``start()``/``stop()`` in ``try/finally``). The agent image is built
by ``skillctl.sandbox.image.ensure_image``.
"""

from __future__ import annotations

import importlib
from typing import Any

from skillctl.errors import SandboxError
from skillctl.protocols import Sandbox

# name -> (module, class, what to do when its import fails)
BACKENDS: dict[str, tuple[str, str, str]] = {
    "docker": ("skillctl.sandbox.docker_backend", "DockerSandbox", "pip install docker"),
    "local": ("skillctl.sandbox.local_backend", "LocalSandbox", "it needs only the standard library"),
}


def open_sandbox(name: str, **settings: Any) -> Sandbox:
    """An unstarted sandbox of backend ``name``, configured by ``settings``.

    ``docker`` takes the fields of ``SandboxSettings`` (unknown ones are a ``ConfigError``);
    ``local`` takes ``allow_unsafe_local=True`` (required) and a few capture/timeout options.
    """
    if name not in BACKENDS:
        raise SandboxError(f"unknown sandbox {name!r}: choose one of {', '.join(sorted(BACKENDS))}")
    module_name, class_name, hint = BACKENDS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SandboxError(f"sandbox {name!r} is not available ({exc}): {hint}") from exc
    cls = getattr(module, class_name)
    if name == "docker":
        from skillctl.sandbox.settings import SandboxSettings

        client = settings.pop("client", None)
        return cls(SandboxSettings.from_mapping(settings), client=client)
    try:
        return cls(**settings)
    except TypeError as exc:
        raise SandboxError(f"invalid settings for sandbox {name!r}: {exc}") from exc


__all__ = ["BACKENDS", "open_sandbox"]
