"""Locks for library users who hold an open registry and a few ranges, no project folder:

    lock = lock_skills({"tally": "^1", "csv-sql": "~2.0"}, registry)
    folders = install_locked(lock, registry, Path(".agents/skills"))

The same resolution and checks as ``skillctl lock``/``install`` (``lock_project``, ``ProjectStore``):
every version is recorded with its digests; installing fetches and checks every bundle before
the first folder is written, and a registry that now serves other bytes is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skillctl.bundle import sha256_digest, write_contents
from skillctl.errors import IntegrityError
from skillctl.project.lock import Lock, LockedSkill
from skillctl.project.resolve import lock_project
from skillctl.project.sources import ProjectSources
from skillctl.project.spec import parse_project
from skillctl.project.store import ProjectStore
from skillctl.project.sync import fetch_checked
from skillctl.protocols import RegistryReader, ResolvedSkill
from skillctl.sources.registry import Borrowed


def _sources(registry: RegistryReader) -> ProjectSources:
    return ProjectSources(Path.cwd(), registry_opener=lambda url: Borrowed(registry))  # type: ignore[arg-type,return-value]


def lock_skills(skills: Mapping[str, str], registry: RegistryReader, *, prereleases: bool = False) -> Lock:
    """The lock of ``skills`` (name → range) in ``registry``; nothing is written."""
    project = parse_project({"skills": dict(skills), "prereleases": prereleases}, Path("skills.yaml"))
    with _sources(registry) as sources:
        lock, _ = lock_project(project, sources, registry_override=registry.url)
    return lock


def resolve_locked(registry: RegistryReader, skill: LockedSkill) -> ResolvedSkill:
    """The registry's record for a locked version, refused unless it has the locked digest
    (resolved by name and exact version: a mirror holding the same bytes serves it too)."""
    with _sources(registry) as sources:
        return sources.registry_record(skill.pin(registry.url))


def fetch_locked(registry: RegistryReader, skill: LockedSkill) -> tuple[ResolvedSkill, bytes]:
    rec = resolve_locked(registry, skill)
    data = registry.fetch(rec)
    if sha256_digest(data) != skill.digest:
        raise IntegrityError(f"{skill.label()}: fetched bytes do not match skills.lock ({skill.digest[:19]}…)")
    return rec, data


def install_locked(lock: Lock, registry: RegistryReader, dest: Path) -> list[Path]:
    """Every locked skill into ``dest/NAME/`` (plain folders, replaced when different); all
    fetched and checked before the first is written. The folders, sorted by name."""
    with _sources(registry) as sources:
        store = ProjectStore(lock, sources, urls={s.name: registry.url for s in lock.skills})
        contents = fetch_checked(lock, store, [s.name for s in lock.skills])
    return [write_contents(contents[name], dest, overwrite=True) for name in sorted(contents)]
