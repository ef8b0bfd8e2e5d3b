"""From skills to an image: collect → resolve → fetch (verified) → build, as one call.

``environment_image`` is what a run calls: given the skills it loads (and, optionally, the
project's declarations or a lock's environment), it returns the image to start — the agent image
itself when nothing is declared, otherwise the environment image, built on first use and reused
after that. Every step reports progress through one callback.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillctl.env.declare import Declarations, skill_declarations
from skillctl.env.resolve import IndexOption, PackageFile, Resolution, check_requires_python, resolve, uv_binary, uv_version
from skillctl.env.target import Target, probe_image
from skillctl.errors import EnvError

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Environment:
    """A resolved environment: what was declared, for which target, and every pinned file."""

    declarations: Declarations
    python: Resolution
    debian: tuple[Any, ...] = ()  # skillctl.env.debian.DebianPackage

    @property
    def target(self) -> Target:
        return self.python.target

    @property
    def empty(self) -> bool:
        return not self.python.files and not self.debian

    def inputs_digest(self) -> str:
        return digest_of(self.declarations.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.to_dict(),
            "index_url": self.python.index_url,
            **index_fields(self.python),
            "declared": self.declarations.to_dict(),
            "python": [f.to_dict() for f in self.python.files],
            "debian": [d.to_dict() for d in self.debian],
        }


def index_fields(python: Resolution) -> dict[str, Any]:
    """``extra_index_urls`` and ``indexes`` (pinned) of a resolution, when it used more than
    ``index_url`` (no credentials: ``Indexes`` never holds them)."""
    where = python.indexes
    if where is None:
        return {}
    return {"extra_index_urls": list(where.extra), "indexes": [p.to_dict() for p in where.pinned]}


def digest_of(doc: Any) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def declarations_of(skills: Sequence[Any], store: Any, bundles: Mapping[str, Any] | None = None) -> Declarations:
    """What each skill declares, read from its verified bundle: from ``bundles`` (contents a
    run already fetched and verified, by digest) when there, else fetched now (``store.fetch``
    checks the digest; ``read_artifact`` checks the archive, whatever its type)."""
    from skillctl.bundle import read_artifact

    total = Declarations()
    for skill in skills:
        contents = (bundles or {}).get(skill.digest)
        if contents is None:
            contents = read_artifact(store.fetch(skill), skill.artifact_type, expected_name=skill.name,
                                     source=f"{skill.name}@{skill.version}")
        files = contents.files
        total = total + skill_declarations(skill.name, list(files), lambda rel: bytes(files[rel]))
    return total


def resolve_environment(
    decl: Declarations,
    target: Target,
    *,
    index: IndexOption = None,
    allow_sdist: bool = False,
    refresh: bool = False,
    base_image: str = "",
    client: Any = None,
    ignore_requires_python: Collection[str] = (),
    progress: Progress | None = None,
) -> Environment:
    builder = None
    if allow_sdist:
        from skillctl.env.resolve import invocation_indexes
        from skillctl.env.sdist import SdistBuilder

        builder = SdistBuilder(client, base_image, target, invocation_indexes(decl, index), progress=progress)
    python = resolve(decl, target, index=index, allow_sdist=allow_sdist, builder=builder, refresh=refresh,
                     ignore_requires_python=ignore_requires_python, progress=progress)
    debian: tuple[Any, ...] = ()
    if decl.debian:
        from skillctl.env.debian import resolve_debian

        debian = tuple(resolve_debian(sorted({d.requirement for d in decl.debian}), target, client=client,
                                      base_image=base_image, refresh=refresh, progress=progress))
    return Environment(decl, python, debian)


def build_environment(env: Environment, client: Any, base_image: str, *, progress: Progress | None = None,
                      force: bool = False) -> str:
    """The environment image's tag: found by the environment's hash when it exists, otherwise
    every file is fetched (hash-checked) and the image built."""
    from skillctl.env.build import EnvFile, build_env_image, env_hash, existing_env_image
    from skillctl.env.files import Wanted, ensure_files

    if env.empty:
        return base_image
    say = progress or (lambda _line: None)
    uv = uv_binary()
    pairs = [(f.filename, f.sha256) for f in env.python.files]
    deb_pairs = [(d.filename, d.sha256) for d in env.debian]
    base, digest, tag = existing_env_image(client, base_image, lambda base_id: env_hash(base_id, pairs, deb_pairs, uv_version(uv)),
                                           force)
    if tag is not None:
        say(f"environment image {tag} is up to date")
        return tag
    wanted = [Wanted(f.filename, f.url, f.sha256, f.size) for f in env.python.wheels] + [
        Wanted(d.filename, d.url, d.sha256, d.size) for d in env.debian
    ]
    paths = ensure_files(wanted, progress=progress)
    wheels = [EnvFile(p, f.sha256, f.pin) for p, f in zip(paths, env.python.wheels)]
    debs = [EnvFile(p, d.sha256, d.pin) for p, d in zip(paths[len(wheels):], env.debian)]
    if env.python.sdists:
        # A lock made with --allow-sdist pins the sdists; their wheels are built (or were built)
        # here, in containers, from those hash-checked files.
        from skillctl.env.sdist import SdistBuilder

        builder = SdistBuilder(client, base_image, env.target, env.python.index_list(), progress=progress)
        for sdist in env.python.sdists:
            path, sha = builder.wheel_for(sdist)
            wheels.append(EnvFile(path, sha, sdist.pin))
    return build_env_image(client, base, digest, wheels, debs, uv_bin=uv, progress=progress, force=force,
                           uv=uv_version(uv))


def covers(files: Sequence[PackageFile], decl: Declarations, target: Target) -> list[str]:
    """Requirements in ``decl`` that ``files`` do not satisfy (empty when all are covered)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    have = {f.name: f.version for f in files}
    env = target.marker_environment()
    missing = []
    for d in decl.python:
        req = Requirement(d.requirement)
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        version = have.get(canonicalize_name(req.name))
        if version is None or not req.specifier.contains(version, prereleases=True):
            missing.append(f"{d.owner}: {d.requirement}")
    return missing


def environment_image(
    skills: Sequence[Any],
    store: Any,
    *,
    base_image: str,
    project: Declarations | None = None,
    locked: Environment | None = None,
    index: IndexOption = None,
    allow_sdist: bool = False,
    client: Any = None,
    bundles: Mapping[str, Any] | None = None,
    ignore_requires_python: Collection[str] = (),
    progress: Progress | None = None,
) -> str:
    """The image a run with ``skills`` should start: ``base_image`` when nothing is declared,
    else the environment image (resolved, fetched and built only when not cached).

    With ``locked`` (a lock's environment) nothing is resolved: the locked files are used
    exactly, and a skill that needs something the lock lacks is refused.

    A skill's ``requires-python`` is held against the image's Python whether or not it declares
    anything else (one rule), except for the skills in ``ignore_requires_python``.
    """
    from skillctl.sandbox.client import docker_client

    say = progress or (lambda _line: None)
    decl = declarations_of(skills, store, bundles) + (project or Declarations())
    if locked is None and decl.empty and not decl.requires_python:
        return base_image
    client = client or docker_client()
    target = probe_image(client, base_image)
    check_requires_python(decl, target, ignore_requires_python, say)
    if locked is None and decl.empty:
        return base_image
    if locked is not None:
        if locked.target != target:
            raise EnvError(
                f"the lock's environment was resolved for Python {locked.target.python} on {locked.target.uv_platform}, "
                f"but the agent image has Python {target.python} on {target.uv_platform}; run skillctl lock again"
            )
        missing = covers(locked.python.files, decl, target)
        lacking_debs = {d.requirement for d in decl.debian} - {p.package for p in locked.debian}
        if missing or lacking_debs:
            raise EnvError(
                f"the lock's environment does not provide {', '.join(missing + sorted(lacking_debs))}; add the skill "
                "to skills.yaml and run skillctl lock"
            )
        env = locked
    else:
        say(f"environment: {len(decl.python)} Python requirement(s), {len(decl.debian)} Debian package(s) "
            f"declared by {', '.join(decl.owners())}")
        env = resolve_environment(decl, target, index=index, allow_sdist=allow_sdist, base_image=base_image,
                                  client=client, ignore_requires_python=ignore_requires_python, progress=progress)
    return build_environment(env, client, base_image, progress=progress)


# ------------------------------------------------------------------------------ project locks


def lock_environment(
    skills: Sequence[Any],
    store: Any,
    project_environment: Any,
    lock_path: Any,
    *,
    base_image: str,
    index: IndexOption = None,
    allow_sdist: bool = False,
    client: Any = None,
    ignore_requires_python: Collection[str] = (),
    progress: Progress | None = None,
) -> dict[str, Any] | None:
    """Resolve the environment of a project lock — what its ``skills`` declare (read through
    ``store``) and skills.yaml's ``environment`` section (``project_environment``) —, write the
    pylock beside ``lock_path`` and return the section for skills.lock (None when nothing is
    declared). A ``requires-python`` the image cannot meet is refused here, at lock time, unless
    its skill is in ``ignore_requires_python`` (which the lock then records)."""
    from skillctl.env.declare import project_declarations
    from skillctl.env.lock import environment_section
    from skillctl.sandbox.client import docker_client

    decl = declarations_of(sorted(skills, key=lambda s: s.name), store) + project_declarations(project_environment)
    if decl.empty and not decl.requires_python:
        return None
    client = client or docker_client()
    target = probe_image(client, base_image)
    check_requires_python(decl, target, ignore_requires_python, progress)
    if decl.empty:
        return None
    env = resolve_environment(decl, target, index=index, allow_sdist=allow_sdist, refresh=True,
                              base_image=base_image, client=client, ignore_requires_python=ignore_requires_python,
                              progress=progress)
    return environment_section(env, lock_path)


def locked_environment(section: Any, lock_path: Any, *, progress: Progress | None = None,
                       fetch: bool = False) -> Environment | None:
    """The environment a lock pins — its ``environment`` section, the pylock beside
    ``lock_path`` digest-checked —; with ``fetch`` every file is also downloaded or re-hashed now,
    so a changed file fails here rather than at run time."""
    from pathlib import Path

    from skillctl.env.files import Wanted, ensure_files
    from skillctl.env.lock import environment_from_section

    if section is None:
        return None
    env = environment_from_section(section, Path(lock_path))
    if fetch:
        wanted = [Wanted(f.filename, f.url, f.sha256, f.size) for f in env.python.files] + [
            Wanted(d.filename, d.url, d.sha256, d.size) for d in env.debian
        ]
        ensure_files(wanted, progress=progress)
    return env


def run_image(skills: Sequence[Any], store: Any, base_image: str, *, lock_path: Any = None, lock_environment: Any = None,
              project_environment: Any = None, index: IndexOption = None, allow_sdist: bool = False,
              bundles: Mapping[str, Any] | None = None, ignore_requires_python: Collection[str] = (),
              progress: Progress | None = None) -> str:
    """The image ``skillctl run`` starts for ``skills``: with a lock (its ``environment``
    section, the pylock beside ``lock_path``), exactly its environment; otherwise what the skills
    declare plus the project's ``environment:`` section (``project_environment``, for a run in a
    project without a lock), resolved and built on first use, cached after. ``bundles``: the skills' contents
    the run already verified (``runtime.loader.fetch_bundles``), by digest, so no bundle is
    fetched twice. ``ignore_requires_python``: skills whose ``requires-python`` is not held
    against the image (the run's option, the lock's record, skills.yaml's list)."""
    from skillctl.env.declare import Declarations, project_declarations

    locked = locked_environment(lock_environment, lock_path) if lock_path is not None else None
    project = project_declarations(project_environment) if project_environment is not None and locked is None else Declarations()
    if not skills and locked is None and project.empty:
        return base_image
    return environment_image(skills, store, base_image=base_image, project=project, locked=locked, index=index,
                             allow_sdist=allow_sdist, bundles=bundles, ignore_requires_python=ignore_requires_python,
                             progress=progress)
