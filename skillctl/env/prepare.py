"""From skills to an image: collect → resolve → fetch (verified) → build, as one call.

``run_environment`` is what a run calls: given the skills it loads (and, optionally, the
project's declarations or a lock's environment), it returns the image to start — the agent image
itself when nothing is declared, otherwise the environment image, built on first use and reused
after that — and the skills in it that have a venv of their own. Every step reports progress
through one callback.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillctl.env.declare import PROJECT, Declarations, Isolation, skill_declarations
from skillctl.env.resolve import (Downgrade, IndexOption, PackageFile, Resolution, check_requires_python, downgrades,
                                  python_owners, resolve, uv_binary, uv_version)
from skillctl.env.target import Target, inspect_image, probe_image
from skillctl.errors import EnvError

Progress = Callable[[str], None]
ISOLATED_ROOT = "/opt/skill-envs"  # /opt/skill-envs/<skill>: the venv of a skill isolated from the merge
ISOLATE_HINT = ("to give a skill its packages as alone, isolate it: environment: isolate: [SKILL] in skills.yaml, "
                "or skillctl run --isolate-env SKILL")


@dataclass(frozen=True)
class Isolated:
    """A skill's own resolution, installed in its own venv instead of the shared one."""

    skill: str
    python: Resolution

    @property
    def venv(self) -> str:
        return f"{ISOLATED_ROOT}/{self.skill}"

    def to_dict(self) -> dict[str, Any]:
        return {"skill": self.skill, "venv": self.venv, "python": [f.to_dict() for f in self.python.files]}


@dataclass(frozen=True)
class Environment:
    """A resolved environment: what was declared, for which target, and every pinned file;
    ``isolated``: skills with a venv of their own (their requirements are not in ``python``);
    ``downgrades``: what the shared resolution holds below a skill's own."""

    declarations: Declarations
    python: Resolution
    debian: tuple[Any, ...] = ()  # skillctl.env.debian.DebianPackage
    isolated: tuple[Isolated, ...] = ()
    downgrades: tuple[Downgrade, ...] = ()

    @property
    def target(self) -> Target:
        return self.python.target

    @property
    def empty(self) -> bool:
        return not self.python.files and not self.debian and not any(i.python.files for i in self.isolated)

    @property
    def isolated_skills(self) -> tuple[str, ...]:
        return tuple(i.skill for i in self.isolated)

    def all_files(self) -> list[PackageFile]:
        return list(self.python.files) + [f for i in self.isolated for f in i.python.files]

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
            "isolated": [i.to_dict() for i in self.isolated],
            "downgrades": [d.to_dict() for d in self.downgrades],
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


def declarations_of(skills: Sequence[Any], store: Any, bundles: Mapping[str, Any] | None = None,
                    imports: list[Any] | None = None) -> Declarations:
    """What each skill declares, read from its verified bundle: from ``bundles`` (contents a
    run already fetched and verified, by digest) when there, else fetched now (``store.fetch``
    checks the digest; ``read_artifact`` checks the archive, whatever its type). Given
    ``imports`` (a list), each skill's third-party imports are appended to it as (skill name,
    ``imports.Choice``), for ``check_environment``."""
    from skillctl.bundle import read_artifact

    total = Declarations()
    for skill in skills:
        contents = (bundles or {}).get(skill.digest)
        if contents is None:
            contents = read_artifact(store.fetch(skill), skill.artifact_type, expected_name=skill.name,
                                     source=f"{skill.name}@{skill.version}")
        files = contents.files
        declared = skill_declarations(skill.name, list(files), lambda rel: bytes(files[rel]))
        total = total + declared
        if imports is not None:
            imports += skill_imports(skill.name, list(files), lambda rel: bytes(files[rel]), declared)
    return total


def skill_imports(owner: str, paths: list[str], read: Callable[[str], bytes], declared: Declarations) -> list[Any]:
    from skillctl.env.imports import choices_of

    return [(owner, c) for c in choices_of(paths, read, [d.name for d in declared.python])]


def check_environment(env: Environment, imports: Sequence[Any], *, download: bool = False,
                      progress: Progress | None = None) -> list[Any]:
    """The skills' imports (``(owner, Choice)``) checked against what the environment's wheels
    provide (``provides.check_imports``): a list of ``ImportCheck``, each also reported as a
    ``warning:`` line through ``progress``. The wheels' file lists come from the cache, else
    from Range requests, else (``download``) from full hash-checked downloads."""
    if not imports:
        return []
    from skillctl.env.provides import check_imports, wheel_provides

    # An isolated skill's imports are checked against its own venv's wheels, the others' against
    # the shared ones.
    own = {i.skill: i.python.files for i in env.isolated}
    groups = [(env.python.files, [im for im in imports if im[0] not in own])]
    groups += [(files, [im for im in imports if im[0] == skill]) for skill, files in own.items()]
    found = []
    for files, part in groups:
        if files and part:
            provided = wheel_provides(files, download=download, progress=progress)
            found += check_imports(part, provided, env.target.marker_environment())
    for check in found:
        (progress or (lambda _line: None))(f"warning: {check.message}")
    return found


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
    isolation: Isolation = Isolation(),
) -> Environment:
    """Resolve ``decl``: the skills ``isolation`` names (and, with ``auto``, every skill the
    merge would downgrade) each alone, for a venv of its own; everything else together. Every
    package the shared resolution still holds below a skill's own is reported (a warning
    through ``progress``) and kept in ``Environment.downgrades``."""
    say = progress or (lambda _line: None)
    builder = None
    if allow_sdist:
        from skillctl.env.resolve import invocation_indexes
        from skillctl.env.sdist import SdistBuilder

        builder = SdistBuilder(client, base_image, target, invocation_indexes(decl, index), progress=progress)
    with_python = python_owners(decl, target)
    skills_of_run = set(decl.scripts) | set(decl.owners())
    for name in isolation.required:
        if name not in skills_of_run:
            raise EnvError(f"--isolate-env {name}: {name} is not a skill of this run; name one of "
                           f"{', '.join(sorted(skills_of_run - {PROJECT})) or '(none)'}")
    chosen = [name for name in isolation.named if name in with_python and name != PROJECT]
    for name in isolation.named:
        if name not in chosen and name in skills_of_run:
            say(f"environment: {name} declares no Python requirements; nothing to isolate")

    def together(part: Declarations) -> Resolution:
        return resolve(part, target, index=index, allow_sdist=allow_sdist, builder=builder, refresh=refresh,
                       ignore_requires_python=ignore_requires_python, progress=progress)

    def held_back(part: Declarations, merged: Resolution) -> tuple[Downgrade, ...]:
        return downgrades(part, merged, target, index=index, allow_sdist=allow_sdist, builder=builder, refresh=refresh,
                          ignore_requires_python=ignore_requires_python, progress=progress)

    python: Resolution | None = None
    found: tuple[Downgrade, ...] = ()
    if isolation.auto:  # merged without the skills named: who else does it hold back?
        first = _without_python_of(decl, set(chosen))
        python = together(first)
        found = held_back(first, python)
        more = [name for name in dict.fromkeys(d.skill for d in found) if name not in chosen]
        if more:
            say(f"environment: isolate: auto gives {', '.join(more)} an environment of its own")
            chosen, python = chosen + more, None
    if python is None:
        shared = _without_python_of(decl, set(chosen))
        python = together(shared)
        found = held_back(shared, python)
    isolated = tuple(Isolated(name, together(decl.for_owners([name]))) for name in sorted(chosen))
    for d in found:
        say(f"warning: {d.message()}")
    if found:
        say(f"warning: {ISOLATE_HINT}")
    debian: tuple[Any, ...] = ()
    if decl.debian:
        from skillctl.env.debian import resolve_debian

        debian = tuple(resolve_debian(sorted({d.requirement for d in decl.debian}), target, client=client,
                                      base_image=base_image, refresh=refresh, progress=progress))
    return Environment(decl, python, debian, isolated, found)


def _without_python_of(decl: Declarations, owners: set[str]) -> Declarations:
    """``decl`` without the Python requirements of ``owners`` (their Debian packages and
    requires-python stay: the image and its interpreter are shared)."""
    return dataclasses.replace(decl, python=tuple(d for d in decl.python if d.owner not in owners))


def build_environment(env: Environment, client: Any, base_image: str, *, progress: Progress | None = None,
                      force: bool = False, agent: Any = None) -> str:
    """The environment image's tag: found by the environment's hash when it exists, otherwise
    every file is fetched (hash-checked) and the image built. ``agent``: ``base_image`` already
    inspected (``build.agent_image``), when the caller has it."""
    from skillctl.env.build import ENV_REPO, EnvFile, IsolatedFiles, agent_image, build_env_image, cached_env_image, env_hash
    from skillctl.env.files import Wanted, ensure_files

    if env.empty:
        return base_image
    say = progress or (lambda _line: None)
    uv = uv_binary()
    pairs = [(f.filename, f.sha256) for f in env.python.files]
    deb_pairs = [(d.filename, d.sha256) for d in env.debian]
    iso_pairs = {i.skill: [(f.filename, f.sha256) for f in i.python.files] for i in env.isolated}
    base = agent if agent is not None else agent_image(client, base_image)
    digest = env_hash(base.id, pairs, deb_pairs, uv_version(uv), iso_pairs)
    found = None if force else cached_env_image(client, digest)
    if found is not None:
        tag = f"{ENV_REPO}:{digest[:12]}"
        say(f"environment image {tag} is up to date")
        return _libraries_checked(tag, env, client, say, image_id=found.id)
    debs = [EnvFile(p, d.sha256, d.pin) for p, d in
            zip(ensure_files([Wanted(d.filename, d.url, d.sha256, d.size) for d in env.debian], progress=progress),
                env.debian)]
    builder = None
    if env.python.sdists or any(i.python.sdists for i in env.isolated):
        # A lock made with --allow-sdist pins the sdists; their wheels are built (or were built)
        # here, in containers, from those hash-checked files.
        from skillctl.env.sdist import SdistBuilder

        builder = SdistBuilder(client, base_image, env.target, env.python.index_list(), progress=progress)
    wheels = _wheel_files(env.python, builder, progress)
    isolated = [IsolatedFiles(i.skill, i.venv, _wheel_files(i.python, builder, progress)) for i in env.isolated]
    tag = build_env_image(client, base, digest, wheels, debs, uv_bin=uv, progress=progress, force=force,
                          isolated=isolated, uv=uv_version(uv))
    return _libraries_checked(tag, env, client, say)


def _wheel_files(python: Resolution, builder: Any, progress: Progress | None) -> list[Any]:
    """The verified local wheels of ``python``: fetched (hash-checked), sdists built by ``builder``."""
    from skillctl.env.build import EnvFile
    from skillctl.env.files import Wanted, ensure_files

    paths = ensure_files([Wanted(f.filename, f.url, f.sha256, f.size) for f in python.wheels], progress=progress)
    wheels = [EnvFile(p, f.sha256, f.pin) for p, f in zip(paths, python.wheels)]
    for sdist in python.sdists:
        path, sha = builder.wheel_for(sdist)
        wheels.append(EnvFile(path, sha, sdist.pin))
    return wheels


def _libraries_checked(tag: str, env: Environment, client: Any, say: Progress, image_id: str | None = None) -> str:
    """``tag``, once the libraries its wheels need are checked in it: a missing one is a warning
    naming the Debian package that ships it (``skillctl.env.syslibs``; cached by image id)."""
    from skillctl.env.syslibs import environment_check, warn

    warn(environment_check(client, tag, env, progress=say, image_id=image_id), say)
    return tag


def existing_environment_image(env: Environment, client: Any, base_image: str) -> str | None:
    """The tag of the image already built for ``env`` on ``base_image``, or None."""
    from skillctl.env.build import env_hash, existing_env_image

    if env.empty:
        return None
    uv = uv_version(uv_binary())
    pairs = [(f.filename, f.sha256) for f in env.python.files]
    deb_pairs = [(d.filename, d.sha256) for d in env.debian]
    iso_pairs = {i.skill: [(f.filename, f.sha256) for f in i.python.files] for i in env.isolated}
    return existing_env_image(client, base_image, lambda base_id: env_hash(base_id, pairs, deb_pairs, uv, iso_pairs),
                              False)[2]


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


def environment_image(skills: Sequence[Any], store: Any, **options: Any) -> str:
    """``run_environment_of``'s image: what a run with ``skills`` should start."""
    return run_environment_of(skills, store, **options).image


def run_environment_of(
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
    isolation: Isolation = Isolation(),
) -> "RunEnvironment":
    """The image a run with ``skills`` should start: ``base_image`` when nothing is declared,
    else the environment image (resolved, fetched and built only when not cached), with the
    skills that have a venv of their own.

    With ``locked`` (a lock's environment) nothing is resolved: the locked files are used
    exactly, and a skill that needs something the lock lacks is refused.

    A skill's ``requires-python`` is held against the image's Python whether or not it declares
    anything else (one rule), except for the skills in ``ignore_requires_python``.
    """
    from skillctl.sandbox.client import docker_client

    say = progress or (lambda _line: None)
    imports: list[Any] = []
    decl = declarations_of(skills, store, bundles, imports) + (project or Declarations())
    if locked is None and decl.empty and not decl.requires_python:
        return RunEnvironment(base_image)
    not_locked = [s for s in isolation.required if locked is not None and s not in locked.isolated_skills]
    if not_locked:
        raise EnvError(
            f"the lock gives no environment of its own to {', '.join(not_locked)}; add it to skills.yaml "
            "environment: isolate: [...] and run skillctl lock (with --lock, the lock decides)"
        )
    client = client or docker_client()
    agent = inspect_image(client, base_image)  # once: the probe and the image's hash both need its id
    target = probe_image(client, base_image, image_id=agent.id)
    check_requires_python(decl, target, ignore_requires_python, say)
    if locked is None and decl.empty:
        return RunEnvironment(base_image)
    if locked is not None:
        if locked.target != target:
            raise EnvError(
                f"the lock's environment was resolved for Python {locked.target.python} on {locked.target.uv_platform}, "
                f"but the agent image has Python {target.python} on {target.uv_platform}; run skillctl lock again"
            )
        missing = covers(locked.python.files, _without_python_of(decl, set(locked.isolated_skills)), target)
        for iso in locked.isolated:
            missing += covers(iso.python.files, decl.for_owners([iso.skill]), target)
        lacking_debs = {d.requirement for d in decl.debian} - {p.package for p in locked.debian}
        if missing or lacking_debs:
            raise EnvError(
                f"the lock's environment does not provide {', '.join(missing + sorted(lacking_debs))}; add the skill "
                "to skills.yaml and run skillctl lock"
            )
        env = locked
        for d in locked.downgrades:
            say(f"warning: {d.message()}")
    else:
        say(f"environment: {len(decl.python)} Python requirement(s), {len(decl.debian)} Debian package(s) "
            f"declared by {', '.join(decl.owners())}")
        env = resolve_environment(decl, target, index=index, allow_sdist=allow_sdist, base_image=base_image,
                                  client=client, ignore_requires_python=ignore_requires_python, progress=progress,
                                  isolation=isolation)
    tag = build_environment(env, client, base_image, progress=progress, agent=agent)
    check_environment(env, imports, progress=progress)  # after the build: its wheels are in the cache
    return RunEnvironment(tag, env.isolated_skills, env.downgrades)


@dataclass(frozen=True)
class RunEnvironment:
    """What a run starts: the image, and the skills in it with a venv of their own."""

    image: str
    isolated: tuple[str, ...] = ()
    downgrades: tuple[Downgrade, ...] = ()


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
    from skillctl.env.declare import project_declarations, project_isolation
    from skillctl.env.lock import environment_section
    from skillctl.sandbox.client import docker_client

    imports: list[Any] = []
    decl = declarations_of(sorted(skills, key=lambda s: s.name), store, imports=imports) + project_declarations(project_environment)
    if decl.empty and not decl.requires_python:
        return None
    client = client or docker_client()
    target = probe_image(client, base_image)
    check_requires_python(decl, target, ignore_requires_python, progress)
    if decl.empty:
        return None
    env = resolve_environment(decl, target, index=index, allow_sdist=allow_sdist, refresh=True,
                              base_image=base_image, client=client, ignore_requires_python=ignore_requires_python,
                              progress=progress, isolation=project_isolation(project_environment))
    check_environment(env, imports, progress=progress)
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
        wanted = [Wanted(f.filename, f.url, f.sha256, f.size) for f in env.all_files()] + [
            Wanted(d.filename, d.url, d.sha256, d.size) for d in env.debian
        ]
        ensure_files(wanted, progress=progress)
    return env


def run_image(skills: Sequence[Any], store: Any, base_image: str, **options: Any) -> str:
    """``run_environment``'s image."""
    return run_environment(skills, store, base_image, **options).image


def run_environment(skills: Sequence[Any], store: Any, base_image: str, *, lock_path: Any = None,
                    lock_environment: Any = None, project_environment: Any = None, index: IndexOption = None,
                    allow_sdist: bool = False, bundles: Mapping[str, Any] | None = None,
                    ignore_requires_python: Collection[str] = (), progress: Progress | None = None,
                    isolate: Sequence[str] = ()) -> RunEnvironment:
    """The image ``skillctl run`` starts for ``skills``: with a lock (its ``environment``
    section, the pylock beside ``lock_path``), exactly its environment; otherwise what the skills
    declare plus the project's ``environment:`` section (``project_environment``, for a run in a
    project without a lock), resolved and built on first use, cached after. ``bundles``: the skills' contents
    the run already verified (``runtime.loader.fetch_bundles``), by digest, so no bundle is
    fetched twice. ``ignore_requires_python``: skills whose ``requires-python`` is not held
    against the image (the run's option, the lock's record, skills.yaml's list). ``isolate``:
    skills to give a venv of their own for this run (``--isolate-env``), beside those
    skills.yaml's ``environment.isolate`` names."""
    from skillctl.env.declare import Declarations, project_declarations, project_isolation

    locked = locked_environment(lock_environment, lock_path) if lock_path is not None else None
    project = project_declarations(project_environment) if project_environment is not None and locked is None else Declarations()
    isolation = Isolation(required=tuple(isolate))
    if project_environment is not None and locked is None:
        isolation = project_isolation(project_environment) + isolation
    if not skills and locked is None and project.empty:
        return RunEnvironment(base_image)
    return run_environment_of(skills, store, base_image=base_image, project=project, locked=locked, index=index,
                              allow_sdist=allow_sdist, bundles=bundles, ignore_requires_python=ignore_requires_python,
                              progress=progress, isolation=isolation)
