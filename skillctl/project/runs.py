"""What a project's lock makes of a run: the skills it pins, from their sources, under the policy
the lock was written with — the same for ``skillctl run --lock`` and ``RunSpec(lock=…)``.

``locked_run(lock_path, registry=…)`` opens everything a run reads from a lock: a ``ProjectStore``
serving the locked skills (registry skills from the registry each was locked from — the URL the
project names now, else the one the lock recorded; ``registry`` given explicitly replaces the
default registry, as ``--registry`` does), the trust gate of the lock's policy (every key file
still holding the key the lock recorded, and the skills.yaml beside it, if any, with the same
``trust:`` section), and the lock's environment section. Skills named beside the lock go to the
``registry`` (opened only if one is named), held to the same gate.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillctl.project.lock import Lock, read_lock
from skillctl.project.sources import ProjectSources, locked_registry_url
from skillctl.project.spec import REQUIREMENTS_FILE, Project, load_project
from skillctl.project.store import ProjectStore
from skillctl.protocols import RegistryReader, ResolvedSkill

if TYPE_CHECKING:
    from skillctl.trust.enforce import Gate

Progress = Callable[[str], None]


@dataclass
class LockedRun:
    lock: Lock
    store: ProjectStore
    gate: "Gate | None"
    project: Project | None

    def skills(self) -> list[ResolvedSkill]:
        return self.store.locked()


def _opener(registry: str | RegistryReader | None) -> tuple[Callable[[str], RegistryReader], str | None]:
    """(open a registry URL, the URL that replaces the default registry): an open registry the
    caller handed in serves its own URL."""
    from skillctl.registry import open_registry

    if registry is not None and not isinstance(registry, str):
        from skillctl.sources.registry import Borrowed

        given = registry

        def opener(url: str) -> RegistryReader:
            return Borrowed(given) if url == given.url else open_registry(url, create=False)  # type: ignore[return-value]

        return opener, given.url
    return (lambda url: open_registry(url, create=False)), registry


@contextmanager
def locked_run(lock_path: Path, *, registry: str | RegistryReader | None = None, progress: Progress | None = None,
               allow_unsigned: bool = False) -> Iterator[LockedRun]:
    from skillctl.project.resolve import check_pins
    from skillctl.trust.enforce import lock_gate

    lock = read_lock(lock_path)
    folder = Path(os.path.abspath(lock_path)).parent
    beside = folder / REQUIREMENTS_FILE
    project = load_project(beside) if beside.exists() else None
    opener, override = _opener(registry)
    sources = ProjectSources(folder, registry_opener=opener)
    urls = {s.name: locked_registry_url(s.source, project, override) for s in lock.skills if s.kind == "registry"}

    def fallback() -> RegistryReader:
        """Where skills named beside the lock resolve: the registry given, else the default one —
        opened only if one is named."""
        if registry is not None and not isinstance(registry, str):
            return registry
        from skillctl.registry import default_registry_url

        return sources.registry(registry or default_registry_url())

    try:
        gate = lock_gate(lock.trust_section, (lock.trust or {}).get("keys", {}), folder,
                         where=str(beside if beside.exists() else lock_path), progress=progress,
                         current_trust=project.trust if project is not None else ...)
        store = ProjectStore(lock, sources, urls=urls, fallback=fallback)
        if gate is not None:
            check_pins(lock.skills, sources, gate, allow_unsigned=allow_unsigned,
                       locked_signers={s.name: s.signer for s in lock.skills}, url_of=store.url_of)
        yield LockedRun(lock, store, gate, project)
    finally:
        sources.close()


def project_network(lock_path: Path | None, project_file: Path | None, *, allow_secrets: bool) -> Any:
    """The network policy a project gives a run — the ``network:`` of its skills.yaml, the one
    beside the lock when there is a lock —, or None without one; its secrets only with
    ``allow_secrets`` (``skillctl.egress.policy.project_policy`` refuses them otherwise)."""
    from skillctl.egress.policy import project_policy
    from skillctl.project.spec import project_file as beside

    path = beside(lock_path) if lock_path is not None else project_file
    if path is None:
        return None
    return project_policy(path, allow_secrets=allow_secrets)
