"""Loading skills into a sandbox before the first prompt, in a fixed order:

1. resolve every reference and read its metadata from the store (name, description, digest);
2. fetch each bundle (the store verifies its sha256, and so does the loader), check it as a
   hostile archive, then — only once every bundle passed — copy the verified contents into the
   sandbox in one archive, unpacked there under ``/skills/NAME/`` (``put_archive``: no bind
   mounts);
3. render the catalog for c₁ from the metadata, sorted by name.

The same references against the same registry content give the same catalog bytes. This is the
library API other agent runtimes call; ``skillctl run`` uses it too. It knows only the
``Store`` and ``Sandbox`` protocols.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from skillctl.bundle import DEFAULT_MTIME, BundleContents, read_artifact, sha256_digest
from skillctl.bundle.canonical import canonical_tar, sorted_entries
from skillctl.errors import IntegrityError, LoadError
from skillctl.protocols import ResolvedSkill, Sandbox, Store
from skillctl.runtime.catalog import DEFAULT_BUDGET_CHARS, CatalogEntry, render_catalog

SKILLS_ROOT = "/skills"


@dataclass(frozen=True)
class LoadedSkill:
    id: str
    name: str
    version: str
    description: str
    digest: str
    path: str  # folder inside the sandbox
    location: str  # SKILL.md inside the sandbox


@dataclass(frozen=True)
class LoadedSkills:
    catalog_text: str
    skills: tuple[LoadedSkill, ...]
    warnings: tuple[str, ...] = ()


def _skills_tar(contents: Sequence[BundleContents]) -> bytes:
    """One canonical tar holding every skill as ``NAME/…`` (folders 0755, files 0644 or 0755,
    owned by root: the agent can read and run skills but not change them)."""
    entries = []
    for c in contents:
        files = {rel: (data, rel in c.executables) for rel, data in c.files.items()}
        entries += sorted_entries(c.name, files, c.dirs)
    return canonical_tar(entries, DEFAULT_MTIME)


def resolve_all(store: Store, refs: Sequence[str | ResolvedSkill]) -> list[ResolvedSkill]:
    """Step 1: metadata for every reference; duplicates of the same skill are refused."""
    resolved: list[ResolvedSkill] = []
    seen: dict[str, str] = {}
    for ref in refs:
        rs = ref if isinstance(ref, ResolvedSkill) else store.resolve(ref)
        if rs.name in seen and seen[rs.name] != rs.version:
            raise LoadError(f"skill {rs.name} requested twice with different versions ({seen[rs.name]} and {rs.version}); keep one")
        if rs.name not in seen:
            seen[rs.name] = rs.version
            resolved.append(rs)
    return sorted(resolved, key=lambda r: r.name)


def catalog_for(skills: Sequence[ResolvedSkill], *, root: str = SKILLS_ROOT, budget_chars: int = DEFAULT_BUDGET_CHARS):
    entries = [CatalogEntry(s.name, s.description, posixpath.join(root, s.name, "SKILL.md")) for s in skills]
    return render_catalog(entries, budget_chars=budget_chars, root_hint=root)


def fetch_bundles(store: Store, skills: Sequence[ResolvedSkill]) -> dict[str, BundleContents]:
    """Step 2's first half: fetch every bundle and check it (its sha256 against the resolved
    digest, then as a hostile archive); the verified contents by digest. Fetched once, they
    serve everyone who reads the skills before the run — the loader and the environment."""
    verified: dict[str, BundleContents] = {}
    for rs in skills:
        if rs.digest in verified:
            continue
        data = store.fetch(rs)
        if sha256_digest(data) != rs.digest:
            raise IntegrityError(f"{rs.name}@{rs.version}: bundle does not match its digest {rs.digest[:19]}…")
        verified[rs.digest] = read_artifact(data, rs.artifact_type, expected_name=rs.name,
                                            source=f"{rs.name}@{rs.version}")
    return verified


def load_skills(
    refs: Sequence[str | ResolvedSkill],
    store: Store,
    sandbox: Sandbox,
    *,
    root: str | None = None,
    catalog_budget_chars: int = DEFAULT_BUDGET_CHARS,
    progress: Callable[[str], None] | None = None,
    bundles: Mapping[str, BundleContents] | None = None,
) -> LoadedSkills:
    """Resolve, fetch, verify and unpack ``refs`` into ``sandbox``; return the c₁ catalog.

    ``refs`` may be reference strings or already-resolved skills (e.g. from a skills.lock, whose
    digests are then enforced: the store must serve exactly those bytes). ``bundles``: contents
    ``fetch_bundles`` already verified, by digest; only the skills missing there are fetched.
    """
    # Where the agent sees the skills: /skills in a container, a folder on this machine for the
    # local backend. ``root`` overrides only what the catalog says (a runtime that maps paths).
    root = root or sandbox.skills_root
    resolved = resolve_all(store, refs)  # step 1 for all skills before any copying: fail early
    # Step 2 in two halves: fetch and verify *every* bundle before copying any, so a tampered or
    # hostile bundle leaves the sandbox untouched instead of half loaded.
    have = dict(bundles or {})
    have.update(fetch_bundles(store, [rs for rs in resolved if rs.digest not in have]))
    verified = [have[rs.digest] for rs in resolved]
    for rs, contents in zip(resolved, verified):
        if (contents.name, contents.digest) != (rs.name, rs.digest):  # a caller's map, keyed wrongly
            raise IntegrityError(f"{rs.name}@{rs.version}: the bundle given for it is {contents.name} {contents.digest[:19]}…")
    # One copy for all skills: each put_archive costs the daemon a fixed ~50–80 ms (it sets up a
    # helper in the container's mounts), which made copying dominate the time to first prompt.
    # The archive is rebuilt from the verified contents, so what lands is exactly what was checked.
    if verified:
        sandbox.put_archive(sandbox.skills_root, _skills_tar(verified))
    loaded: list[LoadedSkill] = []
    for rs in resolved:
        path = posixpath.join(root, rs.name)
        loaded.append(LoadedSkill(rs.id, rs.name, rs.version, rs.description, rs.digest, path, posixpath.join(path, "SKILL.md")))
        if progress:
            progress(f"loaded {rs.name}@{rs.version} -> {path}/")
    catalog = catalog_for(resolved, root=root, budget_chars=catalog_budget_chars)  # step 3
    warning = catalog.warning()
    if warning and progress:
        progress(f"warning: {warning}")
    return LoadedSkills(catalog.text, tuple(loaded), (warning,) if warning else ())
