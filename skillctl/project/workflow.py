"""The project workflow as library calls: what ``lock``, ``install``, ``sync``, ``add``,
``remove``, ``update`` and ``outdated`` do, without click.

A ``Workspace`` is one command's view of a project: its ``skills.yaml`` and ``skills.lock``, the
sources it reads (opened once, closed with it) and how to reach them. Every call checks before it
writes: a lock is written only once every skill resolved and passed the trust policy; target
folders only once every skill was fetched and checked.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillctl.errors import LockError
from skillctl.fsutil import write_atomic
from skillctl.project.lock import Lock, read_lock
from skillctl.project.resolve import Move, check_pins, lock_project
from skillctl.project.sources import ProjectSources, locked_registry_url
from skillctl.project.spec import Project, load_project
from skillctl.project.store import ProjectStore
from skillctl.project.sync import SyncReport, sync_targets
from skillctl.protocols import RegistryReader

if TYPE_CHECKING:
    from skillctl.project.agents import Target
    from skillctl.trust.enforce import Gate

Progress = Callable[[str], None]


@dataclass(frozen=True)
class EnvOptions:
    """How a lock's environment is resolved (``skillctl.env``): the package index, sdists, and
    the agent image whose Python it is for (default: the one ``skillctl image build`` makes)."""

    index: Any = None  # a URL, or skillctl.env.resolve.Indexes (with extra indexes)
    allow_sdist: bool = False
    image: str | None = None
    # --ignore-requires-python: recorded in the lock, with skills.yaml's own list
    ignore_requires_python: tuple[str, ...] = ()


class Workspace:
    def __init__(self, requirements: Path, lock_path: Path, *, registry_override: str | None = None,
                 registry_opener: Callable[[str], RegistryReader] | None = None, insecure: bool = False,
                 git_token: str | None = None, allow_unsigned: bool = False, progress: Progress | None = None) -> None:
        self.requirements = requirements
        self.lock_path = lock_path
        self.registry_override = registry_override
        self.insecure = insecure
        self.allow_unsigned = allow_unsigned
        self.progress = progress
        git_options: dict[str, Any] = {"insecure": insecure, "progress": progress, "cache_dir": git_cache()}
        if git_token:
            git_options["token"] = git_token
        self.sources = ProjectSources(Path(os.path.abspath(requirements)).parent, registry_opener=registry_opener, git_options=git_options)
        self._project: Project | None = None

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc: object) -> None:
        self.sources.close()

    # ------------------------------------------------------------------ files

    @property
    def project(self) -> Project:
        if self._project is None:
            self._project = load_project(self.requirements)
        return self._project

    @property
    def has_project(self) -> bool:
        return self.requirements.exists()

    def previous(self) -> Lock | None:
        return read_lock(self.lock_path) if self.lock_path.exists() else None

    def forget_project(self) -> None:
        """Read skills.yaml again next time (after an edit)."""
        self._project = None

    # ------------------------------------------------------------------ lock

    def gate(self) -> "Gate | None":
        from skillctl.trust.enforce import gate_for_trust

        return gate_for_trust(self.project.trust, self.project.root, where=str(self.requirements), progress=self.progress)

    def lock(self, *, upgrade: Collection[str] | bool = False, env: EnvOptions | None = None,
             previous: Lock | None = None) -> tuple[Lock, list[Move]]:
        """Lock the project (keeping the pins it still allows), resolve its environment, and
        write skills.lock; the lock and its moves. ``previous`` defaults to the lock on disk."""
        previous = previous if previous is not None else self.previous()
        lock, moves = lock_project(self.project, self.sources, previous, upgrade=upgrade,
                                   registry_override=self.registry_override, insecure=self.insecure, gate=self.gate(),
                                   allow_unsigned=self.allow_unsigned, progress=self.progress)
        if self.allow_unsigned and lock.trust is not None:
            lock = dataclasses.replace(lock, trust={**lock.trust, "allow_unsigned": True})
        lock = self._with_environment(lock, env or EnvOptions(), None if upgrade else previous)
        write_atomic(self.lock_path, lock.to_json())
        return lock, moves

    def _with_environment(self, lock: Lock, env: EnvOptions, previous: Lock | None) -> Lock:
        """The lock plus its resolved environment (pylock written beside it), when anything is
        declared; an unchanged lock keeps the environment it had. The skills whose
        ``requires-python`` is ignored (skills.yaml's list and ``env``'s) are recorded, for the
        skills the lock holds."""
        from skillctl.env.declare import ignored_requires_python
        from skillctl.env.prepare import declarations_of, lock_environment

        names = {s.name for s in lock.skills}
        wanted = ignored_requires_python(self.project.environment, str(self.requirements)) + env.ignore_requires_python
        unknown = sorted(set(wanted) - names)
        if unknown and self.progress is not None:
            self.progress(f"warning: --ignore-requires-python {', '.join(unknown)}: not a skill of this lock; nothing to ignore")
        lock = dataclasses.replace(lock, ignore_requires_python=tuple(sorted(set(wanted) & names)))
        if previous is not None and previous.environment is not None and _same_pins(previous, lock) \
                and previous.ignore_requires_python == lock.ignore_requires_python:
            return dataclasses.replace(lock, environment=previous.environment)
        store = self.store(lock)
        skills = store.locked()
        decl = declarations_of(skills, store)
        if not self.project.environment and decl.empty and not decl.requires_python:
            return lock
        from skillctl.sandbox.image import ensure_image

        base = env.image or ensure_image(progress=self.progress)
        section = lock_environment(skills, store, self.project.environment, self.lock_path, base_image=base, index=env.index,
                                   allow_sdist=env.allow_sdist, ignore_requires_python=lock.ignore_requires_python,
                                   progress=self.progress)
        return dataclasses.replace(lock, environment=section)

    # ------------------------------------------------------------------ reading a lock

    def frozen(self) -> Lock:
        """The lock as it is, refused when missing or when skills.yaml (if any) asks for more."""
        if not self.lock_path.exists():
            raise LockError(f"--frozen: {self.lock_path} does not exist; run skillctl lock first")
        lock = read_lock(self.lock_path)
        if self.has_project and lock.is_stale(self.project.requirements_doc()):
            raise LockError(f"--frozen: {self.lock_path} is stale ({self.requirements} changed since it was written); "
                            "run skillctl lock")
        return lock

    def current(self, *, env: EnvOptions | None = None) -> tuple[Lock, list[Move]]:
        """The lock, written first when missing or stale (as ``install`` without --frozen)."""
        previous = self.previous()
        if previous is not None and (not self.has_project or not previous.is_stale(self.project.requirements_doc())):
            return previous, []
        made = self.lock(env=env, previous=previous)
        if self.progress:  # said once it is done: a failure is then the only line
            self.progress(f"{'created' if previous is None else 'updated stale'} {self.lock_path}")
        return made

    def store(self, lock: Lock) -> ProjectStore:
        project = self.project if self.has_project else None
        urls = {s.name: locked_registry_url(s.source, project, self.registry_override) for s in lock.skills if s.kind == "registry"}
        return ProjectStore(lock, self.sources, urls=urls)

    def check_trust(self, lock: Lock, store: ProjectStore) -> None:
        """The policy the lock was written with, on every locked skill (signers as recorded)."""
        current = self.project.trust if self.has_project else ...
        if lock.trust_section is None and current in (None, ...):
            return  # no policy then or now (the keys and checks cost nothing to skip)
        from skillctl.trust.enforce import lock_gate

        where = str(self.requirements if self.has_project else self.lock_path)
        gate = lock_gate(lock.trust_section, (lock.trust or {}).get("keys", {}), Path(os.path.abspath(self.lock_path)).parent, where=where,
                         progress=self.progress, current_trust=current)
        if gate is not None:
            allow = self.allow_unsigned or bool((lock.trust or {}).get("allow_unsigned"))
            check_pins(lock.skills, self.sources, gate, allow_unsigned=allow,
                       locked_signers={s.name: s.signer for s in lock.skills}, url_of=store.url_of)

    # ------------------------------------------------------------------ targets

    def target_folders(self, agents: Sequence[str] = (), *, user: bool = False, out: Path | None = None,
                       environ: Mapping[str, str] | None = None) -> list["Target"]:
        """Where skills go: ``out`` when given; else the folders of ``agents`` (else the project's
        ``targets:``), at project or user scope; else ``.agents/skills`` (``~/.agents/skills``
        with ``user``)."""
        from skillctl.project.agents import Target, target_folders

        if out is not None:
            return [Target(out, (), None)]
        root = Path(os.path.abspath(self.requirements)).parent
        names = list(agents) or (list(self.project.targets) if self.has_project else [])
        return target_folders(names, user=user, project_root=root, environ=environ if environ is not None else os.environ)

    def sync(self, lock: Lock, targets: Sequence["Target"], *, remove: bool, force: bool = False, link: bool = False,
             dry_run: bool = False, env_fetch: bool = True) -> SyncReport:
        """Check the lock's policy and environment, then make ``targets`` hold the lock."""
        store = self.store(lock)
        self.check_trust(lock, store)
        if env_fetch and not dry_run and lock.environment is not None:
            from skillctl.env.prepare import locked_environment

            locked_environment(lock.environment, self.lock_path, progress=self.progress, fetch=True)
        link_store = Path(os.path.abspath(self.requirements)).parent / ".skillctl" / "store" if link else None
        return sync_targets(lock, store, targets, remove=remove, force=force, link_store=link_store, dry_run=dry_run,
                            progress=self.progress)


def git_cache() -> Path:
    """Where fetched repositories are kept between commands (``update`` and ``outdated`` then
    fetch only what is new): the user's cache folder; ``SKILLCTL_GIT_CACHE`` moves it."""
    from platformdirs import user_cache_dir

    return Path(os.environ.get("SKILLCTL_GIT_CACHE") or Path(user_cache_dir("skillctl")) / "git")


def _same_pins(a: Lock, b: Lock) -> bool:
    key = lambda lock: sorted((s.name, s.tar_digest, s.revision, s.version) for s in lock.skills)  # noqa: E731
    return key(a) == key(b) and a.environment_section == b.environment_section
