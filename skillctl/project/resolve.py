"""From ``skills.yaml`` to ``skills.lock``, the way package managers people know do it.

``lock_project`` keeps every pin the file still allows — a version inside its range, a git
commit of an unchanged ref, a folder whose files have not changed — and resolves only what is new
or no longer allowed (``uv lock``, ``cargo``): locking an unchanged project changes nothing.
``upgrade`` names the skills to move to the newest their entries allow (``update NAME``; True:
all, ``lock --upgrade``). Every change is a ``Move`` the commands print: ``tally 1.0.0 -> 1.1.0``.

Under a trust policy every pin passes the gate before the lock is written: registry versions are
fetched, their signatures verified and audited; a git or folder skill cannot carry a signature,
so a policy that requires signatures refuses it unless ``allow_unsigned`` (``--allow-local-skills``
for folders, the same for git), and the audit threshold still applies.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from skillctl.errors import LockError, SkillctlError, TrustError
from skillctl.project.lock import Lock, LockedSkill
from skillctl.project.sources import ProjectSources, source_record
from skillctl.project.spec import Entry, Project
from skillctl.protocols import RECORD_LOCKS, ResolvedSkill, SourceSpec
from skillctl.versioning import SemVer, parse_range

if TYPE_CHECKING:
    from skillctl.trust.enforce import Gate

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Move:
    """One skill's change in the lock: added (``old`` None), removed (``new`` None) or moved."""

    name: str
    old: LockedSkill | None
    new: LockedSkill | None

    def line(self) -> str:
        if self.old is None and self.new is not None:
            return f"added {self.new.label()}"
        if self.new is None and self.old is not None:
            return f"removed {self.old.label()}"
        assert self.old is not None and self.new is not None
        return f"{self.name} {_short(self.old)} -> {_short(self.new)}"

    def to_dict(self) -> dict[str, str | None]:
        return {"name": self.name, "old": _short(self.old) if self.old else None, "new": _short(self.new) if self.new else None}


def version_label(kind: str, version: str, revision: str, tar_digest: str) -> str:
    """``1.1.0``; a git skill by its commit (and version, when it has one); a folder by digest."""
    if kind == "git":
        return f"{version} ({revision[:7]})" if version else revision[:7]
    if kind == "path":
        return f"{version} ({tar_digest[7:19]})" if version else tar_digest[7:19]
    return version


def _short(skill: LockedSkill) -> str:
    return version_label(skill.kind, skill.version, skill.revision, skill.tar_digest)


def still_allowed(entry: Entry, spec: SourceSpec, record: dict[str, str], old: LockedSkill, *, prereleases: bool) -> bool:
    """Whether ``old`` still satisfies ``entry``: the same source, and inside its range (a
    registry), of the same ref (git). A folder's pin, and an MCP server's, is never kept without looking at it."""
    if old.kind == "path" or not _same_source(old.source, record):
        return False
    if old.manifest:  # an MCP server serves one version whose files may change: ask it again (same files: same pin)
        return False
    if old.kind == "registry":
        try:
            return parse_range(entry.version).matches(SemVer.parse(old.version), prereleases=prereleases)
        except SkillctlError:
            return False
    return True  # git: the ref and folder are the same (part of the record); the commit stays


def _same_source(old: dict[str, str], new: dict[str, str]) -> bool:
    """A lock written before sources were recorded (format 1) names no registry URL: its skills
    came from the default registry, whichever it is."""
    if old.get("kind") == "registry" and not old.get("url"):
        return new.get("kind") == "registry" and new.get("registry") == old.get("registry")
    return old == new


def _upgrading(name: str, upgrade: Collection[str] | bool) -> bool:
    return upgrade is True or (not isinstance(upgrade, bool) and name in upgrade)


def lock_project(
    project: Project,
    sources: ProjectSources,
    previous: Lock | None = None,
    *,
    upgrade: Collection[str] | bool = False,
    registry_override: str | None = None,
    insecure: bool = False,
    gate: "Gate | None" = None,
    allow_unsigned: bool = False,
    progress: Progress | None = None,
) -> tuple[Lock, list[Move]]:
    """The lock for ``project`` and how it differs from ``previous``."""
    if not isinstance(upgrade, bool):
        unknown = sorted(set(upgrade) - set(project.entries))
        if unknown:
            raise LockError(f"{project.path}: no skill named {', '.join(unknown)} (declared: {', '.join(sorted(project.entries)) or 'none'})")
    old_by_name = previous.by_name() if previous is not None else {}
    locked: list[LockedSkill] = []
    for name in sorted(project.entries):
        entry = project.entries[name]
        spec = project.source_spec(entry, registry_override=registry_override, insecure=insecure)
        record = source_record(entry, spec)
        old = old_by_name.get(name)
        if old is not None and not _upgrading(name, upgrade) and still_allowed(entry, spec, record, old, prereleases=project.prereleases):
            locked.append(replace(old, requested=entry.requested, source=record))
            continue
        pin = sources.get(spec.kind).resolve(spec, prereleases=project.prereleases)
        if pin.name != name:
            raise LockError(f"{project.path}: skills.{name} resolved to a skill named {pin.name!r}; "
                                f"the entry's name must be the skill's name")
        new = LockedSkill.from_pin(pin, requested=entry.requested, source=record)
        if old is not None and (old.tar_digest, old.revision, old.version) == (new.tar_digest, new.revision, new.version):
            new = replace(new, signer=old.signer)
        locked.append(new)
        if progress:
            was = f" (was {_short(old)})" if old is not None and _short(old) != _short(new) else ""
            progress(f"locked {name} {entry.requested} -> {_short(new)}{was}")
    signers = check_pins(locked, sources, gate, allow_unsigned=allow_unsigned) if gate is not None else {}
    if signers:
        locked = [_with_signer(s, signers.get(s.name)) for s in locked]
    for skill in locked:
        # Registries that can remove versions must know which ones a lock pins; the others
        # (read-only, OCI) cannot remove them either, so there is nothing to protect.
        if skill.kind == "registry":
            reg = sources.registry(skill.source["url"])
            if RECORD_LOCKS in reg.capabilities:
                reg.mark_locked(sources.registry_record(skill.pin()))
    trust = {"keys": gate.key_ids()} if gate is not None else None
    lock = Lock(project.requirements_doc(), tuple(locked), trust=trust)
    return lock, moves_between(previous, lock)


def _with_signer(skill: LockedSkill, signer: str | None) -> LockedSkill:
    return replace(skill, signer=signer)


def moves_between(previous: Lock | None, lock: Lock) -> list[Move]:
    old = previous.by_name() if previous is not None else {}
    new = lock.by_name()
    moves = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a is None or b is None or (a.tar_digest, a.revision, a.version, a.digest) != (b.tar_digest, b.revision, b.version, b.digest):
            moves.append(Move(name, a, b))
    return moves


def check_pins(skills: Sequence[LockedSkill], sources: ProjectSources, gate: "Gate", *, allow_unsigned: bool,
               locked_signers: dict[str, str | None] | None = None,
               url_of: Callable[[LockedSkill], str] | None = None) -> dict[str, str | None]:
    """Every pin through the trust ``gate`` (``skillctl.trust.enforce.Gate``): registry versions
    by their signatures and audit, git and folder skills by the audit alone when unsigned skills
    are allowed; their signers by name, or one TrustError naming every refused skill.
    ``locked_signers``: a lock's signer per skill, which must still have signed it; ``url_of``:
    where a registry skill's registry is now (default: the URL its source records)."""
    from skillctl.bundle import repack
    from skillctl.trust.enforce import refused

    signers: dict[str, str | None] = {}
    by_registry: dict[str, list[ResolvedSkill]] = {}
    problems: list[str] = []
    for skill in skills:
        if skill.kind == "registry":
            url = url_of(skill) if url_of is not None else skill.source["url"]
            try:
                by_registry.setdefault(url, []).append(sources.registry_record(skill.pin(url)))
            except SkillctlError as exc:
                problems.append(str(exc))
            continue
        if gate.requires_signatures and not allow_unsigned:
            problems.append(f"{skill.label()} comes from a {skill.kind} source, which cannot carry a signature, and the policy "
                            "requires signatures; publish and sign it in a registry, or pass --allow-local-skills "
                            "(the audit threshold still applies)")
            continue
        try:
            contents = sources.get(skill.kind).fetch(skill.pin())
            data = repack(contents).data
            gate.for_folders().check(skill.as_resolved(), data, [])
            signers[skill.name] = None
        except (TrustError, SkillctlError) as exc:
            problems.append(str(exc).removeprefix("refused by the trust policy: "))
    for url, resolved in by_registry.items():
        try:
            signers.update(gate.check_all(sources.registry(url), resolved, locked_signers))
        except TrustError as exc:
            problems.append(str(exc).removeprefix("refused by the trust policy: "))
    if problems:
        raise refused(problems)
    return signers
