"""Sandboxes: where the agent's shell commands run.

Backends are chosen by name and imported only when used, so importing this package costs
nothing and does not need the Docker SDK:

    docker   a hardened container per run (the default; see ``docker_backend``)
    local    plain subprocesses in a temporary folder, no isolation (authoring only; refused
             unless ``allow_unsafe_local=True``)

``open_sandbox(name, **settings)`` returns an unstarted ``skillctl.protocols.Sandbox``; start it
with ``with sandbox:`` (or ``start()``/``stop()`` in ``try/finally``). This is the only place
that knows the backends apart: everything else uses the protocol.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from skillctl.errors import SandboxError
from skillctl.protocols import Sandbox

# name -> (module, class, what to do when its import fails)
BACKENDS: dict[str, tuple[str, str, str]] = {
    "docker": ("skillctl.sandbox.docker_backend", "DockerSandbox", "pip install docker"),
    "local": ("skillctl.sandbox.local_backend", "LocalSandbox", "it needs only the standard library"),
}


# Backends whose sandboxes run an image (and so can have one chosen for them).
IMAGE_BACKENDS = frozenset({"docker"})


def base_image(name: str, image: str | None = None, *, progress: Callable[[str], None] | None = None) -> str | None:
    """The image backend ``name`` would run: ``image`` when given, else for docker the agent
    image of the current recipe (built now if missing). None for a backend that runs no image;
    naming one for it is an error."""
    if name not in BACKENDS:
        raise SandboxError(f"unknown sandbox {name!r}: choose one of {', '.join(sorted(BACKENDS))}")
    if name not in IMAGE_BACKENDS:
        if image is not None:
            raise SandboxError(f"the {name} sandbox runs commands on this machine, not in an image; leave out the image ({image})")
        return None
    if image is not None:
        return image
    from skillctl.sandbox.image import ensure_image

    return ensure_image(progress=progress)


def open_sandbox(
    name: str,
    *,
    image: str | None = None,
    allow_unsafe_local: bool = False,
    progress: Callable[[str], None] | None = None,
    **settings: Any,
) -> Sandbox:
    """An unstarted sandbox of backend ``name``, configured by ``settings``.

    ``image``: for ``docker``, the image to run; None means the agent image of the current
    recipe, built now if missing (``skillctl.sandbox.image.ensure_image``, reporting to
    ``progress``). The local backend runs no image, so naming one is an error there.
    ``allow_unsafe_local`` is the permission the local backend requires (docker needs none).
    ``settings``: ``docker`` takes the fields of ``SandboxSettings``; ``local`` a few
    capture/timeout options and ``extra_dirs``. Unknown ones are an error, never ignored.
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
        from skillctl.sandbox.image import ensure_image
        from skillctl.sandbox.settings import SandboxSettings

        client = settings.pop("client", None)
        checked = SandboxSettings.from_mapping(settings)  # bad settings fail before any image build
        if image is None:
            image = ensure_image(progress=progress, client=client)
        return cls(checked.replace(image=image), client=client)
    base_image(name, image)  # refuses an image for a backend that runs none
    try:
        return cls(allow_unsafe_local=allow_unsafe_local, **settings)
    except TypeError as exc:
        raise SandboxError(f"invalid settings for sandbox {name!r}: {exc}") from exc


__all__ = ["BACKENDS", "open_sandbox"]
